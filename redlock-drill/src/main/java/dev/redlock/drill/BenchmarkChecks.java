package dev.redlock.drill;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.drill.Percentiles.Summary;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;

/**
 * The benchmark's judgements: its goals, the ratios and medians it compares with them, and the one
 * check that stops a run before it measures nonsense (the default RedLock must get a lease). The
 * benchmark reports; apart from that check, nothing here fails a run.
 */
final class BenchmarkChecks {

  /** The goal for the plain RedLock's p50 acquire latency over the baseline's SET round. */
  static final double GOAL_RATIO = 1.15;

  /** The goal for the p99 with one master black-holed (breakers on) over the healthy p99. */
  static final double BREAKER_GOAL_RATIO = 1.5;

  /** A round this slow is counted apart in the breaker section: it waited for the black hole. */
  static final long SLOW_NANOS = TimeUnit.MILLISECONDS.toNanos(Benchmark.NODE_TIMEOUT_MILLIS / 5);

  private BenchmarkChecks() {}

  /**
   * One acquire with the default RedLock, so that unadmitted masters stop the run with a hint.
   *
   * @throws CannotRun if the default RedLock gets no lease; the hint is printed first when masters
   *     answered RESTARTED
   */
  static void defaultsGrant(RedLock defaults, BenchmarkReport report) throws CannotRun {
    List<NodeOutcome> outcomes;
    try {
      Optional<Lease> lease = defaults.tryAcquire("bench:check", Benchmark.TTL);
      if (lease.isPresent()) {
        lease.get().close();
        return;
      }
      throw new CannotRun("the default RedLock's first acquire was refused: is the key taken?");
    } catch (QuorumUnavailableException e) {
      outcomes = e.outcomes();
    }
    if (outcomes.stream().anyMatch(o -> o.status() == Status.RESTARTED)) {
      report.restartedHint();
      throw new CannotRun(
          "the default RedLock cannot acquire: masters answered RESTARTED " + outcomes);
    }
    throw new CannotRun("the default RedLock cannot acquire: " + outcomes);
  }

  /** {@code figure} of {@code numerator}'s samples over the same of {@code denominator}'s. */
  static double ratio(Operation numerator, Operation denominator, ToLongFunction<Summary> figure) {
    return ratio(
        figure.applyAsLong(numerator.summary()), figure.applyAsLong(denominator.summary()));
  }

  /** The p50 of {@code numerator}'s latest block over {@code denominator}'s. */
  static double lastRatio(Operation numerator, Operation denominator) {
    return ratio(numerator.lastBlock().p50(), denominator.lastBlock().p50());
  }

  /** {@code numerator / denominator}; NaN for a zero denominator. */
  static double ratio(long numerator, long denominator) {
    return denominator == 0 ? Double.NaN : (double) numerator / denominator;
  }

  /** Whether the plain / baseline p50 ratio meets {@link #GOAL_RATIO}. */
  static boolean latencyGoalMet(double ratio) {
    return ratio <= GOAL_RATIO;
  }

  /** Whether the black hole's p99 ratio with breakers meets {@link #BREAKER_GOAL_RATIO}. */
  static boolean breakerGoalMet(double ratio) {
    return ratio <= BREAKER_GOAL_RATIO;
  }

  /** How many of {@code op}'s samples took longer than {@link #SLOW_NANOS}. */
  static long slow(Operation op) {
    long[] sorted = op.samples.sorted();
    long count = 0;
    for (int i = sorted.length - 1; i >= 0 && sorted[i] > SLOW_NANOS; i--) {
      count++;
    }
    return count;
  }

  /**
   * The median of the heal section's first-lease figures, a missing one (no lease within the limit)
   * counting as longer than any; empty if the median is missing or there are no figures.
   */
  static Optional<Duration> median(List<Optional<Duration>> figures) {
    List<Optional<Duration>> sorted = sortedMissingLast(figures);
    int n = sorted.size();
    if (n == 0) {
      return Optional.empty();
    }
    if (n % 2 == 1) {
      return sorted.get(n / 2);
    }
    Optional<Duration> low = sorted.get(n / 2 - 1);
    Optional<Duration> high = sorted.get(n / 2);
    return low.isEmpty() || high.isEmpty()
        ? Optional.empty()
        : Optional.of(low.get().plus(high.get()).dividedBy(2));
  }

  /** The largest first-lease figure; empty if one is missing or there are none. */
  static Optional<Duration> max(List<Optional<Duration>> figures) {
    List<Optional<Duration>> sorted = sortedMissingLast(figures);
    return sorted.isEmpty() ? Optional.empty() : sorted.get(sorted.size() - 1);
  }

  /** How many first-lease figures are within {@link HealRun#GOAL}. */
  static long withinHealGoal(List<Optional<Duration>> figures) {
    return figures.stream()
        .filter(f -> f.isPresent() && f.get().compareTo(HealRun.GOAL) <= 0)
        .count();
  }

  private static List<Optional<Duration>> sortedMissingLast(List<Optional<Duration>> figures) {
    List<Optional<Duration>> sorted = new ArrayList<>(figures);
    sorted.sort(
        Comparator.comparing(
            (Optional<Duration> f) -> f.orElse(null),
            Comparator.nullsLast(Comparator.naturalOrder())));
    return sorted;
  }

  /**
   * How much the per-round ratios moved: a measure of the noise; empty for fewer than two.
   *
   * @param ratios one ratio of p50s per round
   */
  static Optional<Spread> spread(List<Double> ratios) {
    List<Double> sorted = new ArrayList<>(ratios);
    Collections.sort(sorted);
    int n = sorted.size();
    if (n < 2) {
      return Optional.empty();
    }
    double median =
        n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    return Optional.of(new Spread(median, sorted.get(0), sorted.get(n - 1)));
  }

  /**
   * The spread of per-round ratios.
   *
   * @param median their median
   * @param min the smallest
   * @param max the largest
   */
  record Spread(double median, double min, double max) {}
}
