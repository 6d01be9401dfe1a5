package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLockListener.CircuitState;
import dev.redlock.benchmark.Benchmark.Config;
import dev.redlock.benchmark.BreakerLog.Transition;
import dev.redlock.benchmark.IsolationRun.Block;
import dev.redlock.benchmark.IsolationRun.Cycles;
import dev.redlock.benchmark.IsolationRun.Isolation;
import dev.redlock.drill.Harness;
import dev.redlock.drill.Masters;
import dev.redlock.drill.Percentiles;
import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.testkit.HostileMaster;
import dev.redlock.testkit.HostileMaster.Stats;
import java.io.PrintStream;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * What the benchmark's isolation section ({@link IsolationRun}) prints: what it does, each block's
 * figures as it ends, and the section's summary table. The goals are printed with the others
 * ({@link BenchmarkSummary}). Not thread-safe.
 */
final class IsolationReport {

  private static final double MIB = 1024.0 * 1024.0;

  /** The longest line of a paragraph. */
  private static final int WIDTH = 100;

  private final PrintStream out;

  IsolationReport(PrintStream out) {
    this.out = requireNonNull(out, "out");
  }

  /** Prints what the section does. */
  void start(Config config, Masters masters) {
    List<String> uris = masters.uris();
    out.println();
    paragraph(
        "",
        String.format(
            Locale.ROOT,
            "4. Isolation: default RedLock (circuit breakers on), node timeout %d ms. A healthy block"
                + " on the %d masters, then one case per mode with the last master (%s) replaced"
                + " by a hostile master: a child JVM that answers the handshake, then misbehaves"
                + " from the first lock command on. Each cycle: tryAcquire of a new key (timed),"
                + " then release (not timed); up to %,d per block after a warm-up, a case stopping"
                + " after %d s. Heap growth: in use after System.gc(), the largest of the"
                + " checkpoints (each quarter of the cycles, every %d s, the end; RedLock open) over"
                + " before the RedLock.",
            config.nodeTimeout().toMillis(),
            uris.size(),
            Masters.redact(uris.get(uris.size() - 1)),
            config.isolationIterations(),
            IsolationRun.CASE_LIMIT.toSeconds(),
            IsolationRun.CHECKPOINT_INTERVAL.toSeconds()));
  }

  /**
   * Prints {@code text} in lines of at most {@value #WIDTH} characters, each after {@code indent}.
   */
  private void paragraph(String indent, String text) {
    StringBuilder line = new StringBuilder(indent);
    for (String word : text.split(" ")) {
      if (line.length() > indent.length() && line.length() + 1 + word.length() > WIDTH) {
        out.println(line);
        line.setLength(0);
        line.append(indent);
      }
      if (line.length() > indent.length()) {
        line.append(' ');
      }
      line.append(word);
    }
    out.println(line);
  }

  /** Prints one block's figures. */
  void block(Block b) {
    String name = String.format(Locale.ROOT, "  %-10s", b.name());
    if (!b.measured()) {
      out.println(name + " not measured: " + b.failure());
      return;
    }
    Cycles c = b.cycles();
    Summary s = b.summary();
    out.printf(
        Locale.ROOT,
        "%s %s in %.1f s%s%n",
        name,
        granted(c),
        c.nanos / 1e9,
        c.cutShort ? " (cut short)" : "");
    String indent = " ".repeat(13);
    out.printf(
        Locale.ROOT,
        "%stryAcquire p50 %s, p99 %s, max %s us; heap %s (largest of %d checkpoints; %s at the"
            + " end)%n",
        indent,
        Percentiles.micros(s.p50()),
        Percentiles.micros(s.p99()),
        Percentiles.micros(s.max()),
        mib(b.heapGrowth()),
        c.checkpoints,
        mib(c.heapGrowthAtEnd()));
    if (b.mode() == null) {
      out.println(indent + "masters " + b.about());
    } else {
      out.println(indent + "hostile " + b.about() + ":");
      out.println(
          indent
              + "  "
              + b.hostile()
                  .map(IsolationReport::describe)
                  .orElse("no figures: " + b.hostileSilent())
              + "; its breaker went OPEN "
              + times(b.watch().hostileOpened()));
    }
    out.printf(
        Locale.ROOT,
        "%shealthy masters: %,d failed votes in %,d rounds; breakers: %s%n",
        indent,
        b.watch().failedVotes(),
        b.watch().roundsWithFailedVotes(),
        breakers(b.watch().healthyBreakers(), b.watch().measuringSince()));
  }

  /** Prints how long the section took. */
  void done(Duration took) {
    out.printf(
        Locale.ROOT,
        "  (the section took %.1f s, the hostile masters' start-up included)%n",
        took.toNanos() / 1e9);
  }

