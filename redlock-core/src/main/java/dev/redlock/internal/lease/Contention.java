package dev.redlock.internal.lease;

import dev.redlock.internal.transport.LockKey;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The contention port: what a wait ({@link Wait}) asks of the way this RedLock's waiters learn that
 * a lock may be free, and let others go first. Two implementations, so that either can be measured
 * and reasoned about alone: {@link Polling} (waiters ask again on their timers, and a releaser
 * takes its lock straight back) and {@link Wakeups} (waiters woken by releases, queued in turn at
 * the resource's gate master, and a releaser that hands off to them), chosen by {@code
 * RedLock.builder().wakeUps(boolean)}. Safety rests on neither: a lease is granted by its quorum
 * round whoever asks first.
 *
 * <p>Implementations are thread-safe.
 */
public sealed interface Contention extends AutoCloseable permits Polling, Wakeups {

  /**
   * A new acquisition's turn: through which masters its rounds go ({@link Turn}).
   *
   * @param masters the masters
   * @param key the resource's key, or a key set's
   * @param retryDelayNanos the retry delay
   * @return its turn
   */
  Turn turn(Masters masters, LockKey key, long retryDelayNanos);

  /**
   * Says which masters' notices each resource's waiters hear, if any are heard.
   *
   * @param heard the indexes of the masters for a key, or null for every master
   */
  void hearFrom(Function<byte[], int[]> heard);

  /**
   * Before the first round of an acquisition of {@code key}: how long it pauses first to let others
   * go first (0: none), having put {@code turn} behind them if it does.
   *
   * @param key the resource's key
   * @param turn the acquisition's turn
   * @return the pause, in nanoseconds, at least 0
   */
  long handOff(byte[] key, Turn turn);

  /**
   * Starts waiting on {@code key}, after a first refused round. The waiting must be closed.
   *
   * @param key the resource's key, or a key set's
   * @return the waiting
   */
  Waiting enter(LockKey key);

  /**
   * The round-time average that sizes the gate wait, the hand-off pause and the spread of woken
   * waiters' retries.
   *
   * @return this RedLock's round times
   */
  RoundTime rounds();

  /**
   * Stops: waits time out on their timers. Waits up to {@code graceNanos} for any connection.
   *
   * @param graceNanos the longest wait
   */
  void close(long graceNanos);

  /** Closes with a second's grace. */
  @Override
  void close();

  /**
   * The no-contention-help implementation: waiters ask again on their timers.
   *
   * @return a new {@link Polling}
   */
  static Contention polling() {
    return new Polling();
  }

  /** One waiting acquisition, from its first refused round to its end. */
  interface Waiting extends AutoCloseable {

    /**
     * Follows {@code turn}: how its acquisition is queued decides which notices wake it.
     *
     * @param turn its acquisition's turn
     */
    void follow(Turn turn);

    /**
     * Whether notices may wake it: false when it waits on its timer only.
     *
     * @return whether it can be woken
     */
    boolean woken();

    /**
     * Arms the wake-up of the next pause, just before a round (so that a release while the round
     * runs ends the pause at once): a future a notice completes, or null if only the timer ends the
     * pause.
     *
     * @return the future, or null
     */
    CompletableFuture<Void> next();

    /** Stops waiting. Idempotent, any thread. */
    @Override
    void close();
  }
}
