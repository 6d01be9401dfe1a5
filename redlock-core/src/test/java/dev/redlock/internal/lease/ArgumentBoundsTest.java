package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Each argument bound the API documents, checked at its exact edge: the value on the bound is on
 * its documented side, and one unit past it on the other.
 */
class ArgumentBoundsTest {

  private static final long MS = 1_000_000;

  @Test
  void aTtlOfExactlyADayIsTheLongestAllowed() {
    Arguments arguments = new Arguments(0, 0, Long.MAX_VALUE);
    assertEquals(Duration.ofDays(1).toMillis(), arguments.ttlMillis(Duration.ofDays(1)));
    assertThrows(
        IllegalArgumentException.class, () -> arguments.ttlMillis(Duration.ofDays(1).plusNanos(1)));
  }

  @Test
  void aTtlOfExactlyOneMillisecondIsTheShortestAllowed() {
    Arguments arguments = new Arguments(0, 0, Long.MAX_VALUE);
    assertEquals(1, arguments.ttlMillis(Duration.ofMillis(1)));
    assertThrows(
        IllegalArgumentException.class, () -> arguments.ttlMillis(Duration.ofNanos(MS - 1)));
  }

  @Test
  void aTtlMustExceedTheNodeTimeout() {
    Arguments arguments = new Arguments(50 * MS, 0, Long.MAX_VALUE);
    assertThrows(IllegalArgumentException.class, () -> arguments.ttlMillis(Duration.ofMillis(50)));
    assertEquals(50, arguments.ttlMillis(Duration.ofMillis(50).plusNanos(1)));
  }

  @Test
  void aTtlMustExceedTheMinimumValidity() {
    Arguments arguments = new Arguments(0, 50 * MS, Long.MAX_VALUE);
    assertThrows(IllegalArgumentException.class, () -> arguments.ttlMillis(Duration.ofMillis(50)));
    assertEquals(50, arguments.ttlMillis(Duration.ofMillis(50).plusNanos(1)));
  }

  @Test
  void aTtlOfExactlyTheLongestLeaseIsAllowedWithTheRestartGuard() {
    Arguments arguments = new Arguments(0, 0, 60_000);
    assertEquals(60_000, arguments.ttlMillis(Duration.ofMinutes(1)));
    assertThrows(
        IllegalArgumentException.class,
        () -> arguments.ttlMillis(Duration.ofMinutes(1).plusMillis(1)));
  }

  @Test
  void aCenturyIsTheLongestWaitTakenAsWritten() {
    Duration century = Duration.ofDays(365 * 100);
    assertEquals(century.toNanos(), Arguments.positiveNanos(century, "maxWait"));
    assertEquals(
        Long.MAX_VALUE / 4, Arguments.positiveNanos(century.plusNanos(1), "maxWait"), "forever");
  }

  @Test
  void aResourceNameOfExactlyTheLimitIsAllowed() {
    String limit = "r".repeat(Arguments.MAX_RESOURCE_BYTES);
    assertEquals(Arguments.MAX_RESOURCE_BYTES, Arguments.resourceKey(limit).length);
    assertThrows(IllegalArgumentException.class, () -> Arguments.resourceKey(limit + "r"));
    // Under the limit in characters, over it in UTF-8 bytes (é is two).
    String wide = "é".repeat(Arguments.MAX_RESOURCE_BYTES / 2);
    assertEquals(Arguments.MAX_RESOURCE_BYTES, Arguments.resourceKey(wide).length);
    assertThrows(IllegalArgumentException.class, () -> Arguments.resourceKey(wide + "r"));
  }

  @Test
  void aResourceIsShownWholeUpTo64Characters() {
    String sixtyFour = "x".repeat(64);
    assertEquals("'" + sixtyFour + "'", Arguments.quote(sixtyFour));
    assertEquals("'" + sixtyFour + "...'", Arguments.quote(sixtyFour + "y"));
  }
}
