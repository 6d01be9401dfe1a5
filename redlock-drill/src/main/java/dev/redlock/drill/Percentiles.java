package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import java.util.Locale;

/**
 * Percentiles by the nearest-rank method over a sorted array: the p-th percentile of n values is
 * the value at rank {@code ceil(p / 100 * n)} (1-based), so it is always one of the samples, never
 * an interpolation. Exact, and plenty for the tens of thousands of samples a run collects.
 */
public final class Percentiles {

  private Percentiles() {}

  /**
   * Returns the nearest-rank percentile of {@code sorted}.
   *
   * @param sorted values in ascending order; not checked
   * @param percent in (0, 100]
   * @throws IllegalArgumentException if {@code sorted} is empty or {@code percent} is out of range
   */
  public static long nearestRank(long[] sorted, double percent) {
    requireNonNull(sorted, "sorted");
    if (sorted.length == 0) {
      throw new IllegalArgumentException("no samples");
    }
    if (!(percent > 0 && percent <= 100)) {
      throw new IllegalArgumentException("percent must be in (0, 100]: " + percent);
    }
    // Rounding can push a whole rank just above itself (7% of 100 is 7.000000000000001 in doubles).
    long rank = (long) Math.ceil(percent / 100.0 * sorted.length - 1e-9);
    int index = (int) Math.max(0, Math.min(sorted.length - 1, rank - 1));
    return sorted[index];
  }

  /** Returns the summary of {@code sorted}; all zero for an empty array. */
  public static Summary summarize(long[] sorted) {
    if (sorted.length == 0) {
      return new Summary(0, 0, 0, 0);
    }
    return new Summary(
        sorted.length, nearestRank(sorted, 50), nearestRank(sorted, 99), sorted[sorted.length - 1]);
  }

  /** Formats nanoseconds as whole microseconds, e.g. {@code "412"}. */
  public static String micros(long nanos) {
    return String.format(Locale.ROOT, "%,d", Math.round(nanos / 1_000.0));
  }

  /**
   * The usual figures of one set of samples, in the samples' unit (nanoseconds for latencies).
   *
   * @param count how many samples
   * @param p50 the median
   * @param p99 the 99th percentile
   * @param max the largest sample
   */
  public record Summary(int count, long p50, long p99, long max) {}
}
