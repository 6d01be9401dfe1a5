package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A lease's end on scripted masters: the delayed release, what the listener hears of each master's
 * final answer and when, and how long a failed release is sent again (until every key of the lease
 * must have expired, to the nanosecond).
 */
class LeaseLifecycleTest {

  private static final Duration TTL = Duration.ofSeconds(10);

  /** 10 s, stretched by twice the 1% drift factor, plus 2 ms: when every key has expired. */
  private static final Duration KEYS_EXPIRE = Duration.ofMillis(10_202);

  private final FakeCluster cluster = new FakeCluster();
  private final FakeTicker ticker = cluster.ticker;
  private final List<FakeNode> nodes = cluster.nodes;
  private final BlockingQueue<List<NodeOutcome>> completed = new LinkedBlockingQueue<>();
  private final BlockingQueue<Duration> completedAfter = new LinkedBlockingQueue<>();
  private final BlockingQueue<List<NodeOutcome>> acquired = new LinkedBlockingQueue<>();
  private final BlockingQueue<String> released = new LinkedBlockingQueue<>();
  private RedLock redlock;

  private RedLock build(int n) {
    redlock =
        cluster
            .builder(n)
            .circuitBreakers(false)
            .listener(
                new RedLockListener() {
                  @Override
                  public void acquired(
                      String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                    acquired.add(outcomes);
                  }

                  @Override
                  public void released(
                      String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                    released.add(resource);
                  }

                  @Override
                  public void releaseCompleted(
                      String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                    completedAfter.add(elapsed);
                    completed.add(outcomes);
                  }
                })
            .build();
    return redlock;
  }

  @AfterEach
  void close() {
    if (redlock != null) {
      redlock.close();
    }
  }

  private List<NodeOutcome> nextCompleted() throws InterruptedException {
    List<NodeOutcome> outcomes = completed.poll(5, TimeUnit.SECONDS);
    assertTrue(outcomes != null, "releaseCompleted within 5 s");
    return outcomes;
  }

  private long sent(int node, String prefix) {
    return nodes.get(node).received().stream().filter(s -> s.startsWith(prefix)).count();
  }

  @Test
  void releaseAfterShortensTheKeyOnEveryMasterAndEndsTheHandle() {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    nodes.get(4).onRelease = Answer.FAIL; // shorten answers as release does
    assertTrue(lease.releaseAfter(Duration.ofMillis(1500)));
    nodes.forEach(node -> assertTrue(node.received().contains("SHORTEN job PX 1500")));
    redlock.awaitEventsTold();
    assertEquals(List.of("job"), List.copyOf(released), "the listener hears of the release");
    assertFalse(lease.isValid());
    assertEquals(0, redlock.leasesHeld());
    assertFalse(lease.releaseAfter(Duration.ofMillis(1500)), "already released");
    nodes.forEach(
        node ->
            assertEquals(1, node.received().stream().filter(s -> s.startsWith("SHORTEN")).count()));
    Lease shortest = redlock.tryAcquire("one", TTL).orElseThrow();
    assertTrue(shortest.releaseAfter(Duration.ofMillis(1)), "1 ms is a delay, not a release now");
    assertEquals(1, sent(0, "SHORTEN one PX 1"));
  }

  @Test
  void releaseAfterMoreThanTheLongestTtlIsCappedAtIt() {
    build(3);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    assertTrue(lease.releaseAfter(Duration.ofDays(2)));
    nodes.forEach(node -> assertTrue(node.received().contains("SHORTEN job PX 86400000")));
  }

  @Test
  void releaseAfterWithoutAMajorityIsNotConfirmed() {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    for (int i = 0; i < 3; i++) {
      nodes.get(i).onRelease = Answer.TAKEN;
    }
    assertFalse(lease.releaseAfter(Duration.ofMillis(1500)));
    assertFalse(lease.isValid());
  }

  @Test
  void releaseAfterNoDelayReleasesAtOnceAndSaysWhetherTheLeaseStillHeld() {
    build(3);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    assertTrue(lease.releaseAfter(Duration.ofNanos(999_999)), "under 1 ms: released now");
    nodes.forEach(node -> assertEquals(List.of("RELEASE job"), node.received().subList(1, 2)));
    assertEquals(0, redlock.leasesHeld());
    Lease expired = redlock.tryAcquire("other", TTL).orElseThrow();
    ticker.advance(TTL);
    assertFalse(expired.releaseAfter(Duration.ZERO), "it no longer held");
    assertEquals(1, sent(0, "RELEASE other"));
  }

