package dev.redlock.chaos;

import static dev.redlock.chaos.NetworkChaos.awaitDrained;
import static dev.redlock.chaos.NetworkChaos.awaitNoHolder;
import static dev.redlock.chaos.NetworkChaos.holders;
import static dev.redlock.chaos.NetworkChaos.millisSince;
import static dev.redlock.chaos.NetworkChaos.resource;
import static dev.redlock.chaos.NetworkChaos.warmUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
 * Extending under partitions: an extend that only a minority confirms loses the lease at once, and
 * an extend that reaches masters after the lease's keys expired never brings them back.
 */
class ExtendChaosIT {

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(50);
  private static final Duration SETTLE = Duration.ofSeconds(5);

  @ParameterizedTest
  @EnumSource(NetworkPartition.class)
  void anExtendOnlyAMinorityConfirmsLosesTheLease(NetworkPartition partition, ChaosCluster cluster)
      throws IOException {
    Duration ttl = Duration.ofSeconds(2);
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      String key = resource("extend-minority-" + partition);
      Lease lease = redlock.tryAcquire(key, ttl).orElseThrow();
      partition.apply(cluster, 0, 1, 2);

      long start = System.nanoTime();
      boolean extended = lease.extend(ttl);
      long elapsed = millisSince(start);

      assertFalse(extended, "only masters 3 and 4 could confirm");
      assertTrue(elapsed < 4 * NODE_TIMEOUT.toMillis(), "one round: " + elapsed + " ms");
      assertFalse(lease.isValid(), "lost at once, long before its validity ran out");
      assertEquals(Duration.ZERO, lease.remainingValidity());
      assertFalse(lease.extend(ttl), "a lost lease stays lost");
      assertFalse(lease.isValid());

      cluster.heal();
      awaitDrained(cluster, redlock, SETTLE);
      assertFalse(lease.isValid(), "healing does not bring a lost lease back");
      // Closing a lost lease still deletes its keys wherever they are.
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
    List<Integer> reached = IntStream.range(cutOff, cluster.size()).boxed().toList();
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      String key = resource("extend-expired-" + cutOff);
      Lease lease = redlock.tryAcquire(key, ttl).orElseThrow();
      // Requests to the cut-off masters are held in the network, not dropped.
      for (int i : held) {
        cluster.proxy(i).toxics().bandwidth("held", ToxicDirection.UPSTREAM, 0);
      }

      assertFalse(lease.extend(extendTo), "no majority could confirm");
      assertFalse(lease.isValid());
      // The failed extend released the lost lease: where the extend arrived, the release followed
      // it; elsewhere both are held back while the key expires.
      awaitNoHolder(cluster, key, SETTLE);

      cluster.heal(); // the held extends (and releases) reach the cut-off masters now
      awaitDrained(cluster, redlock, SETTLE);

      assertEquals(List.of(), holders(cluster, key), "a late extend must not re-create a key");
      lease.close();
      awaitNoHolder(cluster, key, SETTLE);
    }
  }

  @Test
  void anExtendWhoseRepliesAreLostLosesTheLeaseAndFreesTheKeysItExtended(ChaosCluster cluster)
      throws IOException {
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
      assertFalse(lease.isValid());
      // Every master did extend the key to 30 s, but the failed extend sent a release behind it:
      // the lost lease's keys do not outlive it, even before close().
      awaitNoHolder(cluster, key, SETTLE);
      lease.close();
      assertEquals(List.of(), holders(cluster, key));
    }
  }
}
