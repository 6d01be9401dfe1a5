package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.RedLockListener.CircuitState;
import dev.redlock.benchmark.Benchmark.Config;
import dev.redlock.benchmark.BenchmarkChecks.Goal;
import dev.redlock.benchmark.BenchmarkRun.BreakerWatch;
import dev.redlock.benchmark.BenchmarkRun.Breakers;
import dev.redlock.benchmark.BenchmarkRun.Lineup;
import dev.redlock.benchmark.IsolationRun.Isolation;
import dev.redlock.benchmark.ThroughputRun.Throughput;
import dev.redlock.drill.Percentiles;
import dev.redlock.drill.Percentiles.Summary;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The summary of the benchmark's sections 1 to 4: every row's latency and throughput in one table,
 * acquire alone, the performance goals and the isolation goals with their ratios and verdicts, the
 * black hole's figures, the isolation cases' figures, and a paragraph on what explains them. Not
 * thread-safe.
 */
final class BenchmarkSummary {

  private static final String PERFORMANCE_GOALS =
      "Goals (the performance issue: "
          + BenchmarkChecks.GOAL_MASTERS
          + " masters on loopback, acquire+release; p50 of every sample)";

  private static final String ISOLATION_GOALS =
      "Goals (issue 15, isolation: one master hostile, the others healthy; tryAcquire)";

  private final PrintStream out;

  BenchmarkSummary(PrintStream out) {
    this.out = requireNonNull(out, "out");
  }

  /**
   * Prints the summary of sections 1 to 4 and what explains their figures.
   *
   * @param isolation the isolation section's figures; empty if it was skipped
   * @param isolationReport prints the isolation section's table
   */
  void print(
      Config config,
      int masters,
      Lineup lineup,
      List<Throughput> throughput,
      Breakers b,
      BreakerWatch healthyWatch,
      BlackHole hole,
      Optional<Isolation> isolation,
      IsolationReport isolationReport) {
    out.println();
    out.println("Summary");
    out.println();
    table(masters, lineup, throughput);
    out.println();
    acquireAlone(lineup);
    out.println();
    goals(PERFORMANCE_GOALS, masters, BenchmarkChecks.goals(lineup, throughput));
    if (isolation.isPresent()) {
      isolationGoals(isolation.get());
    } else {
      out.println(ISOLATION_GOALS + ": not judged, --skip " + Benchmark.ISOLATION);
    }
    out.println();
    breakersSummary(config, masters, b, healthyWatch, hole);
    out.println();
    if (isolation.isPresent()) {
      isolationReport.summary(isolation.get());
    } else {
      out.println("4. Isolation: skipped (--skip " + Benchmark.ISOLATION + ")");
    }
    out.println();
    explanation(masters);
  }

  /** Prints the summary of the isolation section run alone: its goals and its table. */
  void printIsolation(Isolation isolation, IsolationReport isolationReport) {
    out.println();
    out.println("Summary");
    out.println();
    isolationGoals(isolation);
    out.println();
    isolationReport.summary(isolation);
  }

  private void isolationGoals(Isolation isolation) {
    goals(ISOLATION_GOALS, isolation.masters(), BenchmarkChecks.isolationGoals(isolation));
  }

