package dev.redlock.testkit;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waiting in tests for a condition that another thread or process makes true: the condition is
 * looked at again every few milliseconds until it holds or a deadline passes. The pause between
 * looks is a polling interval, never the synchronization itself.
 */
public final class Poll {

  private static final long INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

  private Poll() {}

  /**
   * Waits until {@code condition} holds.
   *
   * @param timeout how long to wait at most
   * @param condition looked at right away, then every few milliseconds
   * @param what what was awaited, for the failure's message; asked for only on failure
   * @throws AssertionError naming {@code what} if the condition does not hold within {@code
   *     timeout}, or if the waiting thread is interrupted (its interrupt is kept)
   */
  public static void until(Duration timeout, BooleanSupplier condition, Supplier<String> what) {
    requireNonNull(timeout, "timeout");
    requireNonNull(condition, "condition");
    requireNonNull(what, "what");
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("not within " + timeout.toMillis() + " ms: " + what.get());
      }
      LockSupport.parkNanos(INTERVAL_NANOS);
      if (Thread.currentThread().isInterrupted()) {
        throw new AssertionError("interrupted while waiting for: " + what.get());
      }
    }
  }

  /**
   * Waits up to five seconds until {@code condition} holds.
   *
   * @param what what was awaited, for the failure's message
   * @param condition looked at right away, then every few milliseconds
   * @throws AssertionError naming {@code what} if the condition does not hold within five seconds
   */
  public static void until(String what, BooleanSupplier condition) {
    requireNonNull(what, "what");
    until(Duration.ofSeconds(5), condition, () -> what);
  }
}
