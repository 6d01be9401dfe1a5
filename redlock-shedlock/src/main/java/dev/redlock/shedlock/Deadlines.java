package dev.redlock.shedlock;

import java.time.Duration;
import java.time.Instant;

/**
 * ShedLock's wall-clock deadlines turned into the TTLs RedLock takes, which are measured from the
 * moment they are sent. The two bounds round in opposite directions, each toward its safe side: a
 * lock must be gone by {@code lockAtMostUntil}, and must stay until {@code lockAtLeastUntil}.
 */
final class Deadlines {

  private Deadlines() {}

  /**
   * The TTL that ends the lock no later than {@code until}: the time left, rounded down to whole
   * milliseconds (negative if {@code until} has passed).
   */
  static Duration atMost(Instant now, Instant until) {
    Duration left = Duration.between(now, until);
    long millis = left.toMillis(); // rounds toward zero: up, for a negative duration
    return Duration.ofMillis(Duration.ofMillis(millis).compareTo(left) > 0 ? millis - 1 : millis);
  }

  /**
   * How long the lock must still be kept to last until {@code until}: the time left, rounded up to
   * whole milliseconds; zero if {@code until} has passed.
   */
  static Duration atLeast(Instant now, Instant until) {
    Duration left = Duration.between(now, until);
    if (left.isNegative() || left.isZero()) {
      return Duration.ZERO;
    }
    long millis = left.toMillis(); // rounds down, for a positive duration
    return Duration.ofMillis(Duration.ofMillis(millis).equals(left) ? millis : millis + 1);
  }
}
