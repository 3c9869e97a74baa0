package io.ballast.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

class StripedPlacerHarnessTest {

    @Test
    void brokersAreReadWithTheirRacksAndFencing() {
        var brokers = StripedPlacerHarness.brokers("1|/dc1/r1|false,2|-|true");
        assertEquals(2, brokers.size());
        assertEquals(Optional.of("/dc1/r1"), brokers.get(0).rack());
        assertEquals(Optional.empty(), brokers.get(1).rack());
        assertTrue(brokers.get(1).fenced());
    }

    @Test
    void aBrokerWhoseEveryDirectoryIsCordonedIsNotUsable() {
        var brokers = StripedPlacerHarness.brokers("1|a|false|false,2|b|false|true,3|c|false");
        assertEquals(java.util.List.of(1, 3), brokers.stream().map(b -> b.id()).toList());
        assertEquals("error\tInvalidReplicationFactorException\tAll brokers are currently fenced, or have all their "
                + "log directories cordoned.", StripedPlacerHarness.answer("7\t1\t1\t1|a|false|true"));
    }

    @Test
    void anAnswerNamesEveryPartitionsReplicasOrKafkasError() {
        String placed = StripedPlacerHarness.answer("7\t2\t3\t1|a|false,2|b|false,3|c|false");
        assertTrue(placed.startsWith("ok\t"), placed);
        assertEquals(3, placed.substring(3).split(";").length);
        assertEquals("error\tInvalidReplicationFactorException\tThe target replication factor of 4 cannot be reached "
                + "because only 3 broker(s) are registered or some brokers have all their log directories cordoned.",
                StripedPlacerHarness.answer("7\t4\t1\t1|a|false,2|b|false,3|c|false"));
        assertEquals("error\tInvalidReplicationFactorException\tAll brokers are currently fenced, or have all their "
                + "log directories cordoned.",
                StripedPlacerHarness.answer("7\t1\t1\t1|a|true"));
    }
}
