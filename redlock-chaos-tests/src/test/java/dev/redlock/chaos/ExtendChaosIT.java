package dev.redlock.chaos;

import static dev.redlock.chaos.NetworkChaos.awaitDrained;
import static dev.redlock.chaos.NetworkChaos.awaitNoHolder;
import static dev.redlock.chaos.NetworkChaos.holders;
import static dev.redlock.chaos.NetworkChaos.millisSince;
import static dev.redlock.chaos.NetworkChaos.resource;
import static dev.redlock.chaos.NetworkChaos.warmUp;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Extending under partitions: an extend that only a minority confirms changes nothing (the lease
 * stands until its old deadline, and a later extend can still succeed), and an extend that reaches
 * masters after the lease's keys expired never brings them back.
 */
class ExtendChaosIT {

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(50);
  private static final Duration SETTLE = Duration.ofSeconds(5);

  @ParameterizedTest
  @EnumSource(NetworkPartition.class)
  void anExtendOnlyAMinorityConfirmsLeavesTheLeaseToItsOldDeadline(
      NetworkPartition partition, ChaosCluster cluster) throws IOException {
    Duration ttl = Duration.ofSeconds(3);
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      String key = resource("extend-minority-" + partition);
      Lease lease = redlock.tryAcquire(key, ttl).orElseThrow();
      Duration before = lease.remainingValidity();
      partition.apply(cluster, 0, 1, 2);

      long start = System.nanoTime();
      boolean extended = lease.extend(ttl);
      long elapsed = millisSince(start);

      assertFalse(extended, "only masters 3 and 4 could confirm");
      assertTrue(elapsed < 4 * NODE_TIMEOUT.toMillis(), "one round: " + elapsed + " ms");
      assertTrue(lease.isValid(), "no master said the key was gone: the lease stands");
      assertTrue(
          lease.remainingValidity().compareTo(before) <= 0, "its deadline did not move forward");
      assertFalse(lease.onLost().toCompletableFuture().isDone(), "not lost");

      cluster.heal();
      NetworkChaos.awaitTrue(
          SETTLE,
          () -> lease.extend(ttl) || !lease.isValid(),
          () -> "no extend got through after the heal");
      assertTrue(lease.isValid(), "extended by a quorum once healed, within its old validity");
      lease.close();
      awaitNoHolder(cluster, key, SETTLE);
    }
  }

  @ParameterizedTest(name = "{0} of 5 masters cut off")
  @ValueSource(ints = {3, 5})
  void anExtendThatArrivesAfterTheKeysExpiredNeverRecreatesThem(int cutOff, ChaosCluster cluster)
      throws IOException {
    Duration ttl = Duration.ofMillis(600);
    Duration extendTo = Duration.ofSeconds(5);
    List<Integer> held = IntStream.range(0, cutOff).boxed().toList();
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      String key = resource("extend-expired-" + cutOff);
      Lease lease = redlock.tryAcquire(key, ttl).orElseThrow();
      // Requests to the cut-off masters are held in the network, not dropped.
      for (int i : held) {
        cluster.proxy(i).toxics().bandwidth("held", ToxicDirection.UPSTREAM, 0);
      }

      assertFalse(lease.extend(extendTo), "no majority could confirm");
      // The held masters' keys expire with the old TTL while their extends wait in the network.
      awaitNoHolder(cluster, key, held, SETTLE);
      assertFalse(lease.isValid(), "the lease ran out with its old deadline");

      cluster.heal(); // the held extends reach the cut-off masters now
      awaitDrained(cluster, redlock, SETTLE);

      assertTrue(
          holders(cluster, key).stream().noneMatch(held::contains),
          "a late extend must not re-create a key: held on " + holders(cluster, key));
      lease.close(); // frees the masters the extend did reach
      awaitNoHolder(cluster, key, SETTLE);
    }
  }

  @Test
  void anExtendWhoseRepliesAreLostChangesNothingAndCloseFreesTheKeysItLengthened(
      ChaosCluster cluster) throws IOException {
    Duration ttl = Duration.ofSeconds(2);
    Duration longer = Duration.ofSeconds(30);
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      String key = resource("extend-unheard");
      Lease lease = redlock.tryAcquire(key, ttl).orElseThrow();
      for (int i : List.of(0, 1, 2)) {
        cluster.proxy(i).toxics().timeout("replies-lost", ToxicDirection.DOWNSTREAM, 0);
      }

      assertFalse(lease.extend(longer), "three masters extended, but only two were heard");
      assertTrue(lease.isValid(), "unheard is not refused: the lease stands until its deadline");
      assertTrue(lease.remainingValidity().compareTo(ttl) < 0, "and its deadline did not move");
      // Every master did extend the key to 30 s; closing the lease frees them all at once.
      lease.close();
      awaitNoHolder(cluster, key, SETTLE);
    }
  }
}
