package dev.redlock.internal.transport;

/**
 * A monotonic time source in nanoseconds. Validity is measured only with a ticker, never with the
 * wall clock, so that a stepped system clock cannot stretch a lease. Tests substitute a fake.
 */
@FunctionalInterface
public interface Ticker {

  /**
   * Returns the current reading in nanoseconds; only differences between readings mean anything.
   */
  long read();

  /** The ticker backed by {@link System#nanoTime()}. */
  static Ticker system() {
    return System::nanoTime;
  }
}
