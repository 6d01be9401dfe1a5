package dev.redlock.internal.transport;

/**
 * Where a caller waits for its round's replies: the {@link SelectorLoop} that the plaintext masters
 * share (the caller leads it when no one else does, and reads its own replies), or a simulation's
 * event loop, which runs the simulated network and timers on the caller's own thread until the
 * round is decided. Without one, a caller parks ({@link AwaitedRound#awaitDecision}).
 */
public interface RoundLoop {

  /**
   * Returns when {@code round} is decided or {@code deadlineNanos} passes.
   *
   * @param round the round the calling thread waits for
   * @param deadlineNanos when to stop waiting, on the RedLock's ticker
   */
  void await(AwaitedRound round, long deadlineNanos);

  /**
   * A caller is about to send a round's commands and wait for it; {@link #leaveRound} once it has
   * its answer. Any thread; never blocks.
   */
  void enterRound();

  /** The caller of an {@link #enterRound} has its round's answer. */
  void leaveRound();

  /**
   * Stops the loop and waits for it, at most {@code waitNanos}; returns whether it ended.
   * Idempotent.
   *
   * @param waitNanos how long to wait
   * @return whether the loop ended in time
   */
  boolean close(long waitNanos);
}
