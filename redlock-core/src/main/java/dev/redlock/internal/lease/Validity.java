package dev.redlock.internal.lease;

/**
 * The Redlock validity arithmetic, as pure functions over nanoseconds.
 *
 * <p>A lease is trusted for {@code ttl - elapsed - drift}, where {@code elapsed} runs from just
 * before the first request to just after the deciding reply, and {@code drift = ttl * driftFactor +
 * 2 ms} covers the rate difference between the client's clock and the servers' clocks plus the
 * millisecond granularity of Redis expiry.
 */
public final class Validity {

  /** The fixed part of the drift allowance: Redis expiry precision plus one millisecond. */
  static final long DRIFT_PADDING_NANOS = 2_000_000L;

  private Validity() {}

  /** Returns the clock-drift allowance for a lease of {@code ttlNanos}. */
  static long driftNanos(long ttlNanos, double driftFactor) {
    return (long) (ttlNanos * driftFactor) + DRIFT_PADDING_NANOS;
  }

  /**
   * Returns how long a lease can be trusted after a round that took {@code elapsedNanos}.
   *
   * @param ttlNanos the lease's TTL
   * @param elapsedNanos how long the round took
   * @param driftFactor the fraction of the TTL allowed for clock drift
   * @return the validity; zero or negative if none is left
   */
  public static long remainingNanos(long ttlNanos, long elapsedNanos, double driftFactor) {
    return ttlNanos - elapsedNanos - driftNanos(ttlNanos, driftFactor);
  }
}
