import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/**
 * Java's answer to "does this whole name match this regex", as Cruise Control asks it (Pattern.matches).
 * Input: blocks of a regex line, then names, then an empty line. Output: one line per name, "1" or "0".
 */
public final class RegexMatches {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        Pattern pattern = null;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isEmpty()) {
                pattern = null;
            } else if (pattern == null) {
                pattern = Pattern.compile(line);
            } else {
                out.append(pattern.matcher(line).matches() ? "1\n" : "0\n");
            }
        }
        System.out.print(out);
    }
}
