package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.Vote;
import dev.redlock.testkit.Poll;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The asynchronous wait, on scripted masters: its rounds go on until the holder lets go, a cancel
 * or a close stops them and leaves nothing pending, a grant that lands after the cancel is
 * released, a wait of zero is one round; and a lease's asynchronous calls once it expired or the
 * RedLock closed. The pauses run on the RedLock's timer in real time (a 2 ms retry delay); the fake
 * clock, which never moves by itself, keeps every wait's deadline ahead.
 */
class AsyncWaitTest {

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration LONG_WAIT = Duration.ofMinutes(5);
  private static final long BOUND_SECONDS = 10;

  private final FakeCluster cluster = new FakeCluster();
  private final List<FakeNode> nodes = cluster.nodes;
  // The node timeout runs in real time (the round's timeout is a task on the timer): 5 s, not the
  // fake cluster's 20 ms, so that no round a test holds in flight (its masters' answers hung until
  // the test completes them) times out on a loaded machine. At 20 ms, 1 run in 16 of this class
  // failed under load: 'the close waits for the round in flight ==> expected: <false> but was:
  // <true>', and 'the late grant was released ... expected: <3> but was: <6>' (the timed-out
  // round's cleanup, then the late grants' follow-through).
  private final RedLock redlock =
      cluster
          .builder(3)
          .circuitBreakers(false)
          .retryDelay(Duration.ofMillis(2))
          .nodeTimeout(Duration.ofSeconds(5))
          .build();

  @AfterEach
  void close() {
    redlock.close();
  }

  @Test
  void anAsyncWaitRetriesUntilTheHolderLetsGo() throws Exception {
    taken(true);
    CompletableFuture<Lease> waiting = redlock.acquireAsync("r", TTL, LONG_WAIT);
    await(() -> sent("SET") >= 3 * nodes.size(), "three rounds");
    assertFalse(waiting.isDone(), "held: it waits");
    assertEquals(1, redlock.pendingAcquisitions());
    taken(false);
    Lease lease = waiting.get(BOUND_SECONDS, TimeUnit.SECONDS);
    assertTrue(lease.isValid());
    assertEquals(0, redlock.pendingAcquisitions(), "granted: no longer pending");
    assertEquals(1, redlock.leasesHeld());
  }

  @Test
  void aCancelledAsyncWaitLeavesNothingPending() {
    taken(true);
    CompletableFuture<Lease> waiting = redlock.acquireAsync("r", TTL, LONG_WAIT);
    await(() -> sent("SET") >= 2 * nodes.size(), "two rounds");
    assertTrue(waiting.cancel(false));
    await(() -> redlock.pendingAcquisitions() == 0, "the cancelled wait no longer pending");
  }

  @Test
  void aGrantThatLandsAfterTheCancelIsReleased() {
    CompletableFuture<Lease> waiting = aWaitWithItsRoundInFlight();
    assertTrue(waiting.cancel(false));
    for (FakeNode node : nodes) {
      node.hanging.poll().complete(Vote.GRANTED);
    }
    await(() -> sent("RELEASE") == nodes.size(), "the late grant released on every master");
    assertEquals(0, redlock.leasesHeld());
    assertEquals(0, redlock.pendingAcquisitions());
  }

  /**
   * A wait is no longer pending when its caller's future completes: a stage of the caller's, run as
   * the future completes, counts none. (It counted one when the library's own stage, registered
   * before the caller's and so run after it, was what took it off the pending list.)
   */
  @Test
  void aWaitIsNoLongerPendingWhenItsFutureCompletes() throws Exception {
    CompletableFuture<Lease> waiting = aWaitWithItsRoundInFlight();
    CompletableFuture<Integer> pendingSeen = waiting.thenApply(l -> redlock.pendingAcquisitions());
    for (FakeNode node : nodes) {
      node.hanging.poll().complete(Vote.GRANTED);
    }
    assertEquals(
        0, pendingSeen.get(BOUND_SECONDS, TimeUnit.SECONDS), "pending, seen by the caller");
  }

  @Test
  void aCloseFailsThePendingWait() {
    taken(true);
    CompletableFuture<Lease> waiting = redlock.acquireAsync("r", TTL, LONG_WAIT);
    await(() -> sent("SET") >= nodes.size(), "a round");
    redlock.close();
    ExecutionException failed =
        assertThrows(ExecutionException.class, () -> waiting.get(BOUND_SECONDS, TimeUnit.SECONDS));
    IllegalStateException closed = assertInstanceOf(IllegalStateException.class, failed.getCause());
    assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
    assertEquals(0, redlock.pendingAcquisitions());
  }

