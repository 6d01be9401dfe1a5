package dev.redlock.internal.transport;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * A {@link Clock} that reads a {@link Ticker}: the circuit breakers' clock (Resilience4j times an
 * open breaker's wait with one), so that a breaker waits on the client's monotonic clock, never the
 * wall clock, and on a test's or a simulation's virtual time when the ticker is virtual. Its
 * instants mean nothing as dates: only the time between two of them does. Immutable.
 */
final class TickerClock extends Clock {

  private static final long NANOS_PER_SECOND = 1_000_000_000L;

  private final Ticker ticker;

  TickerClock(Ticker ticker) {
    this.ticker = ticker;
  }

  @Override
  public Instant instant() {
    long nanos = ticker.read();
    return Instant.ofEpochSecond(
        Math.floorDiv(nanos, NANOS_PER_SECOND), Math.floorMod(nanos, NANOS_PER_SECOND));
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this; // instants only: a zone would change nothing the breaker reads
  }
}
