package io.ballast.kafka;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Collectors;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;

/**
 * Kafka's {@link StripedReplicaPlacer} as a filter: one placement case per input line, one answer per output line.
 *
 * <pre>
 * in:  seed TAB replication factor TAB partitions TAB brokers       brokers: id|rack|fenced[|cordoned],...
 *                                                                  (rack "-": none; cordoned: every log directory)
 * out: ok TAB 1,2,3;2,3,1                                           replicas of each partition, in order
 *      error TAB exception class TAB message
 * </pre>
 *
 * <p>A broker whose every log directory is cordoned (KIP-1066) is left out of the usable brokers, as Kafka 4.3's
 * {@code ClusterControlManager.usableBrokers} leaves out a broker without an uncordoned directory before the placer
 * sees the cluster.
 */
public final class StripedPlacerHarness {

    private StripedPlacerHarness() {
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.isBlank()) {
                out.println(answer(line));
            }
        }
    }

    static String answer(String line) {
        String[] fields = line.split("\t", -1);
        long seed = Long.parseLong(fields[0]);
        short replicationFactor = Short.parseShort(fields[1]);
        int partitions = Integer.parseInt(fields[2]);
        List<UsableBroker> brokers = brokers(fields.length > 3 ? fields[3] : "");
        ClusterDescriber cluster = new ClusterDescriber() {
            @Override
            public Iterator<UsableBroker> usableBrokers() {
                return brokers.iterator();
            }

            @Override
            public Uuid defaultDir(int brokerId) {
                return Uuid.ZERO_UUID;
            }
        };
        try {
            TopicAssignment assignment = new StripedReplicaPlacer(new Random(seed))
                    .place(new PlacementSpec(0, partitions, replicationFactor), cluster);
            return "ok\t" + assignment.assignments().stream().map(StripedPlacerHarness::replicas)
                    .collect(Collectors.joining(";"));
        } catch (InvalidReplicationFactorException e) {
            return "error\t" + e.getClass().getSimpleName() + "\t" + e.getMessage();
        }
    }

    static List<UsableBroker> brokers(String field) {
        List<UsableBroker> brokers = new ArrayList<>();
        if (field.isEmpty()) {
            return brokers;
        }
        for (String broker : field.split(",")) {
            String[] parts = broker.split("\\|", -1);
            Optional<String> rack = "-".equals(parts[1]) ? Optional.empty() : Optional.of(parts[1]);
            boolean cordoned = parts.length > 3 && Boolean.parseBoolean(parts[3]);
            if (!cordoned) {
                brokers.add(new UsableBroker(Integer.parseInt(parts[0]), rack, Boolean.parseBoolean(parts[2])));
            }
        }
        return brokers;
    }

    private static String replicas(PartitionAssignment partition) {
        return partition.replicas().stream().map(String::valueOf).collect(Collectors.joining(","));
    }
}
