package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** withLock keeps a lease alive by quorum renewals and signals at once when it is lost. */
class AutoRenewalIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  /**
   * Renewed when a third is left, so a renewal has 400 ms to get through: with 600 ms (200 ms) a
   * loaded 2-core machine now and then starved one and the lease ran out under the body.
   */
  private static final Duration TTL = Duration.ofMillis(1200);

  private final AtomicInteger extended = new AtomicInteger();
  private final AtomicInteger lost = new AtomicInteger();
  private final RedLockListener counting =
      new RedLockListener() {
        @Override
        public void extended(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
          extended.incrementAndGet();
        }

        @Override
        public void lost(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
          lost.incrementAndGet();
        }
      };

  private RedLock redlock(RedisCluster cluster) {
    return RedLocks.admitted(
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(Duration.ofMillis(100))
            .listener(counting)
            .build());
  }

  @Test
  void bodyOutlivingTheTtlKeepsAValidLeaseThroughRenewals(RedisCluster cluster) throws Exception {
    try (RedLock redlock = redlock(cluster)) {
      String result =
          redlock.callWithLock(
              "job",
              TTL,
              Duration.ofSeconds(1),
              lease -> {
                long end = System.nanoTime() + TTL.multipliedBy(3).toNanos();
                while (System.nanoTime() - end < 0) {
                  lease.ensureValid(); // throws if a renewal was missed
                  assertTrue(redlock.tryAcquire("job", TTL).isEmpty(), "nobody else gets it");
                  LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
                }
                return "done";
              });
      assertEquals("done", result);
      // Three TTLs of body, a renewal each time a third is left (every 2/3 TTL): at least 3.
      assertTrue(extended.get() >= 3, "renewed at a third of the TTL left: " + extended.get());
      assertEquals(0, lost.get());
      RedLocks.eventually(
          "released after the body", () -> RedLocks.keysGone(cluster, "job", 0, 1, 2, 3, 4));
      // The renewer may still be finishing its last pass when the body returns: it goes idle soon.
      RedLocks.eventually("renewals stopped", () -> renewerThreadsBusy() == 0);
    }
  }

  @Test
  void aBlipOnAMajorityDuringARenewalCostsARetryNotTheLease(RedisCluster cluster) throws Exception {
    Duration ttl = Duration.ofSeconds(3);
    try (RedLock redlock = redlock(cluster)) {
      redlock.withLock(
          "job",
          ttl,
          Duration.ofSeconds(1),
          lease -> {
            long deadline = System.nanoTime() + lease.remainingValidity().toNanos();
            // The first renewal is due when a third of the TTL is left: a majority hangs from
            // 300 ms before that until 300 ms after, then comes back.
            long due = deadline - ttl.dividedBy(3).toNanos();
            try {
              parkUntil(due - Duration.ofMillis(300).toNanos());
              for (int i = 0; i < 3; i++) {
                cluster.node(i).pause();
              }
              parkUntil(due + Duration.ofMillis(300).toNanos());
            } finally {
              for (int i = 0; i < 3; i++) {
                cluster.node(i).resume();
              }
            }
            assertTrue(lease.isValid(), "the lease stands while its validity lasts");
            // Past the first deadline only a renewal after the blip keeps it valid.
            parkUntil(deadline + Duration.ofMillis(500).toNanos());
            lease.ensureValid();
          });
      assertEquals(0, lost.get(), "never lost");
      assertTrue(extended.get() >= 1, "renewed after the blip: " + extended.get());
    }
  }

  private static void parkUntil(long deadline) {
    for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(left); // a fault schedule, not a synchronization
    }
  }

  @Test
  void renewalsThatCannotReachAQuorumLoseTheLeaseWhenItExpires(RedisCluster cluster)
      throws Exception {
    try (RedLock redlock = redlock(cluster)) {
      CountDownLatch lostSignal = new CountDownLatch(1);
      LeaseLostException seen =
          assertThrows(
              LeaseLostException.class,
              () ->
                  redlock.withLock(
                      "job",
                      TTL,
                      Duration.ofSeconds(1),
                      lease -> {
                        lease.onLost().thenRun(lostSignal::countDown);
                        for (int i = 0; i < 3; i++) {
                          cluster.node(i).kill(); // a majority gone: the next renewal fails
                        }
                        try {
                          assertTrue(lostSignal.await(5, TimeUnit.SECONDS), "onLost fired");
                        } catch (InterruptedException e) {
                          throw new AssertionError(e);
                        }
                        assertFalse(lease.isValid());
                        assertTrue(lease.remainingValidity().isZero());
                        lease.ensureValid();
                      }));
      assertTrue(seen.getMessage().contains("job"), seen.getMessage());
      assertEquals(1, lost.get());
      RedLocks.eventually(
          "released on the live masters", () -> RedLocks.keysGone(cluster, "job", 3, 4));
    }
  }

  @Test
  void aThrowingBodyStillReleasesTheLock(RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster)) {
      IllegalStateException e =
          assertThrows(
              IllegalStateException.class,
              () ->
                  redlock.withLock(
                      "job",
                      TTL,
                      Duration.ofSeconds(1),
                      lease -> {
                        throw new IllegalStateException("boom");
                      }));
      assertEquals("boom", e.getMessage());
      RedLocks.eventually(
          "released after the failed body", () -> RedLocks.keysGone(cluster, "job", 0, 1, 2, 3, 4));
    }
  }

  @Test
  void closeStopsTheRenewerThread(RedisCluster cluster) throws Exception {
    // Only this RedLock's renewer: another test's RedLock may still be ending its own.
    Set<Thread> before = renewerThreads();
    RedLock redlock = redlock(cluster);
    redlock.withLock("job", TTL, Duration.ofSeconds(1), lease -> lease.ensureValid());
    Set<Thread> started = renewerThreads();
    started.removeAll(before);
    assertEquals(1, started.size(), "this RedLock's renewer threads: " + started);
    Thread renewer = started.iterator().next();
    redlock.close();
    RedLocks.eventually("renewer thread gone", () -> !renewer.isAlive());
  }

  private static Set<Thread> renewerThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals("redlock-renewer") && t.isAlive())
        .collect(Collectors.toCollection(HashSet::new));
  }

  private static long renewerThreadsBusy() {
    return Thread.getAllStackTraces().entrySet().stream()
        .filter(e -> e.getKey().getName().equals("redlock-renewer"))
        .filter(e -> e.getKey().getState() == Thread.State.RUNNABLE)
        .count();
  }
}
