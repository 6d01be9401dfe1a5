package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Circuit breakers must not cost availability once the masters are healthy again. */
class CircuitBreakerHealIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @Test
  void aMajorityHealedFromAHangGrantsAtOnceRatherThanAfterItsBreakersWait(RedisCluster cluster) {
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder().nodes(cluster.uris()).nodeTimeout(Duration.ofMillis(50)).build())) {
      redlock.tryAcquire("warm", RedLocks.TTL).orElseThrow().close();
      try {
        for (int i = 0; i < 3; i++) {
          cluster.node(i).pause();
        }
        for (int round = 0; round < 15; round++) {
          assertThrows(
              QuorumUnavailableException.class, () -> redlock.tryAcquire("job", RedLocks.TTL));
        }
      } finally {
        for (int i = 0; i < 3; i++) {
          cluster.node(i).resume();
        }
      }
      long healed = System.nanoTime();
      long giveUp = healed + TimeUnit.SECONDS.toNanos(5);
      List<String> failures = new ArrayList<>();
      Lease lease = null;
      while (lease == null && System.nanoTime() - giveUp < 0) {
        try {
          lease = redlock.tryAcquire("job", RedLocks.TTL).orElse(null);
        } catch (QuorumUnavailableException e) {
          failures.add(e.getMessage());
        }
      }
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - healed);
      System.out.println("HEAL first lease " + tookMillis + " ms after every master resumed");
      assertNotNull(
          lease, () -> "a lease within 5 s of the heal; first failure: " + failures.get(0));
      assertTrue(
          failures.stream().noneMatch(f -> f.contains("circuit breaker open")),
          () ->
              "no healthy master was skipped for its open breaker; "
                  + failures.size()
                  + " failed rounds, the first: "
                  + failures.get(0));
      // The goal is 100 ms; the slack is for a loaded two-core machine.
      assertTrue(tookMillis < 1000, "first lease " + tookMillis + " ms after the heal");
      lease.close();
    }
  }
}
