package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.testkit.Poll;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Releases that finish: late answers told, failed ones sent again, lost acquires followed. */
class ReleasesTest {

  private static final Duration TTL = Duration.ofSeconds(10);

  private final FakeCluster cluster = new FakeCluster();
  private final List<FakeNode> nodes = cluster.nodes;
  private final BlockingQueue<List<NodeOutcome>> completed = new LinkedBlockingQueue<>();
  private final BlockingQueue<Thread> completedOn = new LinkedBlockingQueue<>();
  private RedLock redlock;

  private void build() {
    redlock =
        cluster
            .builder(5)
            .listener(
                new RedLockListener() {
                  @Override
                  public void releaseCompleted(
                      String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                    completedOn.add(Thread.currentThread());
                    completed.add(outcomes);
                  }
                })
            .build();
  }

  @AfterEach
  void close() {
    redlock.close();
  }

  @Test
  void aPlainReleaseReportsEachMastersAnswerWithFewerThanThreeMastersAndForASet()
      throws InterruptedException {
    redlock = cluster.builder(2).listener(completedListener()).build(); // no gate under three
    redlock.tryAcquire("r", TTL).orElseThrow().release();
    assertEquals(List.of(Status.GRANTED, Status.GRANTED), votes(nextCompleted()));
    redlock.close();

    FakeCluster five = new FakeCluster();
    redlock = five.builder(5).listener(completedListener()).build();
    redlock.tryAcquireAll(List.of("a", "b"), TTL).orElseThrow().release(); // a set: no gate
    assertEquals(Collections.nCopies(5, Status.GRANTED), votes(nextCompleted()));
  }

  private RedLockListener completedListener() {
    return new RedLockListener() {
      @Override
      public void releaseCompleted(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
        completed.add(outcomes);
      }
    };
  }

  private static List<Status> votes(List<NodeOutcome> outcomes) {
    return outcomes.stream().map(NodeOutcome::status).toList();
  }

  private List<NodeOutcome> nextCompleted() throws InterruptedException {
    List<NodeOutcome> outcomes = completed.poll(5, TimeUnit.SECONDS);
    assertTrue(outcomes != null, "releaseCompleted within 5 s");
    return outcomes;
  }

  private long releasesReceived(int node) {
    return nodes.get(node).received().stream().filter(s -> s.startsWith("RELEASE")).count();
  }

  @Test
  void aReleaseThatFailedOnAMasterHoldingTheKeyIsSentAgainUntilItIsAnswered() throws Exception {
    build();
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    nodes.get(4).nextReleases.add(Answer.FAIL);
    nodes.get(4).nextReleases.add(Answer.FAIL);
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals(Status.GRANTED, outcomes.get(4).status(), outcomes::toString);
    assertTrue(outcomes.get(4).detail().contains("sent 3 times"), outcomes.get(4).detail());
    assertEquals(3, releasesReceived(4));
    for (int i = 0; i < 4; i++) {
      assertEquals(Status.GRANTED, outcomes.get(i).status());
      assertEquals(1, releasesReceived(i), "answered the first time: sent once");
    }
    assertTrue(completedOn.take().getName().startsWith("redlock-events-"), "on the event thread");
  }

  @Test
  void aMasterWhoseAcquireWasLostInFlightGetsASecondReleaseOnceTheFirstIsAnswered()
      throws Exception {
    build();
    nodes.get(3).nextSets.add(Answer.LOST); // its SET was written, then the connection dropped
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals(2, releasesReceived(3), "the second release follows the first");
    assertEquals("sent again after a lost acquire", outcomes.get(3).detail());
    assertEquals(1, releasesReceived(2));
  }

  @Test
  void aMasterThatNeverHeldTheKeyIsNotRetried() throws Exception {
    build();
    nodes.get(4).nextSets.add(Answer.TAKEN); // someone else's key there: ours never was
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    nodes.get(4).onRelease = Answer.FAIL;
    lease.release();
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals(Status.FAILED, outcomes.get(4).status());
    assertEquals(1, releasesReceived(4));
  }

  @Test
  void retriesEndOnceEveryKeyMustHaveExpired() throws Exception {
    build();
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    nodes.get(4).onRelease = Answer.FAIL;
    lease.release();
    // The keys were set with a 10 s TTL: past it (and the drift allowance), nothing is retried.
    cluster.ticker.advance(Duration.ofSeconds(11));
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals(Status.FAILED, outcomes.get(4).status(), outcomes::toString);
    long sent = releasesReceived(4);
    assertTrue(sent >= 1 && sent <= 3, "a retry or two at most before the deadline: " + sent);
  }

  @Test
  void closingEndsTheReleasesStillFollowed() throws Exception {
    build();
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    nodes.get(4).onRelease = Answer.FAIL;
    lease.release();
    redlock.close();
    List<NodeOutcome> outcomes = nextCompleted();
    assertEquals(Status.FAILED, outcomes.get(4).status());
    // Its retry was planned, never sent: the detail counts the one send there was.
    assertEquals("the RedLock was closed first", outcomes.get(4).detail());
  }

  @Test
  void theCleanupOfAFailedAcquireIsRetriedWhereTheSetMayHaveRun() throws Exception {
    build();
    nodes.get(0).onSet = Answer.TAKEN;
    nodes.get(1).onSet = Answer.TAKEN;
    nodes.get(2).onSet = Answer.TAKEN;
    nodes.get(3).nextReleases.add(Answer.FAIL); // granted to us, and its cleanup fails once
    assertTrue(redlock.tryAcquire("job", TTL).isEmpty());
    Poll.until("the cleanup sent again to master 3", () -> releasesReceived(3) == 2);
    assertEquals(0, releasesReceived(0), "master 0 refused: it never held our key, nothing sent");
  }
}
