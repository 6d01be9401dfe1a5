package dev.redlock;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A ticker that moves only when told, or by a fixed step on every read once set. */
final class FakeTicker implements Ticker {
  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private volatile long stepNanos;

  @Override
  public long read() {
    return now.addAndGet(stepNanos);
  }

  void advance(Duration duration) {
    now.addAndGet(duration.toNanos());
  }

  /** From now on every read advances the clock by {@code step}, so bounded waits end. */
  void autoAdvance(Duration step) {
    stepNanos = step.toNanos();
  }
}
