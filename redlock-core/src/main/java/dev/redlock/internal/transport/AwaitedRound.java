package dev.redlock.internal.transport;

/**
 * A caller's round as the selector sees it: decided by replies that whoever leads reads (the lease
 * layer's quorum round is one). The selector never freezes it; its caller does, after {@link
 * SelectorLoop#await}.
 */
public interface AwaitedRound {

  /**
   * Returns whether the round is decided.
   *
   * @return true once decided, by answers or by being frozen
   */
  boolean decided();

  /**
   * Names the thread that waits for the round: it is unparked when the round is decided.
   *
   * @param waiter the waiting thread
   */
  void waitOn(Thread waiter);

  /**
   * Says that the waiter is about to select (or, with null, that it stopped): a decision made by
   * another thread then also runs {@code wakeSelector} ({@link SelectorLoop#wakeSelector}).
   *
   * @param wakeSelector wakes the selector the waiter selects on, or null
   */
  void selecting(Runnable wakeSelector);

  /**
   * Parks the calling thread until the round is decided or {@code deadlineNanos} passes, without
   * selecting: for a thread that must not lead. Not interruptible; an interrupt is kept pending.
   *
   * @param deadlineNanos the deadline, on the round's ticker
   */
  void awaitDecision(long deadlineNanos);
}
