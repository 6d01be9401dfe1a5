package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.Vote;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The wait engine on a fake clock with fixed randomness: each of its decisions (the hand-off pause
 * first, the retry pause around its mean, never past the deadline, the last round's finish with
 * what earlier rounds held back, one round for a try) to the nanosecond, with no real time and no
 * thread. The blocking and the asynchronous API both carry these decisions out (their ITs and
 * AsyncWaitTest show they do).
 */
class WaitTest {

  private static final long RETRY_DELAY = Duration.ofMillis(50).toNanos();
  private static final long JITTER = Duration.ofMillis(7).toNanos();
  private static final byte[] KEY = "r".getBytes(StandardCharsets.UTF_8);
  private static final List<String> NAMES = List.of("a:1", "b:2", "c:3");

  private final FakeTicker ticker = new FakeTicker();
  private final Wakeups wakeups = new Wakeups(ticker, RETRY_DELAY, true, listener -> List.of());
  private final Masters masters = FakeMasters.of(new ArrayList<>(), List.of(), ticker);
  private final List<Attempt> told = new ArrayList<>();

  @AfterEach
  void close() {
    wakeups.close();
  }

  /** The turn of the wait last made. */
  private Turn turn;

  /** A wait of {@code waitNanos} whose jitter is always {@link #JITTER} (bounded by its bound). */
  private Wait waitOf(long waitNanos) {
    turn = new Turn(masters, LockKey.of(KEY), RETRY_DELAY, false, "0123456789abcdef");
    return new Wait(
        wakeups,
        turn,
        LockKey.of(KEY),
        waitNanos,
        RETRY_DELAY,
        ticker,
        bound -> Math.min(JITTER, bound - 1),
        told::add);
  }

  private static Attempt refused(Vote vote, String detail) {
    List<Outcome> outcomes = new ArrayList<>();
    for (String name : NAMES) {
      outcomes.add(new Outcome(name, vote, 0, detail));
    }
    return new Attempt(null, outcomes, false);
  }

  /**
   * The same engine on the polling port ({@code wakeUps(false)}): no hand-off pause even right
   * after a release to waiters, no queuing round at once, and pauses that only the timer ends, each
   * the retry delay's half plus its jitter, split votes or not.
   */
  @Test
  void onThePollingPortEveryPauseIsTheTimersAndNothingQueues() {
    try (Contention polling = Contention.polling()) {
      Wait wait = waitOn(polling, polling.turn(masters, LockKey.of(KEY), RETRY_DELAY));
      assertInstanceOf(Wait.Round.class, wait.start(), "no hand-off pause");
      for (Vote vote : List.of(Vote.TAKEN, Vote.GRANTED, Vote.TAKEN)) {
        wait.beforeRound();
        Wait.Pause pause =
            assertInstanceOf(Wait.Pause.class, wait.decided(refused(vote, "")), "never at once");
        assertEquals(RETRY_DELAY / 2 + JITTER, pause.nanos());
        assertNull(pause.wake(), "no notice ends it");
        assertSame(Wait.State.RETRYING, wait.state());
      }
      wait.close();
    }
  }

  @Test
  void aRefusedRoundPausesHalfTheRetryDelayPlusItsJitterAndTellsTheStallLog() {
    Wait wait = waitOf(Duration.ofSeconds(10).toNanos());
    assertInstanceOf(Wait.Round.class, wait.start(), "no hand-off due: the first round at once");
    assertSame(Wait.State.FIRST_ROUND, wait.state());
    Attempt taken = refused(Vote.TAKEN, "");
    Wait.Pause pause = assertInstanceOf(Wait.Pause.class, wait.decided(taken));
    assertEquals(RETRY_DELAY / 2 + JITTER, pause.nanos());
    assertNotNull(pause.wake(), "a notice ends it early");
    assertSame(Wait.State.RETRYING, wait.state());
    assertEquals(List.of(taken), told, "the stall log hears each refused round");
  }

  @Test
  void noPauseRunsPastTheDeadline() {
    Wait wait = waitOf(Duration.ofMillis(100).toNanos());
    ticker.advance(Duration.ofMillis(90));
    Wait.Pause pause = assertInstanceOf(Wait.Pause.class, wait.decided(refused(Vote.TAKEN, "")));
    assertEquals(Duration.ofMillis(10).toNanos(), pause.nanos(), "what is left, not the delay");
  }

  @Test
  void theLastRoundFinishesWithTheLatestMasterThisClientsLimitHeldBack() {
    Wait wait = waitOf(Duration.ofMillis(100).toNanos());
    Attempt limited =
        refused(Vote.FAILED, "this client's own queue to the master is full (512 commands)");
    wait.decided(limited);
    ticker.advance(Duration.ofMillis(100)); // the deadline, to the nanosecond
    Wait.Finish finish = assertInstanceOf(Wait.Finish.class, wait.decided(refused(Vote.TAKEN, "")));
    assertNull(finish.attempt().grant());
    assertEquals(limited.outcomes().get(0), finish.attempt().heldBack());
    assertSame(Wait.State.DONE, wait.state());
    assertEquals(1, told.size(), "the last round ends the wait: no stall to tell");
  }

  @Test
  void aTryIsOneRoundWithoutTheHandOffPause() {
    wakeups.releasedToWaiters(KEY);
    Wait wait = waitOf(0);
    assertInstanceOf(Wait.Round.class, wait.start(), "a try does not pause for waiters");
    assertInstanceOf(Wait.Finish.class, wait.decided(refused(Vote.TAKEN, "")));
  }

