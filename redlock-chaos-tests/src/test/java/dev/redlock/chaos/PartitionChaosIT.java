package dev.redlock.chaos;

import static dev.redlock.NodeOutcome.Status.GRANTED;
import static dev.redlock.NodeOutcome.Status.PENDING;
import static dev.redlock.chaos.NetworkChaos.awaitDrained;
import static dev.redlock.chaos.NetworkChaos.holders;
import static dev.redlock.chaos.NetworkChaos.millisSince;
import static dev.redlock.chaos.NetworkChaos.resource;
import static dev.redlock.chaos.NetworkChaos.warmUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockException;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Symmetric partitions, three ways each ({@link NetworkPartition}): a minority cut off still grants
 * the lock at once; a majority cut off fails within a bound, and once the partition heals no master
 * keeps the failed acquire's key.
 */
class PartitionChaosIT {

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(50);
  private static final Duration TTL = Duration.ofSeconds(2);
  private static final Duration SETTLE = Duration.ofSeconds(5);
  private static final int[] MINORITY = {3, 4};
  private static final int[] MAJORITY = {0, 1, 2};

  @ParameterizedTest
  @EnumSource(NetworkPartition.class)
  void aPartitionedMinorityStillGrantsTheLockWithoutWaitingForIt(
      NetworkPartition partition, ChaosCluster cluster) throws IOException {
    // A node timeout long enough that "did not wait for the cut-off masters" is unambiguous.
    Duration nodeTimeout = Duration.ofMillis(250);
    try (RedLock redlock = NetworkChaos.redlock(cluster, nodeTimeout)) {
      warmUp(cluster, redlock);
      partition.apply(cluster, MINORITY);
      for (int round = 0; round < 5; round++) {
        String key = resource("minority-" + partition);

        long start = System.nanoTime();
        Lease lease = redlock.tryAcquire(key, TTL).orElseThrow();
        long elapsed = millisSince(start);

        assertTrue(
            elapsed < nodeTimeout.toMillis(),
            "decided by the reachable majority without waiting out the node timeout: "
                + elapsed
                + " ms");
        assertTrue(lease.isValid(), lease::toString);
        assertEquals(List.of(0, 1, 2), holders(cluster, key), "only the reachable masters");
        lease.release();
        assertEquals(List.of(), holders(cluster, key), "released on the reachable masters");
      }
    }
  }

  @ParameterizedTest
  @EnumSource(NetworkPartition.class)
  void aPartitionedMajorityFailsWithinABoundAndLeavesNoKeyAfterHealing(
      NetworkPartition partition, ChaosCluster cluster) throws IOException, InterruptedException {
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      partition.apply(cluster, MAJORITY);
      String key = resource("majority-" + partition);

      long start = System.nanoTime();
      QuorumUnavailableException once =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire(key, TTL));
      long elapsed = millisSince(start);

      assertCutOff(partition.seenAs(), once);
      assertTrue(elapsed < 4 * NODE_TIMEOUT.toMillis(), "one round: " + elapsed + " ms");

      Duration maxWait = Duration.ofMillis(300);
      start = System.nanoTime();
      QuorumUnavailableException waited =
          assertThrows(
              QuorumUnavailableException.class, () -> redlock.acquire(key, TTL, maxWait).close());
      elapsed = millisSince(start);

      assertTrue(
          elapsed >= maxWait.toMillis() && elapsed < maxWait.plus(NODE_TIMEOUT).toMillis() + 100,
          "gave up one round after the wait at most: " + elapsed + " ms");
      assertTrue(
          waited.outcomes().stream()
              .limit(MAJORITY.length)
              .allMatch(
                  o -> o.status() == NodeOutcome.Status.FAILED || o.status() == partition.seenAs()),
          "the cut-off masters never answered: " + waited.outcomes());

      cluster.heal();
      awaitDrained(cluster, redlock, SETTLE);
      assertEquals(List.of(), holders(cluster, key), "no master kept a failed acquire's key");
    }
  }

  /**
   * The cut-off masters (the first three) show {@code expected}; the reachable two granted, or were
   * not waited for when the cut-off ones failed first.
   */
  private static void assertCutOff(NodeOutcome.Status expected, RedLockException e) {
    List<NodeOutcome> outcomes = e.outcomes();
    for (int i = 0; i < outcomes.size(); i++) {
      NodeOutcome.Status status = outcomes.get(i).status();
      if (i < MAJORITY.length) {
        assertEquals(expected, status, () -> "cut-off master: " + outcomes);
      } else {
        assertTrue(
            Set.of(GRANTED, PENDING).contains(status), () -> "reachable master: " + outcomes);
      }
    }
  }
}
