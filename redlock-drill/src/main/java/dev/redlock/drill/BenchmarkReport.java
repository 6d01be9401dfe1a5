package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.drill.Benchmark.Config;
import dev.redlock.drill.BenchmarkRun.Latency;
import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.drill.ThroughputRun.Run;
import dev.redlock.drill.ThroughputRun.Throughput;
import dev.redlock.testkit.RedisProcess;
import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * What the benchmark prints before and while it measures: the header and each section's progress
 * and rounds. {@link BenchmarkSummary} prints the summary of sections 1 to 3, {@link HealReport}
 * the heal section. Not thread-safe: the measuring thread prints.
 */
final class BenchmarkReport {

  private final PrintStream out;
  private final Rows rows;

  BenchmarkReport(PrintStream out) {
    this.out = requireNonNull(out, "out");
    this.rows = new Rows(out, 16);
  }

  /** Prints what the hint about masters that answered RESTARTED says, for one round. */
  void restartedHint() {
    out.println(Harness.restartedHint(1));
  }

  // ---- header ----

  /** Prints the masters, the machine, the clients and the plan. */
  void header(Config config, Masters masters, String admission, BlackHole hole) {
    List<String> uris = masters.uris();
    mastersAndMachine(masters);
    rows.row(
        "every RedLock",
        "node timeout "
            + Benchmark.NODE_TIMEOUT_MILLIS
            + " ms, ttl "
            + Benchmark.TTL.toSeconds()
            + " s, a new key per operation (no contention)");
    rows.row("plain RedLock", ".fencing(false).restartGuard(false): acquire is one SET key token");
    rows.row("", "NX PX ttl round (the Redlock algorithm as specified); circuit breakers on");
    rows.row(
        "default RedLock", "the defaults: fencing (acquire = vote round + fence-token round),");
    rows.row(
        "",
        "restart guard (maxLeaseTime "
            + RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds()
            + " s), circuit breakers (open wait "
            + RedLock.DEFAULT_CIRCUIT_BREAKER_WAIT.toMillis()
            + " ms)");
    rows.row("", "masters " + admission);
    rows.row(
        "transport",
        config.transport() == null
            ? "the library's default for redis:// masters"
            : config.transport() + " (--transport)");
    rows.row(
        "baseline",
        "one thread, "
            + uris.size()
            + " blocking sockets (TCP_NODELAY); a round writes the command to all "
            + uris.size()
            + ",");
    rows.row("", "then reads all " + uris.size() + " replies; RESP parsed by hand");
    rows.row("black hole", hole.node() + ": accepts, reads and discards, never answers (like a");
    rows.row(
        "",
        "Toxiproxy timeout toxic with timeout 0); replaces "
            + Masters.redact(uris.get(uris.size() - 1))
            + " in section 3");
    rows.row(
        "plan",
        String.format(
            Locale.ROOT,
            "1. latency: warm-up %,d ops per measurement; %,d timed ops each in %d rounds,",
            config.warmup(),
            config.iterations(),
            config.rounds()));
    rows.row("", "   blocks alternating, in reverse order every other round");
    rows.row(
        "",
        String.format(
            Locale.ROOT,
            "2. throughput: %s threads, %.1f s per client and thread count",
            threadCounts(),
            config.throughputTime().toNanos() / 1e9));
    rows.row(
        "",
        String.format(
            Locale.ROOT,
            "3. circuit breakers: %,d timed acquire+release each, after the breaker opened",
            config.blackholeIterations()));
    rows.row(
        "",
        masters.local()
            ? healPlan(masters, config.healRepeats())
            : "4. heal: skipped with --nodes (it hangs masters this program started)");
  }

  /** Prints the header of a run of the heal section alone. */
  void healOnlyHeader(Config config, Masters masters) {
    mastersAndMachine(masters);
    rows.row("plan", healPlan(masters, config.healRepeats()) + " (--only heal)");
  }

  private void mastersAndMachine(Masters masters) {
    List<String> uris = masters.uris();
    out.println();
    out.println("RedLock benchmark");
    rows.row("masters", uris.size() + " (" + masters.origin() + "), quorum " + masters.quorum());
    for (String uri : uris) {
      rows.row("", Masters.redact(uri));
    }
    if (masters.local()) {
      rows.row("redis-server", RedisProcess.binaryDescription());
    }
    rows.row(
        "machine",
        Runtime.getRuntime().availableProcessors()
            + " CPUs, Java "
            + System.getProperty("java.version")
            + " ("
            + System.getProperty("java.vm.name")
            + ")");
  }

  private static String healPlan(Masters masters, int repeats) {
    return String.format(
        Locale.ROOT,
        "4. heal: %d of %d masters hung, then resumed; time to the first lease, %d times",
        HealRun.HUNG,
        masters.uris().size(),
        repeats);
  }

  /** The throughput section's thread counts, e.g. {@code "8 and 32"}. */
  static String threadCounts() {
    return ThroughputRun.THREAD_COUNTS.get(0) + " and " + ThroughputRun.THREAD_COUNTS.get(1);
  }

  // ---- 1. latency ----

  void latencyWarmingUp(int warmup) {
    out.println();
    out.printf(Locale.ROOT, "1. Latency. Warming up: %,d operations per measurement...%n", warmup);
  }