  @Test
  void eachMastersFinalAnswerIsToldWithItsExactFailure() throws InterruptedException {
    build(7);
    for (int i = 4; i < 7; i++) {
      nodes.get(i).onSet = Answer.TAKEN; // never ours: their failed releases are final at once
    }
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    nodes.get(4).onRelease = Answer.FAIL;
    nodes.get(5).whenReleased =
        () -> {
          throw new IllegalStateException();
        };
    nodes.get(6).whenReleased =
        () -> {
          throw new IllegalStateException("boom");
        };
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    for (int i = 0; i < 4; i++) {
      assertEquals(
          new NodeOutcome("127.0.0.1:700" + i, Status.GRANTED, Duration.ZERO, ""), outcomes.get(i));
    }
    assertEquals(Status.FAILED, outcomes.get(4).status());
    assertEquals("refused", outcomes.get(4).detail());
    assertEquals("IllegalStateException", outcomes.get(5).detail());
    assertEquals("IllegalStateException: boom", outcomes.get(6).detail());
    assertEquals(Duration.ZERO, completedAfter.poll(), "the fake clock did not move");
    redlock.awaitEventsTold();
    assertTrue(completed.isEmpty(), "told once, when every master had answered");
  }

  @Test
  void aMasterRetriedAfterALostAcquireSaysBoth() throws InterruptedException {
    build(5);
    nodes.get(3).nextSets.add(Answer.LOST);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    nodes.get(3).nextReleases.add(Answer.FAIL);
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals(Status.GRANTED, outcomes.get(3).status());
    assertEquals("sent 2 times, sent again after a lost acquire", outcomes.get(3).detail());
    assertEquals(3, sent(3, "RELEASE"));
    assertEquals("", outcomes.get(2).detail());
    List<Thread> retrying =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().startsWith("redlock-releases-"))
            .toList();
    assertFalse(retrying.isEmpty(), "a retry thread was started");
    retrying.forEach(t -> assertTrue(t.isDaemon(), t + " must not keep the JVM alive"));
  }

  @Test
  void failureOfTheFirstMasterToAnswerIsTold() throws InterruptedException {
    build(3);
    nodes.get(0).onSet = Answer.TAKEN; // never ours: its failed release is final at once
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    nodes.get(0).onRelease = Answer.FAIL;
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals("refused", outcomes.get(0).detail());
    assertEquals("", outcomes.get(1).detail());
  }

  @Test
  void failedReleasesBackOffFrom100MsDoubling() throws InterruptedException {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    for (int i = 0; i < 3; i++) {
      nodes.get(4).nextReleases.add(Answer.FAIL);
    }
    long start = System.nanoTime();
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    long took = System.nanoTime() - start;
    assertEquals("sent 4 times", outcomes.get(4).detail());
    // 100 + 200 + 400 ms between the four sends, at least
    assertTrue(took >= TimeUnit.MILLISECONDS.toNanos(700), took / 1_000_000 + " ms");
  }

  @Test
  void everyCommandOfALeaseCarriesItsToken() {
    build(3);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    byte[] token = nodes.get(0).tokens().get(0);
    assertTrue(lease.extend(TTL));
    nodes.forEach(node -> assertTrue(java.util.Arrays.equals(token, node.lastToken), "extend"));
    lease.fencingToken();
    nodes.forEach(node -> assertTrue(java.util.Arrays.equals(token, node.lastToken), "fence"));
    nodes.forEach(node -> node.lastToken = null);
    lease.release();
    nodes.forEach(node -> assertTrue(java.util.Arrays.equals(token, node.lastToken), "release"));
  }

  @Test
  void shorterExtendNeverBringsTheKeysExpiryForward() throws InterruptedException {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    assertTrue(lease.extend(Duration.ofSeconds(1))); // the keys set for 10 s may still live
    ticker.advance(KEYS_EXPIRE.minusNanos(1));
    nodes.get(4).nextReleases.add(Answer.FAIL);
    lease.release();
    assertEquals(Status.GRANTED, nextCompleted().get(4).status(), "sent again");
  }

  @Test
  void failedReleaseIsSentAgainUpToTheLastNanosecondTheKeyMayLive() throws InterruptedException {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    ticker.advance(KEYS_EXPIRE.minusNanos(1));
    nodes.get(4).nextReleases.add(Answer.FAIL);
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals(Status.GRANTED, outcomes.get(4).status(), outcomes::toString);
    assertEquals(2, sent(4, "RELEASE"));
  }

  @Test
  void failedReleaseIsNotSentAgainOnceTheKeyMustHaveExpired() throws InterruptedException {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    ticker.advance(KEYS_EXPIRE);
    nodes.get(4).nextReleases.add(Answer.FAIL);
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals(Status.FAILED, outcomes.get(4).status(), outcomes::toString);
    assertEquals(1, sent(4, "RELEASE"));
  }

  @Test
  void anExtendMovesTheLastMomentTheKeysMayLive() throws InterruptedException {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    ticker.advance(Duration.ofSeconds(5));
    assertTrue(lease.extend(TTL));
    ticker.advance(KEYS_EXPIRE.minusNanos(1));
    nodes.get(4).nextReleases.add(Answer.FAIL);
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals(Status.GRANTED, outcomes.get(4).status(), "sent again: " + outcomes);
  }

  @Test
  void eachVoteIsTimedFromTheStartOfItsRound() throws InterruptedException {
    build(3);
    nodes.get(1).latency = Duration.ofMillis(7);
    nodes.get(2).onSet = Answer.HANG;
    ticker.advance(Duration.ofSeconds(3)); // the round starts well after the ticker's origin
    redlock.tryAcquire("job", TTL).orElseThrow();
    List<NodeOutcome> outcomes = acquired.poll(5, TimeUnit.SECONDS);
    assertEquals(
        List.of(Duration.ZERO, Duration.ofMillis(7), Duration.ofMillis(7)),
        outcomes.stream().map(NodeOutcome::elapsed).toList());
    assertEquals(Status.PENDING, outcomes.get(2).status());
  }

  @Test
  void releaseThatNoMajorityAnswersReturnsOnceEveryMasterFailed() {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    for (int i = 0; i < 3; i++) {
      nodes.get(i).onRelease = Answer.FAIL;
    }
    lease.release(); // the fake clock stands still: only the last failure can end the round
    assertFalse(lease.isValid());
    nodes.forEach(node -> assertEquals(1, sent(nodes.indexOf(node), "RELEASE job")));
  }

  @Test
  void extendLeavingExactlyTheMinimumValidityIsRefused() {
    redlock =
        cluster.builder(5).circuitBreakers(false).minValidity(Duration.ofMillis(9898)).build();
    Lease lease = redlock.tryAcquire("job", Duration.ofSeconds(11)).orElseThrow();
    assertFalse(lease.extend(TTL), "9898 ms of validity is not more than the minimum");
    assertTrue(lease.isValid(), "the lease stands until its old deadline");
    assertTrue(lease.extend(Duration.ofMillis(10_001)));
  }

  @Test
  void lostLeaseIsCountedOffOnce() {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    redlock.tryAcquire("other", TTL).orElseThrow();
    for (int i = 0; i < 3; i++) {
      nodes.get(i).onExtend = Answer.GONE;
    }
    assertFalse(lease.extend(TTL));
    assertTrue(lease.isLost());
    assertEquals(1, redlock.leasesHeld());
    lease.release();
    assertEquals(1, redlock.leasesHeld(), "the other lease is still held");
  }

  @Test
  void leaseDescribesItselfWithoutItsToken() {
    build(3);
    Lease lease = redlock.tryAcquire("r".repeat(64), TTL).orElseThrow();
    assertEquals("r".repeat(64), lease.resource());
    assertEquals("Lease{resource=" + "r".repeat(64) + ", valid for 9898 ms}", lease.toString());
    Lease longer = redlock.tryAcquire("s".repeat(65), TTL).orElseThrow();
    assertEquals("Lease{resource=" + "s".repeat(64) + "..., valid for 9898 ms}", longer.toString());
    ticker.advance(TTL);
    assertEquals("Lease{resource=" + "r".repeat(64) + ", expired}", lease.toString());
    lease.release();
    assertEquals("Lease{resource=" + "r".repeat(64) + ", released}", lease.toString());
  }
}
