package dev.redlock.internal.transport;

/**
 * The states of a master's circuit breaker, as {@link BreakerNodeClient} reports them: the mirror
 * of the API's {@code RedLockListener.CircuitState}, with the same constants in the same order (the
 * API converts by ordinal; a test holds the two together).
 */
public enum BreakerState {
  /** Calls go through. */
  CLOSED,
  /** Calls fail at once without reaching the master. */
  OPEN,
  /** A few probe calls go through to test the master. */
  HALF_OPEN
}
