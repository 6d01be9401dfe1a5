package dev.redlock.internal.lease;

/**
 * The randomness of the lease layer's pauses (a wait's retry and spread, a renewal's retry): a
 * uniform {@code long} in {@code [0, bound)}. A parameter, so that a test or a simulation can fix
 * it or seed it. Implementations must be thread-safe.
 */
@FunctionalInterface
public interface Jitter {
  /**
   * Returns a random number.
   *
   * @param bound at least 1
   * @return in {@code [0, bound)}
   */
  long nextLong(long bound);
}