  /** The healthy masters' breaker transitions in a few words. */
  private static String breakers(List<Transition> transitions, long since) {
    if (transitions.isEmpty()) {
      return "no transitions";
    }
    Map<CircuitState, Long> byState =
        transitions.stream()
            .collect(
                Collectors.groupingBy(
                    Transition::state,
                    () -> new EnumMap<>(CircuitState.class),
                    Collectors.counting()));
    long nodes = transitions.stream().map(Transition::node).distinct().count();
    return String.format(
        Locale.ROOT,
        "%,d on %d masters (%s), the first %,d ms in",
        transitions.size(),
        nodes,
        byState.entrySet().stream()
            .map(e -> e.getValue() + " " + e.getKey())
            .collect(Collectors.joining(", ")),
        TimeUnit.NANOSECONDS.toMillis(transitions.get(0).at() - since));
  }

  private static String times(long n) {
    return n == 1 ? "once" : String.format(Locale.ROOT, "%,d times", n);
  }

  /** Prints the hint for masters that answered RESTARTED. */
  void restartedHint() {
    out.println(Harness.restartedHint(1));
  }

  /** Prints the section's summary table and what its figures mean. */
  void summary(Isolation isolation) {
    Block healthy = isolation.healthy();
    int n = isolation.masters();
    out.printf(
        "4. Isolation, default RedLock, tryAcquire   %11s %8s %8s %8s %9s %6s %5s%n",
        "granted", "p50 us", "p99 us", "max us", "heap MiB", "votes", "open");
    row(n + " healthy masters", healthy);
    for (Block b : isolation.cases()) {
      row((n - 1) + " healthy + " + b.name(), b);
    }
    long allowance =
        BenchmarkChecks.isolationP99Allowance(healthy.measured() ? healthy.summary().p99() : 0);
    long interval = HostileMaster.DEFAULT_INTERVAL.toMillis();
    paragraph(
        "  ",
        String.format(
            Locale.ROOT,
            "p99 allowed: %.1f x the healthy p99 + %d ms = %s us; heap growth allowed: %d MiB."
                + " votes: the healthy masters' failed (FAILED or TIMED_OUT) acquire votes; open:"
                + " their breakers going OPEN. flood: '+' then 'x' forever, no CRLF; garbage: a"
                + " '?' line of junk per command; slowloris: the right replies, a byte per %d ms;"
                + " oversize: '$%d' then %,d bytes per %d ms; reset: an RST at the first lock"
                + " command.",
            BenchmarkChecks.ISOLATION_P99_FACTOR,
            BenchmarkChecks.ISOLATION_P99_SLACK.toMillis(),
            Percentiles.micros(allowance),
            BenchmarkChecks.ISOLATION_HEAP_BYTES / (1024 * 1024),
            interval,
            HostileMaster.OVERSIZE_LENGTH,
            HostileMaster.TRICKLE_BYTES,
            interval));
  }

  private void row(String label, Block b) {
    if (!b.measured()) {
      out.printf("  %-41s not measured: %s%n", label, b.failure());
      return;
    }
    Summary s = b.summary();
    Cycles c = b.cycles();
    out.printf(
        Locale.ROOT,
        "  %-41s %11s %8s %8s %8s %9s %,6d %,5d%n",
        label,
        String.format(Locale.ROOT, "%,d/%,d", c.granted, c.attempts),
        Percentiles.micros(s.p50()),
        Percentiles.micros(s.p99()),
        Percentiles.micros(s.max()),
        String.format(Locale.ROOT, "%+.1f", b.heapGrowth() / MIB),
        b.watch().failedVotes(),
        b.watch().healthyOpened());
  }

  private static String granted(Cycles c) {
    String line = String.format(Locale.ROOT, "%,d of %,d granted", c.granted, c.attempts);
    List<String> not =
        List.of(
                c.unavailable > 0 ? String.format(Locale.ROOT, "%,d no quorum", c.unavailable) : "",
                c.refused > 0 ? String.format(Locale.ROOT, "%,d refused", c.refused) : "",
                c.releaseFailures > 0
                    ? String.format(Locale.ROOT, "%,d releases failed", c.releaseFailures)
                    : "")
            .stream()
            .filter(x -> !x.isEmpty())
            .collect(Collectors.toList());
    return not.isEmpty() ? line : line + " (" + String.join(", ", not) + ")";
  }

  private static String describe(Stats stats) {
    return String.format(
        Locale.ROOT,
        "%,d connections, %,d met the mode, %,d bytes sent",
        stats.accepted(),
        stats.misbehaving(),
        stats.bytesSent());
  }

  /** Bytes as signed MiB with one decimal, e.g. {@code "+68.2 MiB"}. */
  static String mib(long bytes) {
    return String.format(Locale.ROOT, "%+.1f MiB", bytes / MIB);
  }
}
