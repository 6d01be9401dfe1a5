package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The automatic renewal against scripted masters. Its delays come from the fake ticker and run on
 * the renewer's real timer, which runs due renewals in the order they fall due: a lease due later
 * than another is known not to have been renewed yet when the other's extend arrives, so these
 * tests wait for an extend that must come, never for one that must not.
 */
class RenewalTest {

  private static final Duration SHORT = Duration.ofMillis(300); // validity 295 ms, due at 195 ms

  private final FakeCluster cluster = new FakeCluster();
  private final FakeTicker ticker = cluster.ticker;
  private final List<FakeNode> nodes = cluster.nodes;
  private RedLock redlock;

  @BeforeEach
  void build() {
    redlock = cluster.builder(5).circuitBreakers(false).retryDelay(Duration.ofMillis(10)).build();
  }

  @AfterEach
  void close() {
    redlock.close();
  }

  @Test
  void renewalExtendsOnEveryMasterAndMovesTheDeadlineEachTimeAThirdIsLeft() {
    Lease lease = redlock.tryAcquire("job", SHORT).orElseThrow();
    var renewal = redlock.renew(lease, SHORT.toMillis());
    ticker.advance(Duration.ofMillis(150)); // 145 ms left of the first lease
    awaitExtends("job", 1);
    // decided at t0 + 150: 300 - (3 + 2) drift from there
    await(() -> lease.remainingValidity().equals(Duration.ofMillis(295)), "deadline moved");
    awaitExtends("job", 2); // renewed again once a third of the new lease is left
    assertTrue(lease.isValid());
    assertFalse(lease.isLost());
    assertEquals(1, redlock.leasesHeld());
    renewal.cancel();
    lease.release();
    assertEquals(0, redlock.leasesHeld());
  }

  @Test
  void leaseWithMoreThanAThirdLeftIsNotRenewedBeforeOneThatIsDue() {
    Lease later = redlock.tryAcquire("later", Duration.ofSeconds(3)).orElseThrow(); // due at 1.97 s
    redlock.renew(later, 3000);
    Lease due = redlock.tryAcquire("due", SHORT).orElseThrow();
    redlock.renew(due, SHORT.toMillis());
    awaitExtends("due", 1);
    assertEquals(0, extends_("later"), "renewed before a third of its TTL was left");
  }

  @Test
  void leaseDueSoonerIsRenewedFirst() {
    Lease sooner = redlock.tryAcquire("sooner", Duration.ofSeconds(3)).orElseThrow();
    ticker.advance(Duration.ofMillis(1900)); // 1068 ms left, a third is 1000: due in 68 ms
    redlock.renew(sooner, 3000);
    Lease after = redlock.tryAcquire("after", SHORT).orElseThrow(); // due in 195 ms
    redlock.renew(after, SHORT.toMillis());
    awaitExtends("after", 1);
    assertEquals(1, extends_("sooner") / nodes.size(), "the lease due sooner waited");
  }

  @Test
  void renewalThatReachesNoQuorumIsRetriedWhileTheLeaseIsValid() {
    Lease lease = redlock.tryAcquire("job", SHORT).orElseThrow();
    for (int i = 0; i < 3; i++) {
      nodes.get(i).onExtend = Answer.FAIL;
    }
    ticker.advance(Duration.ofMillis(200)); // due at once
    redlock.renew(lease, SHORT.toMillis());
    awaitExtends("job", 2); // a failed round, then a retry
    assertTrue(lease.isValid(), "a blip on a majority costs a retry, not the lease");
    assertFalse(lease.isLost());
    for (int i = 0; i < 3; i++) {
      nodes.get(i).onExtend = Answer.GRANT;
    }
    await(() -> lease.remainingValidity().equals(Duration.ofMillis(295)), "renewed on a retry");
  }

  @Test
  void renewalRefusedByAMajorityLosesTheLeaseAndStops() {
    Lease lease = redlock.tryAcquire("job", SHORT).orElseThrow();
    for (int i = 0; i < 3; i++) {
      nodes.get(i).onExtend = Answer.GONE;
    }
    ticker.advance(Duration.ofMillis(200));
    redlock.renew(lease, SHORT.toMillis());
    await(() -> lease.onLost().toCompletableFuture().isDone(), "lost");
    assertTrue(lease.isLost());
    assertFalse(lease.isValid());
    assertEquals(0, redlock.leasesHeld());
    // another lease's renewal, due after any retry of the lost one, comes and goes alone
    Lease other = redlock.tryAcquire("other", SHORT).orElseThrow();
    redlock.renew(other, SHORT.toMillis());
    awaitExtends("other", 1);
    assertEquals(1, extends_("job") / nodes.size(), "a lost lease is not renewed again");
  }

