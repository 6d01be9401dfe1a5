package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.redlock.drill.Percentiles.Summary;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PercentilesTest {

  private static final long[] ONE_TO_HUNDRED = LongStream.rangeClosed(1, 100).toArray();

  @ParameterizedTest(name = "p{0} of 1..100 is {1}")
  @CsvSource({"1, 1", "7, 7", "50, 50", "50.5, 51", "90, 90", "99, 99", "99.5, 100", "100, 100"})
  void nearestRankOfOneToHundredIsTheRankItself(double percent, long expected) {
    assertEquals(expected, Percentiles.nearestRank(ONE_TO_HUNDRED, percent));
  }

  @ParameterizedTest(name = "p{0} of [10, 20, 30, 40] is {1}")
  @CsvSource({"1, 10", "25, 10", "26, 20", "50, 20", "51, 30", "75, 30", "99, 40", "100, 40"})
  void nearestRankIsAlwaysOneOfTheSamples(double percent, long expected) {
    assertEquals(expected, Percentiles.nearestRank(new long[] {10, 20, 30, 40}, percent));
  }

  @Test
  void aSingleSampleIsEveryPercentile() {
    assertEquals(5, Percentiles.nearestRank(new long[] {5}, 1));
    assertEquals(5, Percentiles.nearestRank(new long[] {5}, 99));
  }

  @Test
  void noSamplesOrAPercentOutOfRangeIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> Percentiles.nearestRank(new long[0], 50));
    assertThrows(IllegalArgumentException.class, () -> Percentiles.nearestRank(ONE_TO_HUNDRED, 0));
    assertThrows(
        IllegalArgumentException.class, () -> Percentiles.nearestRank(ONE_TO_HUNDRED, 100.5));
    assertThrows(
        IllegalArgumentException.class, () -> Percentiles.nearestRank(ONE_TO_HUNDRED, Double.NaN));
  }

  @Test
  void samplesSummarizeInAnyInsertionOrder() {
    Samples samples = new Samples();
    for (long v = 2_000; v >= 1; v--) {
      samples.add(v * 1_000); // more than the initial capacity, in descending order
    }
    Summary summary = samples.summary();
    assertEquals(new Summary(2_000, 1_000_000, 1_980_000, 2_000_000), summary);
  }

  @Test
  void anEmptySummaryIsAllZero() {
    assertEquals(new Summary(0, 0, 0, 0), new Samples().summary());
  }

  @Test
  void addAllAppendsEverySample() {
    Samples a = new Samples();
    Samples b = new Samples();
    for (int i = 0; i < 1500; i++) {
      a.add(i);
      b.add(1500 + i);
    }
    a.addAll(b);
    assertEquals(3000, a.size());
    assertEquals(2999, a.get(2999));
  }

  @Test
  void microsRoundsNanosecondsToWholeMicroseconds() {
    assertEquals("412", Percentiles.micros(411_600));
    assertEquals("1,210", Percentiles.micros(1_210_000));
  }
}
