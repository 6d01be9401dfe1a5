package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.RedLockListener.CircuitState;
import dev.redlock.drill.BenchmarkRun.BreakerWatch;
import dev.redlock.drill.BenchmarkRun.Breakers;
import dev.redlock.drill.BenchmarkRun.Latency;
import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.drill.ThroughputRun.Throughput;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The summary of the benchmark's sections 1 to 3: each measurement's percentiles, the ratios next
 * to their goals, the black hole's figures, and a paragraph on what explains them. Not thread-safe.
 */
final class BenchmarkSummary {

  private final PrintStream out;

  BenchmarkSummary(PrintStream out) {
    this.out = requireNonNull(out, "out");
  }

  /** Prints the summary of sections 1 to 3 and what explains their figures. */
  void print(
      int masters,
      Latency l,
      List<Throughput> throughput,
      Breakers b,
      BreakerWatch healthyWatch,
      BlackHole hole) {
    out.println();
    out.println("Summary");
    out.println();
    latencySummary(l);
    out.println();
    throughputSummary(throughput);
    out.println();
    breakersSummary(masters, b, healthyWatch, hole);
    out.println();
    explanation(masters);
  }

  private void latencySummary(Latency l) {
    out.printf(
        "1. Uncontended latency, one thread, new key per op      %8s %8s %9s %7s%n",
        "p50 us", "p99 us", "samples", "failed");
    latencyRow("acquire", l.plainAcquire());
    latencyRow("", l.baselineAcquire());
    double acquireRatio =
        BenchmarkChecks.ratio(l.plainAcquire(), l.baselineAcquire(), Summary::p50);
    ratioRow(
        "ratio plain / baseline", l.plainAcquire(), l.baselineAcquire(), goalNote(acquireRatio));
    spreadRow(l.plainAcquire().blockRatios(l.baselineAcquire()));
    latencyRow("", l.defaultAcquire());
    ratioRow("fencing cost: default / plain", l.defaultAcquire(), l.plainAcquire(), "");
    spreadRow(l.defaultAcquire().blockRatios(l.plainAcquire()));
    latencyRow("acquire+release", l.plainCycle());
    latencyRow("", l.baselineCycle());
    ratioRow("ratio plain / baseline", l.plainCycle(), l.baselineCycle(), "");
    spreadRow(l.plainCycle().blockRatios(l.baselineCycle()));
    latencyRow("", l.defaultCycle());
    ratioRow("fencing cost: default / plain", l.defaultCycle(), l.plainCycle(), "");
    spreadRow(l.defaultCycle().blockRatios(l.plainCycle()));
  }

  private void throughputSummary(List<Throughput> throughput) {
    out.printf(
        "2. Throughput, acquire+release, one shared RedLock     %8s %8s %9s %7s%n",
        "p50 us", "p99 us", "ops/s", "failed");
    for (Throughput t : throughput) {
      Summary s = t.latency().summary();
      out.printf(
          Locale.ROOT,
          "  %-52s %8s %8s %,9.0f %,7d%n",
          String.format(Locale.ROOT, "%s, %2d threads, own keys", t.client(), t.threads()),
          Percentiles.micros(s.p50()),
          Percentiles.micros(s.p99()),
          t.opsPerSecond(),
          t.failed());
    }
  }

  private void breakersSummary(int masters, Breakers b, BreakerWatch healthyWatch, BlackHole hole) {
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
        TimeUnit.NANOSECONDS.toMillis(BenchmarkChecks.SLOW_NANOS),
        BenchmarkChecks.slow(b.healthy()),
        BenchmarkChecks.slow(b.withBreakers()),
        BenchmarkChecks.slow(b.withoutBreakers()));
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
        "the baseline waits for all %d replies. A release waits for every master in both, except a"
            + " master%n",
        masters);
    out.println(
        "whose circuit breaker is open: it is sent the release, which is not waited for. The"
            + " default's acquire");
    out.println(
        "runs the acquire script (which also applies the restart guard) and then the fence round.");
    out.println(
        "The black hole accepts connections but never completes the handshake, so each connect"
            + " attempt fails");
    out.println(
        "after the node timeout and the node client then fails commands at once for a moment:"
            + " without");
    out.println(
        "breakers only the releases that meet a connect attempt wait (cycles over 10 ms above);"
            + " with breakers,");
    out.println(
        "only a probe release in HALF_OPEN does, about once per open wait. Compare p99.9 and max"
            + " too.");
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

  private void latencyRow(String group, Operation op) {
    Summary s = op.summary();
    out.printf(
        Locale.ROOT,
        "  %-16s %-35s %8s %8s %,9d %,7d%n",
        group,
        op.label,
        Percentiles.micros(s.p50()),
        Percentiles.micros(s.p99()),
        s.count(),
        op.failures);
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

  private void ratioRow(String label, Operation numerator, Operation denominator, String note) {
    out.printf(
        Locale.ROOT,
        "  %-16s %-35s %8.2f %8.2f%s%n",
        "",
        label,
        BenchmarkChecks.ratio(numerator, denominator, Summary::p50),
        BenchmarkChecks.ratio(numerator, denominator, Summary::p99),
        note.isEmpty() ? "" : "   " + note);
  }

  /** How much the ratio of the p50s moved from round to round: a measure of the noise. */
  private void spreadRow(List<Double> ratios) {
    BenchmarkChecks.spread(ratios)
        .ifPresent(
            spread ->
                out.printf(
                    Locale.ROOT,
                    "  %-16s   per-round p50 ratios: median %.2f, from %.2f to %.2f%n",
                    "",
                    spread.median(),
                    spread.min(),
                    spread.max()));
  }

  private static String goalNote(double ratio) {
    return String.format(
        Locale.ROOT,
        "goal p50 <= %.2f: %s",
        BenchmarkChecks.GOAL_RATIO,
        BenchmarkChecks.latencyGoalMet(ratio) ? "met" : "NOT met");
  }
}