  private void table(int masters, Lineup lineup, List<Throughput> throughput) {
    out.printf(
        "1+2. Acquire+release, %d masters      ------- one thread -------   --- throughput, ops/s"
            + " ---%n",
        masters);
    out.printf(
        "  %-34s %7s %7s %8s %6s %9s %9s %6s%n",
        "",
        "p50 us",
        "p99 us",
        "samples",
        "failed",
        ThroughputRun.THREAD_COUNTS.get(0) + " thr",
        ThroughputRun.THREAD_COUNTS.get(1) + " thr",
        "failed");
    for (Contender c : lineup.all()) {
      if (!c.runs()) {
        out.printf("  %-34s %s%n", c.name(), c.skipped());
        continue;
      }
      Summary s = c.latency().summary();
      long failed = 0;
      StringBuilder rates = new StringBuilder();
      for (int threads : ThroughputRun.THREAD_COUNTS) {
        Optional<Throughput> t = BenchmarkChecks.find(throughput, c.name(), threads);
        rates.append(
            t.map(x -> String.format(Locale.ROOT, " %,9.0f", x.opsPerSecond()))
                .orElse(String.format(" %9s", "-")));
        failed += t.map(Throughput::failed).orElse(0L);
      }
      out.printf(
          Locale.ROOT,
          "  %-34s %7s %7s %,8d %,6d%s %,6d%n",
          c.name(),
          Percentiles.micros(s.p50()),
          Percentiles.micros(s.p99()),
          s.count(),
          c.latency().failures,
          rates,
          failed);
    }
  }

  private void acquireAlone(Lineup lineup) {
    out.printf(
        "Acquire alone (its release not timed)  %7s %7s %8s %6s%n",
        "p50 us", "p99 us", "samples", "failed");
    for (Operation op : lineup.alone().all()) {
      Summary s = op.summary();
      out.printf(
          Locale.ROOT,
          "  %-36s %7s %7s %,8d %,6d%n",
          op.label,
          Percentiles.micros(s.p50()),
          Percentiles.micros(s.p99()),
          s.count(),
          op.failures);
    }
  }

  /**
   * Prints a block of goals: its heading, a caveat when the run's masters are not as many as the
   * goals are stated for, and each goal with its verdict.
   */
  private void goals(String heading, int masters, List<Goal> goals) {
    out.println(heading);
    if (masters != BenchmarkChecks.GOAL_MASTERS) {
      out.printf(
          "  (this run has %d masters: the verdicts below are for its figures, not the goals')%n",
          masters);
    }
    goals.forEach(this::goal);
  }

  private void goal(Goal g) {
    if (!g.judged()) {
      out.printf("  %-34s %s: %s%n", g.statement(), g.verdict(), g.notJudged());
      return;
    }
    String spread =
        g.spread()
            .map(
                x ->
                    String.format(
                        Locale.ROOT,
                        "   per round %.2f to %.2f, median %.2f",
                        x.min(),
                        x.max(),
                        x.median()))
            .orElse("");
    out.println(
        String.format(
                Locale.ROOT,
                "  %-34s %-24s = %5.2f  %-8s%s",
                g.statement(),
                g.figures(),
                g.ratio(),
                g.verdict(),
                spread)
            .stripTrailing());
  }

