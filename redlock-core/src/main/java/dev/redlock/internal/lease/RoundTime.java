package dev.redlock.internal.lease;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * About how long one round takes here: a moving average of the rounds the masters' answers decided
 * (not one that waited out a silent master's node timeout). It sizes the gate wait, the hand-off
 * pause, and the spread of woken waiters' retries. Thread-safe.
 */
public final class RoundTime {

  private final AtomicLong nanos = new AtomicLong(TimeUnit.MICROSECONDS.toNanos(500));

  /** A new average, from half a millisecond. */
  RoundTime() {}

  /**
   * Records how long a round took: the average moves an eighth of the way to it.
   *
   * @param took the round's time, in nanoseconds
   */
  void took(long took) {
    long before = nanos.get();
    nanos.lazySet(before + (took - before) / 8);
  }

  /**
   * The average.
   *
   * @return nanoseconds
   */
  long nanos() {
    return nanos.get();
  }

  /**
   * The spread of a woken waiter's pause after its {@code splits}th round in a row that split (0
   * for the first): two rounds' time, doubling with each, at most {@code capNanos} (the retry
   * delay, or the wait's time left), at least 1 ns. The waiter pauses a random part of it.
   *
   * @param splits the split rounds in a row before this one
   * @param capNanos the longest spread
   * @return the spread, in nanoseconds
   */
  long spreadNanos(int splits, long capNanos) {
    return Math.max(1, Math.min(capNanos, (2 * nanos.get()) << Math.min(splits, 16)));
  }
}
