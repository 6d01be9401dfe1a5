package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.benchmark.BenchmarkRun.Lineup;
import dev.redlock.benchmark.IsolationRun.Block;
import dev.redlock.benchmark.IsolationRun.Cycles;
import dev.redlock.benchmark.IsolationRun.Isolation;
import dev.redlock.benchmark.ThroughputRun.Throughput;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.drill.Percentiles;
import dev.redlock.drill.Percentiles.Summary;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.ToLongFunction;

/**
 * The benchmark's judgements: its goals (the performance issue's and the isolation section's), the
 * ratios and medians it compares with them, and the one check that stops a run before it measures
 * nonsense (the default RedLock must get a lease). The benchmark reports; apart from that check,
 * nothing here fails a run.
 */
final class BenchmarkChecks {

  /** The performance issue's goals are stated for this many masters (on loopback). */
  static final int GOAL_MASTERS = 5;

  /** Goal: the default RedLock's acquire+release p50 at most this many times the floor's. */
  static final double DEFAULTS_OVER_FLOOR = 1.15;

  /** Goal: the default RedLock's acquire+release p50 at most node-redlock's. */
  static final double DEFAULTS_OVER_NODE = 1.0;

  /**
   * Goal: the default RedLock's throughput with 32 threads at least this many times the floor's.
   */
  static final double THROUGHPUT_OVER_FLOOR = 2.0;

  /** The thread count of the throughput goal. */
  static final int THROUGHPUT_THREADS = 32;

  /** Goal: the plain RedLock's acquire+release p50 at most the floor's. */
  static final double PLAIN_OVER_FLOOR = 1.0;

  /** Goal: acquire, fencingToken(), release p50 at most this many times the floor's. */
  static final double TOKEN_OVER_FLOOR = 1.6;

  /** The goal for the p99 with one master black-holed (breakers on) over the healthy p99. */
  static final double BREAKER_GOAL_RATIO = 1.5;

  /**
   * Isolation goal: with one master hostile, tryAcquire's p99 at most this many times the healthy
   * block's, plus {@link #ISOLATION_P99_SLACK}.
   */
  static final double ISOLATION_P99_FACTOR = 1.5;

  /** What the isolation p99 goal allows on top of {@link #ISOLATION_P99_FACTOR}. */
  static final Duration ISOLATION_P99_SLACK = Duration.ofMillis(1);

  /** Isolation goal: a case's heap growth (RedLock still open) at most this many bytes. */
  static final long ISOLATION_HEAP_BYTES = 16L * 1024 * 1024;

  private BenchmarkChecks() {}

