package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.lease.Arguments;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.LockKey;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The bounded and unbounded waits for a lock held by others: pauses, deadline, interrupts. */
class AcquireWaitTest {

  private static final Duration TTL = Duration.ofMillis(1000);

  private final FakeCluster cluster = new FakeCluster();
  private final List<FakeNode> nodes = cluster.nodes;
  private RedLock redlock;

  private RedLock build(Duration retryDelay) {
    redlock = cluster.builder(3).circuitBreakers(false).retryDelay(retryDelay).build();
    return redlock;
  }

  @AfterEach
  void close() {
    if (redlock != null) {
      redlock.close();
    }
  }

  /**
   * The next {@code rounds} rounds fail: master 0 grants, the others refuse. So each round's
   * cleanup releases master 0 (where it took the key), on the waiting thread, after the round and
   * before the pause: the moment its {@code whenReleased} acts in.
   */
  private void takenFor(int rounds) {
    for (FakeNode node : nodes) {
      for (int i = 0; i < rounds; i++) {
        node.nextSets.add(node == nodes.get(0) ? Answer.GRANT : Answer.TAKEN);
      }
    }
  }

  private int rounds() {
    return nodes.get(0).tokens().size();
  }

  @Test
  void roundsOfAWaitArePausedByAtLeastHalfTheRetryDelay() throws InterruptedException {
    build(Duration.ofMillis(100));
    takenFor(2);
    long start = System.nanoTime();
    Lease lease = redlock.acquire("r", TTL, Duration.ofSeconds(30));
    long took = System.nanoTime() - start;
    assertTrue(lease.isValid());
    assertEquals(3, rounds());
    // Each pause is uniform in [50, 150) ms: two of them take at least 100 ms.
    assertTrue(took >= TimeUnit.MILLISECONDS.toNanos(100), "paused " + took / 1_000_000 + " ms");
  }

  @Test
  void waitThatRunsOutDuringARoundEndsWithThatRound() {
    build(Duration.ofMillis(1));
    takenFor(2);
    nodes.get(0).latency = Duration.ofMillis(30); // the round takes the whole wait, exactly
    assertThrows(LockTakenException.class, () -> redlock.acquire("r", TTL, Duration.ofMillis(30)));
    assertEquals(1, rounds(), "no round once nothing of the wait is left");
  }

  /**
   * The first round of a wait is not sent to two masters: this client's own queue to them is full.
   * Every later round finds the lock held, until the wait runs out.
   */
  private void heldBackThenTaken() {
    cluster.ticker.autoAdvance(Duration.ofMillis(1));
    for (FakeNode node : nodes) {
      node.onSet = Answer.TAKEN;
    }
    nodes.get(1).nextSets.add(Answer.QUEUE_FULL);
    nodes.get(2).nextSets.add(Answer.QUEUE_FULL);
  }

  @Test
  void aWaitThatRunsOutNamesTheClientsOwnLimitIfItHeldARoundBack() {
    build(Duration.ofMillis(1));
    heldBackThenTaken();
    LockTakenException e =
        assertThrows(
            LockTakenException.class, () -> redlock.acquire("r", TTL, Duration.ofMillis(50)));
    assertTrue(rounds() > 1, "the last round was not the one held back");
    assertTrue(e.getMessage().contains("held by another client"), e.getMessage());
    assertTrue(
        e.getMessage().contains("some rounds of the wait were not sent to 1 master (127.0.0.1:700")
            && e.getMessage().contains("this client's own queue to the master is full")
            && e.getMessage().contains("this client's limit, not the master's"),
        e.getMessage());
  }

  @Test
  void anAsyncWaitThatRunsOutNamesTheClientsOwnLimitIfItHeldARoundBack() {
    build(Duration.ofMillis(1));
    heldBackThenTaken();
    CompletionException e =
        assertThrows(
            CompletionException.class,
            () -> redlock.acquireAsync("r", TTL, Duration.ofMillis(50)).join());
    assertTrue(rounds() > 1, "the last round was not the one held back");
    assertTrue(e.getCause() instanceof LockTakenException, String.valueOf(e.getCause()));
    assertTrue(
        e.getCause().getMessage().contains("this client's own queue to the master is full"),
        e.getCause().getMessage());
  }