  /** An async wait whose first round every master holds unanswered. */
  private CompletableFuture<Lease> aWaitWithItsRoundInFlight() {
    return aWaitWithItsRoundInFlight(redlock, nodes, TTL);
  }

  private static CompletableFuture<Lease> aWaitWithItsRoundInFlight(
      RedLock on, List<FakeNode> nodes, Duration ttl) {
    for (FakeNode node : nodes) {
      node.onSet = Answer.HANG;
    }
    CompletableFuture<Lease> waiting = on.acquireAsync("r", ttl, LONG_WAIT);
    await(() -> nodes.stream().allMatch(node -> node.hanging.size() == 1), "the round sent");
    return waiting;
  }

  @Test
  void aCloseWaitsForTheRoundInFlightAndReleasesItsGrantFirst() throws Exception {
    CompletableFuture<Lease> waiting = aWaitWithItsRoundInFlight();
    CompletableFuture<Long> releasesAtClose =
        CompletableFuture.supplyAsync(
            () -> {
              redlock.close();
              return sent("RELEASE");
            });
    await(() -> waiting.isDone(), "the close fails the pending wait first");
    // Still closing a while later (without its wait, the close returns within milliseconds).
    assertThrows(
        TimeoutException.class,
        () -> releasesAtClose.get(200, TimeUnit.MILLISECONDS),
        "the close waits for the round in flight");
    for (FakeNode node : nodes) {
      node.hanging.poll().complete(Vote.GRANTED);
    }
    assertEquals(
        nodes.size(),
        releasesAtClose.get(BOUND_SECONDS, TimeUnit.SECONDS),
        "the late grant was released on every master before the close returned");
    assertEquals(0, redlock.leasesHeld());
  }

  @Test
  void anInterruptedCloseStillWaitsForTheRoundInFlightAndKeepsTheInterrupt() throws Exception {
    CompletableFuture<Lease> waiting = aWaitWithItsRoundInFlight();
    CompletableFuture<Boolean> interruptedAfterClose =
        CompletableFuture.supplyAsync(
            () -> {
              Thread.currentThread().interrupt(); // as a shutdown hook's thread may be
              redlock.close();
              return Thread.interrupted();
            });
    await(() -> waiting.isDone(), "the close fails the pending wait first");
    assertThrows(
        TimeoutException.class,
        () -> interruptedAfterClose.get(200, TimeUnit.MILLISECONDS),
        "an interrupted close still waits for the round in flight");
    for (FakeNode node : nodes) {
      node.hanging.poll().complete(Vote.GRANTED);
    }
    assertTrue(
        interruptedAfterClose.get(BOUND_SECONDS, TimeUnit.SECONDS),
        "the close keeps the thread's interrupt");
    assertEquals(nodes.size(), sent("RELEASE"), "the late grant was released on every master");
    assertEquals(0, redlock.leasesHeld());
  }

  @Test
  void aCloseStopsWaitingForTheRoundInFlightOnceItsGraceIsOver() throws Exception {
    // A node timeout far beyond the test's bound: the round cannot time out while it runs.
    Duration nodeTimeout = Duration.ofMinutes(1);
    Duration ttl = Duration.ofMinutes(5);
    FakeCluster own = new FakeCluster();
    RedLock slow =
        own.builder(3).circuitBreakers(false).nodeTimeout(nodeTimeout).maxLeaseTime(ttl).build();
    CompletableFuture<Lease> waiting = aWaitWithItsRoundInFlight(slow, own.nodes, ttl);
    AtomicBoolean interruptKept = new AtomicBoolean();
    Thread closing =
        new Thread(
            () -> {
              slow.close();
              interruptKept.set(Thread.interrupted());
            },
            "closing");
    closing.setDaemon(true); // a close that never returns must not outlive the test
    closing.start();
    await(() -> waiting.isDone(), "the close fails the pending wait first");
    await(
        () -> closing.getState() == Thread.State.TIMED_WAITING,
        "the close waiting for the round in flight");
    // Its grace (the node timeout and 1 s) over on the RedLock's clock, to the nanosecond; the
    // interrupt cuts the close's pause short, so it looks at the clock again now.
    own.ticker.advance(nodeTimeout.plusSeconds(1));
    closing.interrupt();
    closing.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
    // The masters never answer: the round is still in flight.
    assertFalse(closing.isAlive(), "a close whose grace is over returns");
    assertTrue(interruptKept.get(), "and keeps the thread's interrupt");
  }

