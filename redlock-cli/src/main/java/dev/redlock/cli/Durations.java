package dev.redlock.cli;

import java.math.BigDecimal;
import java.time.Duration;

/** Durations as the commands print them. */
final class Durations {
  private Durations() {}

  /** {@code 60 s}, {@code 1.5 s}, {@code 10 min}. */
  static String text(Duration duration) {
    if (duration.toSeconds() >= 120
        && duration.toSecondsPart() == 0
        && duration.toNanosPart() == 0) {
      return duration.toMinutes() + " min";
    }
    return BigDecimal.valueOf(duration.toNanos())
            .movePointLeft(9)
            .stripTrailingZeros()
            .toPlainString()
        + " s";
  }
}