  @Test
  void aWaitThatRunsOutWithNothingHeldBackBlamesOnlyTheHolder() {
    build(Duration.ofMillis(1));
    cluster.ticker.autoAdvance(Duration.ofMillis(1));
    for (FakeNode node : nodes) {
      node.onSet = Answer.TAKEN;
    }
    LockTakenException e =
        assertThrows(
            LockTakenException.class, () -> redlock.acquire("r", TTL, Duration.ofMillis(50)));
    assertTrue(e.getMessage().contains("held by another client"), e.getMessage());
    assertFalse(e.getMessage().contains("own queue"), e.getMessage());
  }

  @Test
  void interruptDuringAWaitThrowsAndLeavesNothingLocked() {
    build(Duration.ofMillis(1));
    takenFor(1);
    nodes.get(0).whenReleased = () -> Thread.currentThread().interrupt(); // the round's cleanup
    assertThrows(
        InterruptedException.class, () -> redlock.acquire("r", TTL, Duration.ofSeconds(30)));
    assertFalse(Thread.interrupted(), "InterruptedException clears the flag");
    assertEquals(1, rounds());
  }

  @Test
  void uninterruptibleWaitKeepsTheInterruptForTheCaller() throws InterruptedException {
    build(Duration.ofMillis(1));
    takenFor(2);
    nodes.get(0).whenReleased = () -> Thread.currentThread().interrupt();
    Lease lease =
        redlock.retry(
            "r",
            LockKey.of(Arguments.resourceKey("r")),
            TTL.toMillis(),
            Long.MAX_VALUE, /* interruptible */
            false);
    nodes.get(0).whenReleased = () -> {};
    assertTrue(Thread.interrupted(), "the interrupt is kept pending");
    assertNotNull(lease);
    assertEquals(3, rounds(), "the interrupt did not stop the wait");
  }

  @Test
  void uninterruptibleWaitWithoutAnInterruptLeavesTheFlagClear() throws InterruptedException {
    build(Duration.ofMillis(1));
    takenFor(2);
    Lease lease =
        redlock.retry(
            "r", LockKey.of(Arguments.resourceKey("r")), TTL.toMillis(), Long.MAX_VALUE, false);
    assertNotNull(lease);
    assertFalse(Thread.interrupted());
  }

  @Test
  void closingWhileWaitingEndsTheWait() {
    build(Duration.ofMillis(1));
    takenFor(100);
    nodes.get(0).whenReleased = () -> redlock.close();
    assertThrows(
        IllegalStateException.class, () -> redlock.acquire("r", TTL, Duration.ofSeconds(30)));
    assertEquals(1, rounds(), "no round after the close");
  }

  @Test
  void renewingAfterCloseIsRefused() {
    build(Duration.ofMillis(1));
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    redlock.close();
    assertThrows(IllegalStateException.class, () -> redlock.renew(lease, TTL.toMillis()));
    assertEquals(0, redlock.renewalsInFlight());
  }

  @Test
  void aFencedAcquireReadsTheFenceCounterAndAnUnfencedOneDoesNot() {
    build(Duration.ofMillis(1));
    redlock.tryAcquire("r", TTL).orElseThrow().release();
    assertTrue(nodes.get(0).lastFenced, "fencing on: the counter is read");
    redlock.close();
    nodes.clear();
    redlock = cluster.builder(3).fencing(false).restartGuard(false).build();
    redlock.tryAcquire("r", TTL).orElseThrow().release();
    assertFalse(nodes.get(0).lastFenced, "no fencing: no counter");
    assertEquals(0, nodes.get(0).lastGuardMillis, "no guard");
  }
}
