package dev.redlock.internal.transport;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A ticker that moves only when told, or by a fixed step on every read once set. */
public final class FakeTicker implements Ticker {
  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private volatile long stepNanos;

  @Override
  public long read() {
    return now.addAndGet(stepNanos);
  }

  /** Moves the clock on by {@code duration}. */
  public void advance(Duration duration) {
    now.addAndGet(duration.toNanos());
  }

  /** From now on every read advances the clock by {@code step}, so bounded waits end. */
  public void autoAdvance(Duration step) {
    stepNanos = step.toNanos();
  }
}
