package io.ballast.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.replica.ClientMetadata;
import org.apache.kafka.common.replica.PartitionView;
import org.apache.kafka.common.replica.RackAwareReplicaSelector;
import org.apache.kafka.common.replica.ReplicaView;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class NearestReplicaSelectorTest {

    private static final TopicPartition PARTITION = new TopicPartition("orders", 0);
    private final NearestReplicaSelector selector = new NearestReplicaSelector();

    private static ReplicaView replica(int id, String rack, long logEndOffset, long sinceCaughtUpMs) {
        return new ReplicaView.DefaultReplicaView(new Node(id, "127.0.0.1", 9092 + id, rack), logEndOffset,
                sinceCaughtUpMs);
    }

    private static ReplicaView replica(int id, String rack) {
        return replica(id, rack, 100, 0);
    }

    private static ClientMetadata client(String rack) {
        return new ClientMetadata.DefaultClientMetadata(rack, "consumer-1", InetAddress.getLoopbackAddress(),
                KafkaPrincipal.ANONYMOUS, "PLAINTEXT");
    }

    private static PartitionView partition(ReplicaView leader, ReplicaView... followers) {
        Set<ReplicaView> replicas = new HashSet<>(List.of(followers));
        replicas.add(leader);
        return new PartitionView.DefaultPartitionView(replicas, leader);
    }

    private int chosen(String clientRack, PartitionView partition) {
        Optional<ReplicaView> view = selector.select(PARTITION, client(clientRack), partition);
        return view.orElseThrow().endpoint().id();
    }

    @Test
    void theReplicaSharingTheLongestRackPathWins() {
        // Replica 4 is a little behind replica 2: between those two (same rack), 2 is the more caught-up.
        PartitionView view = partition(replica(1, "/dc1/r1/h1"), replica(2, "/dc2/r1/h1"), replica(3, "/dc2/r2/h1"),
                replica(4, "/dc2/r1/h3", 95, 0));
        assertEquals(4, chosen("/dc2/r1/h3", view));  // same host, even though a little behind
        assertEquals(2, chosen("/dc2/r1/h9", view));  // same rack: 2 and 4, and 2 is further ahead
        assertEquals(3, chosen("/dc2/r2/h7", view));  // same rack
        // Same data centre: 2, 3 and 4; 2 and 3 are ahead of 4 and tie, and the comparator's last key is the id.
        assertEquals(3, chosen("/dc2/r9", view));
        assertEquals(1, chosen("/dc1/r5", view));  // same data centre as the leader: the leader
    }

    @Test
    void amongEquallyNearFollowersTheBrokersComparatorDecides() {
        // ReplicaView.comparator(): log end offset, then the shorter time since caught up, then the broker id.
        ReplicaView leader = replica(1, "/dc1/r1");
        ReplicaView lagging = replica(2, "/dc2/r1", 90, 0);
        ReplicaView behindInTime = replica(3, "/dc2/r2", 100, 5_000);
        ReplicaView current = replica(4, "/dc2/r3", 100, 0);
        assertEquals(4, chosen("/dc2/r9", partition(leader, lagging, behindInTime, current)));
        assertEquals(3, chosen("/dc2/r9", partition(leader, lagging, behindInTime)));
    }

    @Test
    void theLeaderServesWhenNothingIsNearerOrNoRackIsGiven() {
        PartitionView view = partition(replica(1, "/dc1/r1"), replica(2, "/dc1/r2"), replica(3, "/dc2/r1"));
        assertEquals(1, chosen("/dc3/r1", view));  // nothing shares even the data centre
        assertEquals(1, chosen("/dc1/r3", view));  // the leader is as near as any follower
        assertEquals(1, chosen("", view));
        assertEquals(1, chosen(null, view));
    }

    @ParameterizedTest
    @CsvSource({"/dc1/r2,dc1|r2", "/dc1,dc1", "us-east-1a,us-east-1a", "/a//b,a||b"})
    void rackIdsReadAsPaths(String rack, String expected) {
        assertEquals(List.of(expected.split("\\|", -1)), NearestReplicaSelector.levels(rack));
    }

    @Test
    void noRackIsNoLevelAndLevelsCompareFromTheTop() {
        assertEquals(List.of(), NearestReplicaSelector.levels(null));
        assertEquals(List.of(), NearestReplicaSelector.levels(""));
        assertEquals(1, NearestReplicaSelector.sharedLevels(List.of("dc1", "r2"), List.of("dc1", "r3")));
        assertEquals(0, NearestReplicaSelector.sharedLevels(List.of("dc1", "r2"), List.of("dc2", "r2")));
        assertEquals(2, NearestReplicaSelector.sharedLevels(List.of("dc1", "r2"), List.of("dc1", "r2", "h1")));
    }

    @Test
    void flatRackIdsBehaveExactlyAsKafkasRackAwareReplicaSelector() {
        RackAwareReplicaSelector kafkas = new RackAwareReplicaSelector();
        Random random = new Random(42);
        String[] racks = {"us-east-1a", "us-east-1b", "us-east-1c", "eu-west-1a"};
        for (int round = 0; round < 2_000; round++) {
            int size = 1 + random.nextInt(5);
            List<ReplicaView> replicas = new ArrayList<>();
            for (int id = 1; id <= size; id++) {
                replicas.add(replica(id, random.nextInt(6) == 0 ? null : racks[random.nextInt(racks.length)],
                        90 + random.nextInt(11), random.nextInt(3) * 1_000L));
            }
            ReplicaView leader = replicas.get(random.nextInt(size));
            PartitionView view = new PartitionView.DefaultPartitionView(new HashSet<>(replicas), leader);
            String clientRack = random.nextInt(5) == 0 ? "" : racks[random.nextInt(racks.length)];
            Optional<ReplicaView> theirs = kafkas.select(PARTITION, client(clientRack), view);
            Optional<ReplicaView> ours = selector.select(PARTITION, client(clientRack), view);
            assertEquals(theirs.map(r -> r.endpoint().id()), ours.map(r -> r.endpoint().id()),
                    () -> "client " + clientRack + ", replicas " + replicas + ", leader " + leader.endpoint().id());
        }
    }
}