  @Test
  void afterAReleaseWaitersHeardTheWaitPausesForTheHandOffFirst() {
    wakeups.releasedToWaiters(KEY);
    Wait wait = waitOf(Duration.ofSeconds(10).toNanos());
    Wait.Pause pause = assertInstanceOf(Wait.Pause.class, wait.start());
    assertEquals(Wakeups.MIN_HAND_OFF_NANOS, pause.nanos(), "no round measured: the least pause");
    assertNull(pause.wake(), "only the time ends it");
  }

  @Test
  void theHandOffPauseIsCutToTheWaitsTime() {
    wakeups.releasedToWaiters(KEY);
    Wait wait = waitOf(Wakeups.MIN_HAND_OFF_NANOS / 2);
    Wait.Pause pause = assertInstanceOf(Wait.Pause.class, wait.start());
    assertEquals(Wakeups.MIN_HAND_OFF_NANOS / 2, pause.nanos());
  }

  @Test
  void aGrantFinishesAtOnceEvenAfterRefusals() {
    Wait wait = waitOf(Duration.ofSeconds(10).toNanos());
    wait.decided(refused(Vote.TAKEN, ""));
    long deadline = ticker.read() + Duration.ofSeconds(10).toNanos();
    Grant grant = new Grant(null, "r", LockKey.of(KEY), KEY, deadline, 1, null, deadline);
    Attempt granted = new Attempt(grant, List.of(), false);
    Wait.Finish finish = assertInstanceOf(Wait.Finish.class, wait.decided(granted));
    assertSame(granted, finish.attempt());
    assertSame(Wait.State.DONE, wait.state());
  }

  @Test
  void theCloseEndsTheWaitAndCanComeTwice() {
    Wait wait = waitOf(Duration.ofSeconds(10).toNanos());
    wait.decided(refused(Vote.TAKEN, ""));
    assertTrue(turn.wanted());
    wait.close();
    assertFalse(turn.wanted(), "the turn left: a late gate opens no round, the queue is left");
    assertSame(Wait.State.DONE, wait.state());
    wait.close();
    assertSame(Wait.State.DONE, wait.state());
  }

  // ---- with wake-ups heard: a group that notices wake

  /** Wake-ups whose waiters are heard (links that never connect: notices come by hand). */
  private Wakeups hearing() {
    return new Wakeups(ticker, RETRY_DELAY, true, listener -> DeafListener.deafLinks(3));
  }

  private Wait waitOn(Wakeups on) {
    return waitOn(on, new Turn(masters, LockKey.of(KEY), RETRY_DELAY, false, "0123456789abcdef"));
  }

  /** A wait of 10 s on {@code on}, in {@code turn}, whose jitter is always {@link #JITTER}. */
  private Wait waitOn(Contention on, Turn turn) {
    this.turn = turn;
    return new Wait(
        on,
        turn,
        LockKey.of(KEY),
        Duration.ofSeconds(10).toNanos(),
        RETRY_DELAY,
        ticker,
        bound -> Math.min(JITTER, bound - 1),
        told::add);
  }

  /** A round some masters granted: woken with others, the votes split. */
  private static Attempt split() {
    List<Outcome> outcomes = new ArrayList<>();
    outcomes.add(new Outcome(NAMES.get(0), Vote.GRANTED, 0, ""));
    outcomes.add(new Outcome(NAMES.get(1), Vote.TAKEN, 0, ""));
    outcomes.add(new Outcome(NAMES.get(2), Vote.TAKEN, 0, ""));
    return new Attempt(null, outcomes, false);
  }

  /**
   * A woken waiter whose votes split pauses a random part of two rounds (at first 2 x 500 us), the
   * part doubling with each split in a row, a notice ending it early; a round refused outright
   * starts the count again, with the retry pause.
   */
  @Test
  void aWokenWaiterWhoseVotesSplitSpreadsItsRetriesDoublingTheSpread() {
    try (Wakeups heard = hearing()) {
      Wait wait = waitOn(heard);
      wait.start();
      wait.beforeRound();
      assertInstanceOf(Wait.Pause.class, wait.decided(refused(Vote.TAKEN, "")));
      assertSame(Wait.State.RETRYING, wait.state(), "refused outright: the retry pause");
      long first = 2 * heard.rounds().nanos();
      for (int i = 0; i < 3; i++) {
        wait.beforeRound();
        Wait.Pause pause = assertInstanceOf(Wait.Pause.class, wait.decided(split()));
        assertSame(Wait.State.SPREADING, wait.state());
        assertEquals((first << i) - 1, pause.nanos(), "split " + (i + 1) + " in a row");
        assertNotNull(pause.wake(), "a notice ends the spread too");
      }
      wait.beforeRound();
      Wait.Pause retry = assertInstanceOf(Wait.Pause.class, wait.decided(refused(Vote.TAKEN, "")));
      assertSame(Wait.State.RETRYING, wait.state());
      assertEquals(RETRY_DELAY / 2 + JITTER, retry.nanos());
      wait.beforeRound();
      Wait.Pause again = assertInstanceOf(Wait.Pause.class, wait.decided(split()));
      assertEquals(first - 1, again.nanos(), "the refusal ended the run of splits");
    }
  }

  /**
   * A close that comes while the driver's round is out, before the wait entered the resource's
   * wake-up group: the round's refusal enters the group, and leaves it at once (the close could not
   * see it). Else the group would stay subscribed with no one to leave it.
   */
  @Test
  void aCloseBeforeTheWaitEnteredItsGroupStillLeavesIt() {
    try (Wakeups heard = hearing()) {
      Wait wait = waitOn(heard);
      wait.start();
      wait.beforeRound();
      wait.close(); // a cancel, on another thread, while the first round is out
      wait.decided(refused(Vote.TAKEN, ""));
      assertEquals(0, heard.subscribed(), "the group entered after the close was left");
    }
  }
}
