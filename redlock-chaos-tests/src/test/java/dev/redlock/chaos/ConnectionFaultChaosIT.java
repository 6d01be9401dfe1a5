package dev.redlock.chaos;

import static dev.redlock.NodeOutcome.Status.FAILED;
import static dev.redlock.NodeOutcome.Status.GRANTED;
import static dev.redlock.NodeOutcome.Status.PENDING;
import static dev.redlock.NodeOutcome.Status.TIMED_OUT;
import static dev.redlock.chaos.NetworkChaos.assertStatuses;
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
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Connections that die under the client: reset mid-command ({@code reset_peer}), cut mid-command
 * with a lingering close ({@code limit_data} then {@code slow_close}), and masters flapping up and
 * down while clients contend for one lock.
 */
class ConnectionFaultChaosIT {

  private static final Logger log = LoggerFactory.getLogger(ConnectionFaultChaosIT.class);

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(50);
  private static final Duration TTL = Duration.ofSeconds(2);
  private static final Duration SETTLE = Duration.ofSeconds(5);
  private static final long RESET_AFTER_MILLIS = 20;
  private static final long LINGER_MILLIS = 500;

  @Test
  void connectionsResetMidCommandOnAMinorityDoNotStopAcquires(ChaosCluster cluster)
      throws IOException {
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      resetMidCommand(cluster, 3, 4);
      // Live connections are closed once a command arrives; the reconnects are reset.
      acquireAndReleaseRepeatedly(cluster, redlock, "reset-minority-live");
    }
    // A client whose connections are all opened while the toxic exists: they end with an RST.
    try (RedLock fresh = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      acquireAndReleaseRepeatedly(cluster, fresh, "reset-minority-fresh");
    }
  }

  @Test
  void connectionsResetMidCommandOnAMajorityFailTheAcquireWithoutWaitingOutTheTimeout(
      ChaosCluster cluster) throws IOException {
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      resetMidCommand(cluster, 0, 1, 2);
      String key = resource("reset-majority");

      long start = System.nanoTime();
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire(key, TTL));
      long elapsed = millisSince(start);

      // The resets are seen as failures (not timeouts): they decide the round, possibly before the
      // reachable masters' grants were counted.
      assertCutOffFirstThree(Set.of(FAILED), e);
      assertTrue(elapsed < 4 * NODE_TIMEOUT.toMillis(), "one round: " + elapsed + " ms");
      // Reconnecting is reset as well: every further round fails just as fast.
      for (int round = 0; round < 5; round++) {
        long again = System.nanoTime();
        QuorumUnavailableException next =
            assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire(key, TTL));
        assertTrue(
            millisSince(again) < 4 * NODE_TIMEOUT.toMillis(), "round " + round + " took too long");
        assertCutOffFirstThree(Set.of(FAILED), next);
      }

      cluster.heal();
      awaitDrained(cluster, redlock, SETTLE);
      assertEquals(
          List.of(), holders(cluster, key), "the reset SETs never ran; the others released");
    }
  }

  @Test
  void aCommandCutMidwayWithALingeringCloseOnAMinorityDoesNotStopAcquires(ChaosCluster cluster)
      throws IOException {
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      cutMidCommandWithSlowClose(cluster, 3, 4);
      // Spans the lingering close and the reconnects that follow it.
      long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2 * LINGER_MILLIS);
      int rounds = 0;
      while (System.nanoTime() - until < 0 || rounds < 5) {
        String key = resource("cut-minority");
        Lease lease = redlock.tryAcquire(key, TTL).orElseThrow();
        assertEquals(List.of(0, 1, 2), holders(cluster, key), "the cut SETs never ran");
        lease.release();
        rounds++;
      }
    }
  }

  @Test
  void aCommandCutMidwayWithALingeringCloseOnAMajorityFailsAtTheNodeTimeout(ChaosCluster cluster)
      throws IOException {
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      cutMidCommandWithSlowClose(cluster, 0, 1, 2);
      String key = resource("cut-majority");

      long start = System.nanoTime();
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire(key, TTL));
      long elapsed = millisSince(start);

      // Half a command went out and the connection lingers: the client can only time out.
      assertStatuses(List.of(TIMED_OUT, TIMED_OUT, TIMED_OUT, GRANTED, GRANTED), e);
      assertTrue(
          elapsed >= NODE_TIMEOUT.toMillis() && elapsed < LINGER_MILLIS,
          "decided at the node timeout, not when the connection finally closed: " + elapsed);

      cluster.heal();
      awaitDrained(cluster, redlock, SETTLE);
      assertEquals(List.of(), holders(cluster, key), "the half-sent SETs never ran");
    }
  }

  @Test
  void flappingMastersNeverLetTwoClientsHoldTheLockAtOnce(ChaosCluster cluster) throws Exception {
    int clients = 6;
    Duration runFor = Duration.ofSeconds(5);
    Duration ttl = Duration.ofSeconds(1);
    String resource = resource("flapping");
    List<RedLock> redlocks = new ArrayList<>();
    for (int c = 0; c < clients; c++) {
      redlocks.add(NetworkChaos.redlock(cluster, NODE_TIMEOUT));
    }
    AtomicInteger toggles = new AtomicInteger();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    long stopAt = System.nanoTime() + runFor.toNanos();

    Thread flapper =
        daemon(
            () -> {
              boolean down = false;
              try {
                while (System.nanoTime() - stopAt < 0) {
                  down = !down;
                  for (int node : List.of(3, 4)) {
                    if (down) {
                      cluster.proxy(node).disable();
                    } else {
                      cluster.proxy(node).enable();
                    }
                  }
                  toggles.incrementAndGet();
                  // The fault schedule, not a synchronization: toggle every 200-300 ms.
                  LockSupport.parkNanos(
                      TimeUnit.MILLISECONDS.toNanos(
                          200 + ThreadLocalRandom.current().nextInt(100)));
                }
              } catch (IOException | RuntimeException e) {
                failure.compareAndSet(null, e);
              }
            },
            "chaos-flapper");
    Contention contention;
    try {
      flapper.start();
      contention = Contention.start(redlocks, resource, ttl, stopAt);
      contention.join(runFor.plusSeconds(10));
      flapper.join(runFor.plusSeconds(10).toMillis());
      assertTrue(!flapper.isAlive(), "flapper stopped");
    } finally {
      redlocks.forEach(RedLock::close);
    }
    if (failure.get() != null) {
      throw new AssertionError("the flapper failed", failure.get());
    }
    String summary = contention.summary() + ", " + toggles.get() + " toggles";
    log.info("flapping masters: {}", summary);
    assertEquals(
        List.of(), MutualExclusionChecker.overlaps(contention.leases()), "overlaps: " + summary);
    assertEquals(contention.increments(), contention.counter(), "lost updates: " + summary);
    assertTrue(toggles.get() >= 10, "the masters flapped: " + summary);
    assertTrue(contention.leases().size() >= 20, "the lock was granted often enough: " + summary);
  }

  private static Thread daemon(Runnable body, String name) {
    Thread thread = new Thread(body, name);
    thread.setDaemon(true);
    return thread;
  }

  /** Connections that reset {@value #RESET_AFTER_MILLIS} ms after a command arrives. */
  private static void resetMidCommand(ChaosCluster cluster, int... nodes) throws IOException {
    for (int node : nodes) {
      cluster.proxy(node).toxics().resetPeer("reset", ToxicDirection.UPSTREAM, RESET_AFTER_MILLIS);
    }
  }

  /**
   * Connections that pass the first 8 bytes of what the client sends (the head of one command) and
   * then close, but only after {@value #LINGER_MILLIS} ms.
   */
  private static void cutMidCommandWithSlowClose(ChaosCluster cluster, int... nodes)
      throws IOException {
    for (int node : nodes) {
      cluster.proxy(node).toxics().limitData("cut", ToxicDirection.UPSTREAM, 8);
      cluster.proxy(node).toxics().slowClose("linger", ToxicDirection.UPSTREAM, LINGER_MILLIS);
    }
  }

  private static void acquireAndReleaseRepeatedly(
      ChaosCluster cluster, RedLock redlock, String prefix) {
    for (int round = 0; round < 10; round++) {
      String key = resource(prefix);
      Lease lease = redlock.tryAcquire(key, TTL).orElseThrow();
      assertTrue(lease.isValid(), lease::toString);
      assertEquals(List.of(0, 1, 2), holders(cluster, key), "the reset SETs never ran");
      lease.release();
      assertEquals(List.of(), holders(cluster, key), "round " + round);
    }
  }

  private static void assertCutOffFirstThree(
      Set<NodeOutcome.Status> expected, QuorumUnavailableException e) {
    List<NodeOutcome> outcomes = e.outcomes();
    for (int i = 0; i < outcomes.size(); i++) {
      NodeOutcome.Status status = outcomes.get(i).status();
      Set<NodeOutcome.Status> allowed = i < 3 ? expected : Set.of(GRANTED, PENDING);
      assertTrue(allowed.contains(status), () -> "outcomes: " + outcomes);
    }
  }
}