  /**
   * One acquire with the default RedLock, so that unadmitted masters stop the run with a hint.
   *
   * @param restartedHint prints the hint about masters that answered RESTARTED
   * @throws CannotRun if the default RedLock gets no lease; the hint is printed first when masters
   *     answered RESTARTED
   */
  static void defaultsGrant(RedLock defaults, Runnable restartedHint) throws CannotRun {
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
      restartedHint.run();
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

  /**
   * The performance issue's goals, each judged on this run's figures: p50s of every one-thread
   * sample, throughput of every block together, and the spread of the same ratio round by round. A
   * goal whose row was skipped (node-redlock) is not judged.
   *
   * @param throughput the throughput section's totals
   */
  static List<Goal> goals(Lineup lineup, List<Throughput> throughput) {
    Contender floor = lineup.floor();
    Contender defaults = lineup.defaults();
    List<Goal> goals = new ArrayList<>();
    goals.add(latencyGoal("default p50 <= 1.15 x floor", defaults, floor, DEFAULTS_OVER_FLOOR));
    goals.add(
        latencyGoal("default p50 <= node-redlock", defaults, lineup.node(), DEFAULTS_OVER_NODE));
    goals.add(throughputGoal(defaults, floor, throughput));
    goals.add(latencyGoal("plain p50 <= floor", lineup.plain(), floor, PLAIN_OVER_FLOOR));
    goals.add(
        latencyGoal("token read p50 <= 1.6 x floor", lineup.token(), floor, TOKEN_OVER_FLOOR));
    return goals;
  }

  /**
   * The isolation goals (issue 15), three per case that was measured: every tryAcquire granted; its
   * p99 at most {@link #isolationP99Allowance} of the healthy block's; its heap growth at most
   * {@link #ISOLATION_HEAP_BYTES}. Each ratio is the figure over what the goal allows (granted over
   * attempts for the first), so 1.00 is the bound. A case that was not measured is not judged.
   */
  static List<Goal> isolationGoals(Isolation isolation) {
    Block healthy = isolation.healthy();
    List<Goal> goals = new ArrayList<>();
    for (Block c : isolation.cases()) {
      String name = c.name();
      if (!healthy.measured() || !c.measured()) {
        goals.add(
            Goal.notJudged(
                name + ": isolation", healthy.measured() ? c.failure() : healthy.failure()));
        continue;
      }
      Cycles cycles = c.cycles();
      goals.add(
          new Goal(
              name + ": all granted",
              String.format(Locale.ROOT, "%,d / %,d tryAcquire", cycles.granted, cycles.attempts),
              ratio(cycles.granted, cycles.attempts),
              1.0,
              false,
              Optional.empty(),
              null));
      long p99 = c.summary().p99();
      long allowance = isolationP99Allowance(healthy.summary().p99());
      goals.add(
          new Goal(
              String.format(
                  Locale.ROOT,
                  "%s: p99 <= %.1fx healthy+%dms",
                  name,
                  ISOLATION_P99_FACTOR,
                  ISOLATION_P99_SLACK.toMillis()),
              Percentiles.micros(p99) + " / " + Percentiles.micros(allowance) + " us",
              ratio(p99, allowance),
              1.0,
              true,
              Optional.empty(),
              null));
      goals.add(
          new Goal(
              name + ": heap growth <= " + ISOLATION_HEAP_BYTES / (1024 * 1024) + " MiB",
              String.format(
                  Locale.ROOT,
                  "%+.1f / %d MiB",
                  c.heapGrowth() / (1024.0 * 1024.0),
                  ISOLATION_HEAP_BYTES / (1024 * 1024)),
              (double) c.heapGrowth() / ISOLATION_HEAP_BYTES,
              1.0,
              true,
              Optional.empty(),
              null));
    }
    return goals;
  }

  /** The tryAcquire p99 a case may reach: 1.5 x the healthy block's p99 + 1 ms, nanoseconds. */
  static long isolationP99Allowance(long healthyP99Nanos) {
    return Math.round(ISOLATION_P99_FACTOR * healthyP99Nanos) + ISOLATION_P99_SLACK.toNanos();
  }

  private static Goal latencyGoal(
      String statement, Contender numerator, Contender denominator, double bound) {
    Optional<String> skipped = skippedBetween(numerator, denominator);
    if (skipped.isPresent()) {
      return Goal.notJudged(statement, skipped.get());
    }
    long top = numerator.latency().summary().p50();
    long bottom = denominator.latency().summary().p50();
    return new Goal(
        statement,
        Percentiles.micros(top) + " / " + Percentiles.micros(bottom) + " us",
        ratio(top, bottom),
        bound,
        true,
        spread(numerator.latency().blockRatios(denominator.latency())),
        null);
  }

  private static Goal throughputGoal(
      Contender defaults, Contender floor, List<Throughput> throughput) {
    String statement =
        String.format(
            Locale.ROOT,
            "default %d threads >= %.0f x floor",
            THROUGHPUT_THREADS,
            THROUGHPUT_OVER_FLOOR);
    Optional<Throughput> top = find(throughput, defaults.name(), THROUGHPUT_THREADS);
    Optional<Throughput> bottom = find(throughput, floor.name(), THROUGHPUT_THREADS);
    if (top.isEmpty() || bottom.isEmpty()) {
      return Goal.notJudged(statement, "no " + THROUGHPUT_THREADS + "-thread figures");
    }
    List<Double> perRound = new ArrayList<>();
    List<Double> tops = top.get().rounds();
    List<Double> bottoms = bottom.get().rounds();
    for (int i = 0; i < tops.size() && i < bottoms.size(); i++) {
      perRound.add(bottoms.get(i) == 0 ? Double.NaN : tops.get(i) / bottoms.get(i));
    }
    double a = top.get().opsPerSecond();
    double b = bottom.get().opsPerSecond();
    return new Goal(
        statement,
        String.format(Locale.ROOT, "%,.0f / %,.0f ops/s", a, b),
        b == 0 ? Double.NaN : a / b,
        THROUGHPUT_OVER_FLOOR,
        false,
        spread(perRound),
        null);
  }

  private static Optional<String> skippedBetween(Contender a, Contender b) {
    for (Contender c : List.of(a, b)) {
      if (!c.runs()) {
        return Optional.of(c.name() + " " + c.skipped());
      }
    }
    return Optional.empty();
  }

  /** The totals of {@code client} with {@code threads} threads, if measured. */
  static Optional<Throughput> find(List<Throughput> throughput, String client, int threads) {
    return throughput.stream()
        .filter(t -> t.client().equals(client) && t.threads() == threads)
        .findFirst();
  }

  /**
   * One goal of the performance issue, judged on one run.
   *
   * @param statement what the goal says, e.g. {@code "plain p50 <= floor"}
   * @param figures the two figures the ratio divides, with their unit
   * @param ratio the first figure over the second
   * @param bound the goal's bound on the ratio
   * @param atMost whether the ratio must be at most the bound (else at least)
   * @param spread how the same ratio moved from round to round, if there were rounds
   * @param notJudged why the goal could not be judged (a row skipped); null when it was
   */
  record Goal(
      String statement,
      String figures,
      double ratio,
      double bound,
      boolean atMost,
      Optional<Spread> spread,
      String notJudged) {

    Goal {
      requireNonNull(statement, "statement");
      requireNonNull(spread, "spread");
    }

    static Goal notJudged(String statement, String why) {
      return new Goal(statement, "", Double.NaN, Double.NaN, true, Optional.empty(), why);
    }

    /** Whether the goal was judged: both its rows were measured. */
    boolean judged() {
      return notJudged == null;
    }

    /** Whether the ratio is within the bound (false when not judged, or the ratio is NaN). */
    boolean met() {
      return judged() && (atMost ? ratio <= bound : ratio >= bound);
    }

    /** {@code "met"}, {@code "NOT met"} or {@code "not judged"}. */
    String verdict() {
      return !judged() ? "not judged" : met() ? "met" : "NOT met";
    }
  }

  /** Whether the black hole's p99 ratio with breakers meets {@link #BREAKER_GOAL_RATIO}. */
  static boolean breakerGoalMet(double ratio) {
    return ratio <= BREAKER_GOAL_RATIO;
  }

  /**
   * A cycle this slow is counted apart in the breaker section: it waited for the black hole (a
   * fifth of the node timeout).
   */
  static long slowNanos(Duration nodeTimeout) {
    return nodeTimeout.toNanos() / 5;
  }

  /** How many of {@code op}'s samples took longer than {@link #slowNanos}. */
  static long slow(Operation op, Duration nodeTimeout) {
    long limit = slowNanos(nodeTimeout);
    long[] sorted = op.samples.sorted();
    long count = 0;
    for (int i = sorted.length - 1; i >= 0 && sorted[i] > limit; i--) {
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
