package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The heal section's figures, without Redis. */
class BenchmarkChecksTest {

  private static Optional<Duration> ms(long millis) {
    return Optional.of(Duration.ofMillis(millis));
  }

  @Test
  void aMissingFirstLeaseCountsAsLongerThanAnyInTheMedian() {
    List<Optional<Duration>> figures = List.of(ms(900), Optional.empty(), ms(50));
    assertEquals(ms(900), BenchmarkChecks.median(figures));
    assertEquals(Optional.empty(), BenchmarkChecks.max(figures));
  }

  @Test
  void anEvenCountAveragesTheMiddleTwoUnlessOneIsMissing() {
    assertEquals(ms(75), BenchmarkChecks.median(List.of(ms(100), ms(50), ms(10), ms(990))));
    assertEquals(
        Optional.empty(),
        BenchmarkChecks.median(List.of(ms(10), Optional.empty(), Optional.empty(), ms(20))));
  }

  @Test
  void theMaxIsTheLargestFigureAndNoFiguresHaveNone() {
    assertEquals(ms(990), BenchmarkChecks.max(List.of(ms(100), ms(990), ms(10))));
    assertEquals(Optional.empty(), BenchmarkChecks.max(List.of()));
    assertEquals(Optional.empty(), BenchmarkChecks.median(List.of()));
  }

  @Test
  void onlyFiguresUpToTheGoalCountAsWithinIt() {
    assertEquals(
        2,
        BenchmarkChecks.withinHealGoal(
            List.of(ms(99), ms(100), ms(101), Optional.empty(), ms(990))));
  }
}
