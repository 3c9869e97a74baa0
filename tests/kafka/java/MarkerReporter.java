package io.ballast.test;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;

/**
 * A metrics reporter loaded the way Cruise Control's is: from a jar `ballast up --broker-classpath` put on the
 * brokers' classpath, named and configured by `--broker-config` settings. It writes a file per broker: the setting
 * ballast.test.marker it was given, and the resource ballast-marker.txt it found on the classpath.
 */
public class MarkerReporter implements MetricsReporter {
    @Override
    public void configure(Map<String, ?> configs) {
        Path out = Path.of(String.valueOf(configs.get("ballast.test.marker.dir")), "broker-" + configs.get("node.id"));
        try (InputStream resource = MarkerReporter.class.getResourceAsStream("/ballast-marker.txt")) {
            String found = resource == null ? "no resource"
                : new String(resource.readAllBytes(), StandardCharsets.UTF_8).strip();
            Files.writeString(out, configs.get("ballast.test.marker") + "\n" + found + "\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
    }
}
