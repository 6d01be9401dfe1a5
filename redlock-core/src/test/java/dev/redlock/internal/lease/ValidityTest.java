package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ValidityTest {

  private static final long MS = 1_000_000L;

  @ParameterizedTest(name = "ttl {0} ms, elapsed {1} ms, drift factor {2} -> {3} ms")
  @CsvSource({
    // ttl, elapsed, driftFactor, expected validity (all ms)
    "10000,   0, 0.01,  9898", // 10000 - 0 - (100 + 2)
    "10000,  50, 0.01,  9848",
    "1000,   10, 0.01,   978", // 1000 - 10 - (10 + 2)
    "1000,    0, 0.0,    998", // drift is never below the 2 ms padding
    "1000,  988, 0.01,     0", // exactly used up
    "1000,  989, 0.01,    -1", // a round slower than the TTL allows: no lease
    "100,     0, 0.09,    89", // 100 - 0 - (9 + 2)
    "200,     0, 0.05,   188", // 200 - 0 - (10 + 2)
  })
  void validityIsTtlLessElapsedLessDrift(long ttl, long elapsed, double factor, long expected) {
    assertEquals(expected * MS, Validity.remainingNanos(ttl * MS, elapsed * MS, factor));
  }

  @ParameterizedTest(name = "ttl {0} ms, drift factor {1} -> drift {2} ms")
  @CsvSource({"10000, 0.01, 102", "1000, 0.01, 12", "1000, 0.0, 2", "30000, 0.05, 1502"})
  void driftIsTtlTimesFactorPlusTwoMilliseconds(long ttl, double factor, long expected) {
    assertEquals(expected * MS, Validity.driftNanos(ttl * MS, factor));
  }
}