  void latencyMeasuring(int rounds, int block) {
    out.printf(
        Locale.ROOT,
        "Measuring: %d rounds of %,d operations per measurement (p50 of each block, us)%n",
        rounds,
        block);
    out.printf(
        "  %-7s %26s   %26s%n", "", "---------- acquire ---------", "------ acquire+release -----");
    out.printf(
        "  %-7s %6s %6s %6s %4s %4s   %6s %6s %6s %4s %4s%n",
        "round", "plain", "base", "dflt", "p/b", "d/p", "plain", "base", "dflt", "p/b", "d/p");
  }

  void latencyRound(Latency ops, int round, int rounds) {
    out.printf(
        Locale.ROOT,
        "  %-7s %6s %6s %6s %4.2f %4.2f   %6s %6s %6s %4.2f %4.2f%n",
        (round + 1) + "/" + rounds,
        lastP50(ops.plainAcquire()),
        lastP50(ops.baselineAcquire()),
        lastP50(ops.defaultAcquire()),
        BenchmarkChecks.lastRatio(ops.plainAcquire(), ops.baselineAcquire()),
        BenchmarkChecks.lastRatio(ops.defaultAcquire(), ops.plainAcquire()),
        lastP50(ops.plainCycle()),
        lastP50(ops.baselineCycle()),
        lastP50(ops.defaultCycle()),
        BenchmarkChecks.lastRatio(ops.plainCycle(), ops.baselineCycle()),
        BenchmarkChecks.lastRatio(ops.defaultCycle(), ops.plainCycle()));
  }

  // ---- 2. throughput ----

  void throughputStart(Duration warmUp, Duration block) {
    out.println();
    out.printf(
        Locale.ROOT,
        "2. Throughput. Warming up %.1f s per client and thread count, then %d rounds of %.1f s"
            + " each (ops/s)%n",
        warmUp.toNanos() / 1e9,
        ThroughputRun.ROUNDS,
        block.toNanos() / 1e9);
  }

  void throughputHeading(List<Run> runs) {
    StringBuilder heading = new StringBuilder(String.format("  %-7s", "round"));
    for (Run run : runs) {
      heading.append(
          String.format(
              Locale.ROOT, " %14s", run.name().replace(" RedLock", "") + " x" + run.threads()));
    }
    out.println(heading);
  }

  /** One round's line: the latest block of each client and thread count, in heading order. */
  void throughputRound(int round, List<List<Throughput>> blocks) {
    StringBuilder line =
        new StringBuilder(
            String.format(Locale.ROOT, "  %-7s", (round + 1) + "/" + ThroughputRun.ROUNDS));
    for (List<Throughput> list : blocks) {
      line.append(String.format(Locale.ROOT, " %,14.0f", list.get(list.size() - 1).opsPerSecond()));
    }
    out.println(line);
  }

  // ---- 3. circuit breakers ----

  void breakersWarmingUp(BlackHole hole) {
    out.println();
    out.printf(
        "3. Circuit breakers: default RedLock, acquire+release; black hole %s in place of the"
            + " last master.%n",
        hole.node());
    out.println("Warming up the RedLock with breakers until its listener reports OPEN...");
  }

  void breakerOpened(BlackHole hole, long ops, long nanos) {
    out.printf(
        Locale.ROOT,
        "  breaker of %s reported OPEN after %,d acquire+release cycles (%,.1f ms)%n",
        hole.node(),
        ops,
        nanos / 1e6);
  }

  void breakerNotOpened(BlackHole hole) {
    out.printf(
        "  breaker of %s NOT reported OPEN within %d s; measuring anyway%n",
        hole.node(), BenchmarkRun.BREAKER_OPEN_LIMIT.toSeconds());
  }

  void breakersMeasuring(int rounds, int block) {
    out.printf(
        Locale.ROOT,
        "Measuring: %d rounds of %,d operations per measurement (p50 / p99 of each block, us)%n",
        rounds,
        block);
    out.printf(
        "  %-7s %17s   %17s   %17s%n",
        "round", "healthy", "hole, breakers on", "hole, no breakers");
  }

  void breakersRound(Operation healthy, Operation on, Operation off, int round, int rounds) {
    out.printf(
        Locale.ROOT,
        "  %-7s %17s   %17s   %17s%n",
        (round + 1) + "/" + rounds,
        lastP50AndP99(healthy),
        lastP50AndP99(on),
        lastP50AndP99(off));
  }

  // ---- after the sections ----

  /** After a run on local masters: how many keys each still holds. */
  void keysLeft(List<Long> sizes) {
    out.println();
    out.println(
        "Keys left on the masters (the default RedLock's fencing counters never expire): "
            + String.join(
                " / ", sizes.stream().map(n -> String.format(Locale.ROOT, "%,d", n)).toList()));
  }

  /** After a run on masters given by {@code --nodes}: how to remove the fencing counters. */
  void fencingCountersNote() {
    out.println();
    out.println(
        "Note: the default RedLock left a fencing counter on the masters for every key it locked"
            + " (they never");
    out.println(
        "expire, by design); remove them with redis-cli --scan --pattern"
            + " 'redlock:fence:bench:*' | xargs redis-cli del");
  }

  // ---- helpers ----

  private static String lastP50(Operation op) {
    return Percentiles.micros(op.lastBlock().p50());
  }

  private static String lastP50AndP99(Operation op) {
    Summary s = op.lastBlock();
    return Percentiles.micros(s.p50()) + " / " + Percentiles.micros(s.p99());
  }
}
