package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A listener never runs on a thread that reads the masters' replies: one that blocks, or calls back
 * into the RedLock, cannot stall the other masters.
 */
class ListenerThreadsIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void aListenerThatInspectsTheMastersWhenABreakerOpensStallsNoRound(RedisCluster cluster)
      throws Exception {
    AtomicReference<RedLock> self = new AtomicReference<>();
    AtomicReference<String> inspectedOn = new AtomicReference<>();
    CountDownLatch inspected = new CountDownLatch(1);
    RedLockListener slow =
        new RedLockListener() {
          @Override
          public void circuitChanged(String node, CircuitState state) {
            if (state == CircuitState.OPEN && inspected.getCount() > 0) {
              // A hung master makes inspect() wait its whole bound: a second.
              self.get().inspect();
              inspectedOn.set(Thread.currentThread().getName());
              inspected.countDown();
            }
          }
        };
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                // The default: with one master hung, every round needs both others in time, and
                // a shorter timeout failed rounds on a loaded machine, listener or not.
                .nodeTimeout(Duration.ofMillis(50))
                .listener(slow)
                .build())) {
      self.set(redlock);
      cluster.node(2).pause(); // hung: its breaker opens after enough timeouts
      long slowest = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (inspected.getCount() > 0 || slowest == 0) {
        assertTrue(System.nanoTime() - deadline < 0, "the breaker opened and was inspected");
        long start = System.nanoTime();
        redlock.tryAcquire("r", Duration.ofSeconds(5)).orElseThrow().close();
        slowest = Math.max(slowest, System.nanoTime() - start);
      }
      // Rounds go on while the listener waits a second in inspect(): decided by masters 0 and 1.
      for (int i = 0; i < 20; i++) {
        long start = System.nanoTime();
        redlock.tryAcquire("r" + i, Duration.ofSeconds(5)).orElseThrow().close();
        slowest = Math.max(slowest, System.nanoTime() - start);
      }
      assertTrue(
          slowest < TimeUnit.MILLISECONDS.toNanos(500),
          "no round waited for the listener's inspect (slowest "
              + TimeUnit.NANOSECONDS.toMillis(slowest)
              + " ms)");
      assertTrue(inspectedOn.get().startsWith("redlock-events-"), inspectedOn.get());
    } finally {
      cluster.node(2).resume();
    }
  }
}