  private void breakersSummary(
      Config config, int masters, Breakers b, BreakerWatch healthyWatch, BlackHole hole) {
    out.printf(
        "3. Circuit breakers, default RedLock, acquire+release   %8s %8s %8s %8s %7s %6s%n",
        "p50 us", "p99 us", "p99.9 us", "max us", "samples", "failed");
    breakerRow(masters + " healthy masters", b.healthy());
    breakerRow((masters - 1) + " healthy + black hole, breakers on", b.withBreakers());
    breakerRow((masters - 1) + " healthy + black hole, breakers off", b.withoutBreakers());
    double withRatio = BenchmarkChecks.ratio(b.withBreakers(), b.healthy(), Summary::p99);
    double withoutRatio = BenchmarkChecks.ratio(b.withoutBreakers(), b.healthy(), Summary::p99);
    out.printf(
        Locale.ROOT,
        "  %-53s %8.2f   goal <= %.2f: %s%n",
        "p99 ratio black hole with breakers / healthy",
        withRatio,
        BenchmarkChecks.BREAKER_GOAL_RATIO,
        BenchmarkChecks.breakerGoalMet(withRatio) ? "met" : "NOT met");
    out.printf(
        Locale.ROOT,
        "  %-53s %8.2f%n",
        "p99 ratio black hole without breakers / healthy",
        withoutRatio);
    out.printf(
        Locale.ROOT,
        "  cycles over %d ms: healthy %,d, breakers on %,d, breakers off %,d%n",
        TimeUnit.NANOSECONDS.toMillis(BenchmarkChecks.slowNanos(config.nodeTimeout())),
        BenchmarkChecks.slow(b.healthy(), config.nodeTimeout()),
        BenchmarkChecks.slow(b.withBreakers(), config.nodeTimeout()),
        BenchmarkChecks.slow(b.withoutBreakers(), config.nodeTimeout()));
    if (b.openedAfterOps() >= 0) {
      out.printf(
          Locale.ROOT,
          "  breaker of %s: OPEN after %,d warm-up cycles (%,.1f ms); while measuring: %s%n",
          hole.node(),
          b.openedAfterOps(),
          b.openedAfterNanos() / 1e6,
          describeTransitions(b.duringMeasurement()));
    } else {
      out.printf(
          "  breaker of %s was NOT reported OPEN during the warm-up (limit %d s)%n",
          hole.node(), BenchmarkRun.BREAKER_OPEN_LIMIT.toSeconds());
    }
    out.printf(
        Locale.ROOT,
        "  black hole: %,d connections accepted, %,d bytes swallowed, not one byte answered%n",
        hole.accepted(),
        hole.discarded());
    List<String> others = healthyWatch.others();
    out.println(
        "  breakers of the healthy masters: "
            + (others.isEmpty()
                ? "no transitions (plain and default RedLock)"
                : others.size() + " transitions: " + others));
  }

  private void explanation(int masters) {
    out.printf(
        "RedLock decides an acquire round once %d of %d masters granted (the other replies are"
            + " still read);%n",
        masters / 2 + 1, masters);
    out.printf(
        "the floor waits for all %d replies. A RedLock release is decided once %d masters answered"
            + " (the floor%n",
        masters, masters / 2 + 1);
    out.println(
        "waits for all); a master whose circuit breaker is open is sent the release, never waited"
            + " for. node-redlock");
    out.println(
        "resolves both acquire and release at a quorum. Redisson takes the masters' locks one"
            + " after another.");
    out.println(
        "The black hole accepts connections but never completes the handshake, so each connect"
            + " attempt fails");
    out.println(
        "after the node timeout and the node client then fails commands at once for a moment."
            + " Acquire and");
    out.println(
        "release rounds are both decided by a majority, so a round waits for the black hole"
            + " only when");
    out.println(
        "too few others answer; breakers spare the connect attempts and the commands sent into"
            + " it. Compare");
    out.println("p99.9 and max too.");
  }

  private static String describeTransitions(List<CircuitState> states) {
    if (states.isEmpty()) {
      return "no transitions (stayed OPEN)";
    }
    long halfOpen = states.stream().filter(s -> s == CircuitState.HALF_OPEN).count();
    long open = states.stream().filter(s -> s == CircuitState.OPEN).count();
    long closed = states.stream().filter(s -> s == CircuitState.CLOSED).count();
    return String.format(
        Locale.ROOT,
        "%d probes (HALF_OPEN), %d back to OPEN, %d CLOSED (open wait %d ms)",
        halfOpen,
        open,
        closed,
        RedLock.DEFAULT_CIRCUIT_BREAKER_WAIT.toMillis());
  }

  private void breakerRow(String label, Operation op) {
    long[] sorted = op.samples.sorted();
    Summary s = Percentiles.summarize(sorted);
    long p999 = sorted.length == 0 ? 0 : Percentiles.nearestRank(sorted, 99.9);
    out.printf(
        Locale.ROOT,
        "  %-53s %8s %8s %8s %8s %,7d %,6d%n",
        label,
        Percentiles.micros(s.p50()),
        Percentiles.micros(s.p99()),
        Percentiles.micros(p999),
        Percentiles.micros(s.max()),
        s.count(),
        op.failures);
  }
}
