package dev.redlock.shedlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** ShedLock's instants to RedLock's TTLs: lockAtMostUntil rounds down, lockAtLeastUntil up. */
class DeadlinesTest {

  static final Instant NOW = Instant.parse("2026-11-22T12:00:00Z");

  @ParameterizedTest(name = "{0} ns left -> {1} ms")
  @CsvSource({
    "10000000000, 10000", // whole milliseconds stay
    "50999999,    50", //    a fraction is dropped: the lock ends no later than lockAtMostUntil
    "1000001,     1",
    "999999,      0", //     less than a millisecond left: a zero TTL, which RedLock refuses
    "0,           0",
    "-1,          -1", //    past: negative, which RedLock refuses
    "-2500000,    -3"
  })
  void atMostRoundsDownToWholeMilliseconds(long nanosLeft, long expectedMillis) {
    Instant until = NOW.plusNanos(nanosLeft);

    assertEquals(Duration.ofMillis(expectedMillis), Deadlines.atMost(NOW, until));
  }

  @ParameterizedTest(name = "{0} ns left -> {1} ms")
  @CsvSource({
    "5000000000, 5000", // whole milliseconds stay
    "4000001,    5", //    a fraction counts as a whole one: kept at least until lockAtLeastUntil
    "1,          1",
    "0,          0", //    reached: release now
    "-1,         0",
    "-5000000,   0"
  })
  void atLeastRoundsUpToWholeMillisecondsAndNeverBelowZero(long nanosLeft, long expectedMillis) {
    Instant until = NOW.plusNanos(nanosLeft);

    assertEquals(Duration.ofMillis(expectedMillis), Deadlines.atLeast(NOW, until));
  }
}