  @Test
  void aWaitEndsWithTheFirstRoundDecidedAtItsDeadline() {
    taken(true);
    Duration wait = Duration.ofSeconds(1);
    CompletableFuture<Lease> waiting = redlock.acquireAsync("r", TTL, wait);
    await(() -> sent("SET") >= nodes.size(), "a round");
    cluster.ticker.advance(wait); // the deadline, to the nanosecond
    ExecutionException failed =
        assertThrows(ExecutionException.class, () -> waiting.get(BOUND_SECONDS, TimeUnit.SECONDS));
    assertInstanceOf(LockTakenException.class, failed.getCause());
  }

  @Test
  void anAsyncTryIsOneRound() throws Exception {
    taken(true);
    Optional<Lease> none = redlock.tryAcquireAsync("r", TTL).get(BOUND_SECONDS, TimeUnit.SECONDS);
    assertTrue(none.isEmpty());
    assertEquals(nodes.size(), sent("SET"), "one round, one SET per master");
  }

  @Test
  void anExpiredLeasesAsyncExtendAnswersFalseAndSendsNothing() throws Exception {
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    cluster.ticker.advance(TTL.plusMillis(1));
    assertFalse(lease.extendAsync(TTL).get(BOUND_SECONDS, TimeUnit.SECONDS));
    assertEquals(0, sent("EXTEND"));
  }

  @Test
  void afterTheCloseALeasesAsyncCallsRunAsTheBlockingOnesDo() throws Exception {
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    Lease other = redlock.tryAcquire("s", TTL).orElseThrow();
    redlock.close();
    lease.releaseAsync().get(BOUND_SECONDS, TimeUnit.SECONDS); // never exceptionally
    assertFalse(lease.isValid(), "released");
    CompletableFuture<Boolean> extended = other.extendAsync(TTL);
    assertTrue(extended.isDone(), "answered on the caller's thread");
  }

  @Test
  void anAsyncReleaseCompletesOnceAMajorityAnsweredAndTellsTheListener() throws Exception {
    List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
    FakeCluster other = new FakeCluster();
    try (RedLock listened =
        other
            .builder(3)
            .nodeTimeout(Duration.ofSeconds(5)) // the round's deadline, in real time here
            .circuitBreakers(false)
            .listener(
                new RedLockListener() {
                  @Override
                  public void released(
                      String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                    heard.add(resource + " " + outcomes.size());
                  }
                })
            .build()) {
      Lease lease = listened.tryAcquire("r", TTL).orElseThrow();
      for (FakeNode node : other.nodes) {
        node.onRelease = Answer.HANG;
      }
      CompletableFuture<Void> released = lease.releaseAsync();
      await(
          () -> other.nodes.stream().allMatch(n -> n.hanging.size() == 1), "sent to every master");
      listened.awaitEventsTold();
      assertFalse(released.isDone(), "no master answered yet");
      other.nodes.get(0).hanging.poll().complete(Vote.GRANTED);
      listened.awaitEventsTold();
      assertFalse(released.isDone(), "one of three is no majority");
      other.nodes.get(1).hanging.poll().complete(Vote.GRANTED);
      released.get(BOUND_SECONDS, TimeUnit.SECONDS);
      await(() -> heard.equals(List.of("r 3")), "the listener hears the release: " + heard);
      other.nodes.get(2).hanging.poll().complete(Vote.GRANTED);
    }
  }

  private void taken(boolean taken) {
    for (FakeNode node : nodes) {
      node.onSet = taken ? Answer.TAKEN : Answer.GRANT;
    }
  }

  private long sent(String command) {
    return nodes.stream()
        .flatMap(node -> node.received().stream())
        .filter(line -> line.startsWith(command))
        .count();
  }

  /** Polls {@code done} until it holds; fails after the bound. */
  private static void await(BooleanSupplier done, String what) {
    Poll.until(Duration.ofSeconds(BOUND_SECONDS), done, () -> what);
  }
}
