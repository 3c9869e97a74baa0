package io.ballast.kafka;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.replica.ClientMetadata;
import org.apache.kafka.common.replica.PartitionView;
import org.apache.kafka.common.replica.ReplicaSelector;
import org.apache.kafka.common.replica.ReplicaView;

/**
 * Follower fetching on hierarchical racks (seed 003): a consumer whose {@code client.rack} is {@code /dc2/r1/h3}
 * fetches from the replica sharing the longest rack-path prefix with it, level by level ({@code /dc2/r1} before
 * {@code /dc2} before anywhere).
 *
 * <p>Among equally near replicas the leader wins if it is one of them (the leader is never farther than a follower
 * it would be traded for), otherwise the most caught-up one by the broker's own {@link ReplicaView#comparator()}
 * (log end offset, then the shorter time since last caught up, then the broker id).
 * When no replica shares even the top level, or the client names no rack, the leader serves. Rack ids that are not
 * paths (no leading {@code /}) are one level each, so flat racks behave exactly as Kafka's
 * {@code RackAwareReplicaSelector}. The broker offers only replicas in sync and holding the fetch offset.
 *
 * <p>Loaded by the broker with {@code replica.selector.class=io.ballast.kafka.NearestReplicaSelector}.
 */
public class NearestReplicaSelector implements ReplicaSelector {

    @Override
    public Optional<ReplicaView> select(TopicPartition topicPartition, ClientMetadata clientMetadata,
                                        PartitionView partitionView) {
        ReplicaView leader = partitionView.leader();
        String clientRack = clientMetadata.rackId();
        if (clientRack == null || clientRack.isEmpty()) {
            return Optional.ofNullable(leader);
        }
        List<String> client = levels(clientRack);
        int best = 0;
        List<ReplicaView> nearest = new ArrayList<>();
        for (ReplicaView replica : partitionView.replicas()) {
            int shared = sharedLevels(client, levels(replica.endpoint().rack()));
            if (shared > best) {
                best = shared;
                nearest.clear();
            }
            if (shared == best && shared > 0) {
                nearest.add(replica);
            }
        }
        if (nearest.isEmpty() || nearest.contains(leader)) {
            return Optional.ofNullable(leader);
        }
        return Optional.of(Collections.max(nearest, ReplicaView.comparator()));
    }

    /** {@code /dc1/r2} is [dc1, r2]; a flat id such as {@code us-east-1a} is a single level; none is no level. */
    static List<String> levels(String rack) {
        List<String> levels = new ArrayList<>();
        if (rack == null || rack.isEmpty()) {
            return levels;
        }
        if (!rack.startsWith("/")) {
            levels.add(rack);
            return levels;
        }
        for (String part : rack.substring(1).split("/", -1)) {
            levels.add(part);
        }
        return levels;
    }

    static int sharedLevels(List<String> a, List<String> b) {
        int shared = 0;
        while (shared < a.size() && shared < b.size() && a.get(shared).equals(b.get(shared))) {
            shared++;
        }
        return shared;
    }
}