  @Test
  void leaseThatExpiredBeforeItsRenewalIsLostWithoutAnExtend() {
    Lease lease = redlock.tryAcquire("job", SHORT).orElseThrow();
    ticker.advance(SHORT);
    redlock.renew(lease, SHORT.toMillis());
    await(() -> lease.onLost().toCompletableFuture().isDone(), "lost");
    assertTrue(lease.isLost());
    assertEquals(0, extends_("job"), "an expired lease is never extended");
    await(() -> releases("job") == nodes.size(), "the masters that may hold it are freed");
  }

  @Test
  void cancelledOrReleasedRenewalSendsNoExtend() {
    Lease cancelled = redlock.tryAcquire("cancelled", SHORT).orElseThrow();
    redlock.renew(cancelled, SHORT.toMillis()).cancel();
    Lease released = redlock.tryAcquire("released", SHORT).orElseThrow();
    redlock.renew(released, SHORT.toMillis());
    released.release();
    Lease next = redlock.tryAcquire("next", SHORT).orElseThrow();
    redlock.renew(next, SHORT.toMillis());
    awaitExtends("next", 1);
    assertEquals(0, extends_("cancelled"));
    assertEquals(0, extends_("released"));
    assertTrue(cancelled.isValid(), "cancelling the renewal leaves the lease alone");
  }

  @Test
  void renewalCountsItsRoundsInFlightOnADaemonThread() {
    Lease lease = redlock.tryAcquire("job", SHORT).orElseThrow();
    nodes.forEach(node -> node.onExtend = Answer.HANG); // each round ends at the node timeout
    ticker.advance(Duration.ofMillis(200));
    redlock.renew(lease, SHORT.toMillis());
    await(() -> redlock.renewalsInFlight() == 1, "a round in flight");
    for (Thread thread : Thread.getAllStackTraces().keySet()) {
      if (thread.getName().equals("redlock-renewer")) {
        assertTrue(thread.isDaemon(), "the renewer must not keep the JVM alive");
      }
    }
    nodes.forEach(node -> node.onExtend = Answer.GRANT);
    await(() -> lease.remainingValidity().equals(Duration.ofMillis(295)), "renewed");
    await(() -> redlock.renewalsInFlight() == 0, "no round in flight");
  }

  @Test
  void leaseReleasedWhileItsRenewalIsInFlightIsNotLost() {
    Lease lease = redlock.tryAcquire("job", SHORT).orElseThrow();
    nodes.forEach(node -> node.onExtend = Answer.HANG);
    ticker.advance(Duration.ofMillis(200));
    redlock.renew(lease, SHORT.toMillis());
    await(() -> redlock.renewalsInFlight() == 1, "a round in flight");
    lease.release();
    assertEquals(0, redlock.leasesHeld());
    await(() -> redlock.renewalsInFlight() == 0, "the round timed out");
    assertEquals(0, redlock.leasesHeld(), "a released lease is not counted off again");
    assertFalse(lease.isLost());
    assertFalse(lease.onLost().toCompletableFuture().isDone(), "a release is not a loss");
  }

  @Test
  void renewalMovesTheLastMomentTheKeysMayLive() {
    Lease lease = redlock.tryAcquire("job", SHORT).orElseThrow(); // keys gone by t0 + 308 ms
    var renewal = redlock.renew(lease, SHORT.toMillis());
    ticker.advance(Duration.ofMillis(150));
    awaitExtends("job", 1); // sent at t0 + 150: keys gone by t0 + 458 ms
    renewal.cancel();
    ticker.advance(Duration.ofMillis(307)); // past the acquire's keys, not the extend's
    nodes.get(4).nextReleases.add(Answer.FAIL);
    lease.release();
    await(() -> releases("job") == nodes.size() + 1, "the failed release sent again");
  }

  private int extends_(String resource) {
    String extend = "EXTEND " + resource + " PX ";
    int count = 0;
    for (FakeNode node : nodes) {
      count += (int) node.received().stream().filter(c -> c.startsWith(extend)).count();
    }
    return count;
  }

  private int releases(String resource) {
    int count = 0;
    for (FakeNode node : nodes) {
      count += (int) node.received().stream().filter(c -> c.equals("RELEASE " + resource)).count();
    }
    return count;
  }

  /** Waits until every master was sent at least {@code rounds} extends of {@code resource}. */
  private void awaitExtends(String resource, int rounds) {
    await(() -> extends_(resource) >= rounds * nodes.size(), rounds + " extends of " + resource);
  }

  private static void await(BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        fail("timed out waiting: " + what);
      }
      LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(200)); // a poll, not the sync
    }
  }
}
