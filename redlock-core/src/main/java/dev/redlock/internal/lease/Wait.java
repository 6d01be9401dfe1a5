package dev.redlock.internal.lease;

import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.Ticker;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * The wait engine: one acquisition's wait for a lock, as one state machine that both the blocking
 * and the asynchronous API drive. It decides; its driver only carries out what it decides, the
 * blocking one by parking the caller's thread ({@link Coordinator#retry}), the asynchronous one by
 * a task on the async timer ({@link AsyncLeases}). So every contention rule (the hand-off pause,
 * queuing at the gate at once, the split back-off, the retry delay, the deadline) is written once.
 *
 * <p>The states, in {@link #state()}: {@link State#FIRST_ROUND} (not yet refused: no wake-up group
 * entered, not queued), {@link State#QUEUED} (refused once: in the resource's wake-up group, and
 * queued at its gate if it has one), {@link State#SPREADING} (woken with others whose votes split,
 * or named and overtaken: pausing a random part of a few rounds), {@link State#RETRYING} (pausing
 * until a notice or the retry delay), {@link State#DONE}. The events: a round decided ({@link
 * #decided}), the pause's end (a notice, the timer; the driver's), a cancel or a close ({@link
 * #close}). Each decision is a {@link Step}: send a round now, pause first, or finish.
 *
 * <p>Its clock and its randomness are parameters ({@link Ticker}, {@link Jitter}), so that a test,
 * or a simulation, can drive it on virtual time. Not thread-safe but for {@link #close}, which may
 * race the driver's thread: the driver calls everything else from one thread at a time (the
 * caller's, or the timer's, handing over through a future).
 */
final class Wait {

  /** Where a wait is. */
  enum State {
    /** The first round, not yet refused. */
    FIRST_ROUND,
    /** Refused once: in the wake-up group, queued at the gate if it has one. */
    QUEUED,
    /** Pausing a random part of a few rounds: woken with others whose votes split. */
    SPREADING,
    /** Pausing until a notice or the retry delay. */
    RETRYING,
    /** Finished: granted, out of time, or closed. */
    DONE
  }

  /** What the driver does next. */
  sealed interface Step permits Round, Pause, Finish {}

  /** Send the next round now. */
  record Round() implements Step {}

  /**
   * Pause, then send the next round: after {@code nanos}, or as soon as {@code wake} (if not null,
   * a notice of a release) completes.
   *
   * @param nanos the longest pause
   * @param wake ends the pause early; null: only the time does
   */
  record Pause(long nanos, CompletableFuture<Void> wake) implements Step {}

  /**
   * The wait is over: {@code attempt} granted the lease, or was the last one.
   *
   * @param attempt the last attempt, with what earlier rounds held back
   */
  record Finish(Attempt attempt) implements Step {}

  private static final Step ROUND = new Round();

  private final Contention contention;
  private final Turn turn;
  private final LockKey key;
  private final Ticker ticker;
  private final Jitter jitter;
  private final long deadlineNanos; // meaningless when forever
  private final boolean forever;
  private final boolean once;
  private final long retryDelayNanos;
  private final Consumer<Attempt> refused;

  private volatile State state = State.FIRST_ROUND;
  private volatile Contention.Waiting waiter; // entered after the first refused round
  private volatile boolean closed;
  private CompletableFuture<Void> wake; // armed before the round in flight
  private int splits; // woken rounds in a row whose votes split
  private Outcome heldBack; // a master this client's own limit kept a round from, the latest

  /**
   * A wait that starts now.
   *
   * @param contention how waiters of the resource contend: polling, or wake-ups and turns
   * @param turn the acquisition's place among the resource's waiters
   * @param key the resource's key
   * @param waitNanos how long to wait: 0 for one round, {@link Long#MAX_VALUE} for no limit
   * @param retryDelayNanos the mean pause between rounds
   * @param ticker the clock
   * @param jitter the pauses' randomness
   * @param refused told of each refused round that does not end the wait (the stall log)
   */
  Wait(
      Contention contention,
      Turn turn,
      LockKey key,
      long waitNanos,
      long retryDelayNanos,
      Ticker ticker,
      Jitter jitter,
      Consumer<Attempt> refused) {
    this.contention = contention;
    this.turn = turn;
    this.key = key;
    this.ticker = ticker;
    this.jitter = jitter;
    this.forever = waitNanos == Long.MAX_VALUE;
    this.once = waitNanos == 0;
    this.deadlineNanos = forever ? 0 : ticker.read() + waitNanos;
    this.retryDelayNanos = retryDelayNanos;
    this.refused = refused;
  }

  /** Where the wait is: for tests. */
  State state() {
    return state;
  }

  /**
   * The first step: the first round at once, or after the hand-off pause when this RedLock's last
   * release of the key was heard by a waiter (let it go first).
   *
   * @return a round, or a pause
   */
  Step start() {
    long handOff = once ? 0 : contention.handOff(key.bytes(), turn);
    return handOff > 0 ? new Pause(Math.min(handOff, left()), null) : ROUND;
  }

  /**
   * Called just before each round is sent: arms the wake-up, so that a release while the round runs
   * ends the next pause at once.
   */
  void beforeRound() {
    Contention.Waiting entered = waiter;
    wake = entered == null ? null : entered.next();
  }

  /**
   * The event of a round decided: what to do next.
   *
   * @param attempt how the round ended
   * @return a finish (granted, or out of time), a round now (queue at the gate at once), or a pause
   */
  Step decided(Attempt attempt) {
    long left = left();
    if (attempt.grant() != null || once || left <= 0) {
      state = State.DONE;
      return new Finish(attempt.after(heldBack));
    }
    Outcome limited = Attempt.heldBackIn(attempt.outcomes());
    heldBack = limited != null ? limited : heldBack;
    refused.accept(attempt);
    Contention.Waiting entered = waiter;
    CompletableFuture<Void> woken = wake;
    if (entered == null) {
      entered = contention.enter(key);
      entered.follow(turn);
      waiter = entered;
      state = State.QUEUED;
      if (closed) {
        entered.close(); // a close ran while it was entering: it may not have seen it
      }
      if (turn.queueAtOnce()) {
        return ROUND; // queue at the gate at once: only the waiter whose turn it is is told
      }
      woken = entered.next();
    } else if (entered.woken() && (Coordinator.split(attempt) || turn.wasNamed())) {
      // Woken with others, the votes split (or the round overtook the release on some masters):
      // try again after a random part of two rounds rather than at the notice that woke them, so
      // that the retries spread out; the spread doubles with each split in a row, up to the retry
      // delay (a master that lost a majority-held key votes for us too, and must not make this
      // spin). A notice this round did not see (a release since: failed rounds release quietly)
      // ends the pause, as it ends the timer's: the spread grows to the retry delay, and a waiter
      // that slept through a release would wait that long for a free lock.
      state = State.SPREADING;
      long spread = contention.rounds().spreadNanos(splits++, Math.min(left, retryDelayNanos));
      return new Pause(jitter.nextLong(spread), entered.next());
    }
    splits = 0;
    state = State.RETRYING;
    return new Pause(Math.min(left, retryDelayNanos / 2 + jitter.nextLong(retryDelayNanos)), woken);
  }

  /** How long the wait has left; {@link Long#MAX_VALUE} without a limit. */
  private long left() {
    return forever ? Long.MAX_VALUE : deadlineNanos - ticker.read();
  }

  /**
   * The wait ends however it ended (granted, out of time, failed, cancelled, closed): it leaves the
   * resource's wake-up group and its queue at the gate. Any thread, idempotent.
   */
  void close() {
    closed = true;
    state = State.DONE;
    turn.leave();
    Contention.Waiting entered = waiter;
    if (entered != null) {
      entered.close();
    }
  }
}
