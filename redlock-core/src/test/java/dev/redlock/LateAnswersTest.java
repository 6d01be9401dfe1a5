package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.Vote;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Answers that arrive on another thread after the round's caller started waiting (the fakes
 * otherwise answer on the caller's thread): they decide the round then and there. The node timeout
 * is 5 s and the fake clock stands still, so a caller woken only by its timed park would take 5 s.
 */
class LateAnswersTest {

  private static final Duration NODE_TIMEOUT = Duration.ofSeconds(5);
  private static final Duration TTL = Duration.ofSeconds(30); // validity 29698 ms

  private final FakeCluster cluster = new FakeCluster();
  private final FakeTicker ticker = cluster.ticker;
  private final List<FakeNode> nodes = cluster.nodes;
  private RedLock redlock;

  @AfterEach
  void close() {
    nodes.forEach(node -> node.hanging.forEach(answer -> answer.complete(Vote.GRANTED)));
    if (redlock != null) {
      redlock.close();
    }
  }

  private RedLock build(int n) {
    redlock = cluster.builder(n).nodeTimeout(NODE_TIMEOUT).circuitBreakers(false).build();
    return redlock;
  }

  @Test
  void answerThatDecidesTheRoundWakesTheWaitingCallerAtOnce() throws Exception {
    build(3);
    nodes.get(1).onSet = Answer.HANG;
    nodes.get(2).onSet = Answer.HANG;
    Thread caller = Thread.currentThread();
    long[] answeredAt = new long[1];
    Thread answering =
        new Thread(
            () -> {
              // gives up after 10 s: the caller then finds the round decided too early
              poll(() -> parked(caller) && !nodes.get(1).hanging.isEmpty());
              answeredAt[0] = System.nanoTime();
              nodes.get(1).hanging.poll().complete(Vote.GRANTED);
            });
    answering.start();
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    long woke = System.nanoTime();
    answering.join();
    assertTrue(lease.isValid());
    assertTrue(
        woke - answeredAt[0] < TimeUnit.SECONDS.toNanos(2),
        "woken by the answer, not by the 5 s park: " + (woke - answeredAt[0]) / 1_000_000 + " ms");
    assertFalse(Thread.interrupted(), "no interrupt made up");
  }

  @Test
  void interruptPendingDuringARoundIsKeptForTheCaller() throws Exception {
    build(3);
    nodes.get(1).onSet = Answer.HANG;
    nodes.get(2).onSet = Answer.HANG;
    Thread caller = Thread.currentThread();
    Thread answering =
        new Thread(
            () -> {
              poll(() -> parked(caller) && !nodes.get(1).hanging.isEmpty());
              nodes.get(1).hanging.poll().complete(Vote.GRANTED);
            });
    answering.start();
    caller.interrupt(); // the round's park returns at once, and must park again
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    boolean kept = Thread.interrupted(); // read (and cleared) before join, which it would end
    answering.join();
    assertTrue(kept, "the round is not interruptible: the interrupt is kept");
    assertTrue(lease.isValid());
  }

  @Test
  void renewalDecidedByAnswersThatCameLaterMovesTheDeadline() {
    build(5);
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    nodes.forEach(node -> node.onExtend = Answer.HANG);
    ticker.advance(Duration.ofSeconds(20)); // 9698 ms left, under a third: due now
    redlock.renew(lease, TTL.toMillis());
    await(() -> nodes.get(2).hanging.size() == 1, "the extend sent");
    assertEquals(1, redlock.renewalsInFlight());
    for (int i = 0; i < 3; i++) {
      nodes.get(i).hanging.poll().complete(Vote.GRANTED);
    }
    await(() -> lease.remainingValidity().equals(Duration.ofMillis(29_698)), "deadline moved");
    await(() -> redlock.renewalsInFlight() == 0, "the round ended");
  }

  private static boolean parked(Thread thread) {
    return thread.getState() == Thread.State.TIMED_WAITING;
  }

  /** Polls {@code condition} for up to 10 s; returns whether it came true. */
  private static boolean poll(BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(200));
    }
    return true;
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
