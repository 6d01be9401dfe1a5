package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.benchmark.Benchmark.Config;
import dev.redlock.benchmark.BenchmarkRun.Lineup;
import dev.redlock.benchmark.ThroughputRun.Run;
import dev.redlock.benchmark.ThroughputRun.Throughput;
import dev.redlock.drill.Harness;
import dev.redlock.drill.Masters;
import dev.redlock.drill.Percentiles;
import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.drill.Rows;
import dev.redlock.testkit.HostileMaster.Mode;
import dev.redlock.testkit.RedisProcess;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Locale;

/**
 * What the benchmark prints before and while it measures: the header and each section's progress
 * and rounds. {@link BenchmarkSummary} prints the summary of sections 1 to 4, {@link
 * IsolationReport} the isolation section's progress, {@link HealReport} the heal section. Not
 * thread-safe: the measuring thread prints.
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

  /** Prints the masters, the machine, the RedLocks' settings and the plan. */
  void header(Config config, Masters masters, String admission, BlackHole hole) {
    List<String> uris = masters.uris();
    mastersAndMachine(masters);
    rows.row(
        "every RedLock",
        "node timeout "
            + config.nodeTimeout().toMillis()
            + " ms, ttl "
            + Benchmark.TTL.toSeconds()
            + " s, a new key per operation (no contention)");
    rows.row("", "masters " + admission);
    rows.row(
        "transport",
        config.transport() == null
            ? "the library's default for redis:// masters"
            : config.transport() + " (--transport)");
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
            "2. throughput: %s threads, %.1f s per row and thread count",
            threadCounts(),
            config.throughputTime().toNanos() / 1e9));
    rows.row(
        "",
        String.format(
            Locale.ROOT,
            "3. circuit breakers: %,d timed acquire+release each, after the breaker opened",
            config.blackholeIterations()));
    rows.row("", isolationPlan(config));
    rows.row(
        "",
        masters.local()
            ? healPlan(masters, config.healRepeats())
            : "5. heal: skipped with --nodes (it hangs masters this program started)");
    out.println();
  }

  private static String isolationPlan(Config config) {
    if (!config.isolation()) {
      return "4. isolation: skipped (--skip " + Benchmark.ISOLATION + ")";
    }
    return String.format(
        Locale.ROOT,
        "4. isolation: the last master hostile in turn (%s), %,d tryAcquire each",
        String.join(", ", IsolationRun.MODES.stream().map(Mode::flag).toList()),
        config.isolationIterations());
  }

  /** Prints one line about getting a client ready (installing node-redlock, say). */
  void progress(String line) {
    out.println(line);
  }

  /** Prints what each row is, once the clients are ready (their versions known). */
  void contenders(Lineup lineup, int masters) {
    out.println();
    out.println("The rows (every one on the same masters, acquire+release of a new key):");
    Rows wide = new Rows(out, 10);
    wide.row(
        "floor",
        "hand-written: one thread, N blocking sockets (TCP_NODELAY); writes SET key token NX PX");
    wide.row(
        "", "ttl to all N, then reads the N replies; then the same for the release (RedLock's");
    wide.row(
        "", "release script by EVALSHA); RESP by hand; each throughput thread has own sockets");
    wide.row(
        "plain", "RedLock .fencing(false).restartGuard(false): one SET NX PX round to acquire");
    wide.row(
        "dflt",
        "RedLock defaults: fencing (token stored lazily, not read here), restart guard (maxLease");
    wide.row(
        "",
        "Time "
            + RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds()
            + " s), circuit breakers (open wait "
            + RedLock.DEFAULT_CIRCUIT_BREAKER_WAIT.toMillis()
            + " ms); acquire is one round");
    wide.row("token", "the same default RedLock; every cycle calls lease.fencingToken() (a quorum");
    wide.row("", "round that stores the token) before close()");
    wide.row("tls", describe(lineup.tls()));
    if (lineup.tls().runs()) {
      wide.row("", "the default RedLock on the same masters' TLS ports (rediss://, a private");
      wide.row("", "CA): the Jedis transport, a connection and an I/O thread per master");
    }
    wide.row("redisson", describe(lineup.redisson()));
    if (lineup.redisson().runs()) {
      wide.row("", "RedissonRedLock over one RedissonClient per master (single-server defaults):");
      wide.row("", "tryLock(0, ttl, ms) locks the masters one after another, then re-sets the");
      wide.row("", "expiry on all; unlock() on all in parallel; threads share the clients");
    }
    wide.row("node", describe(lineup.node()));
    if (lineup.node().runs()) {
      wide.row("", "a node child process: one ioredis connection per master, retryCount 0;");
      wide.row("", "acquire and release each resolve at a quorum; \"8/32 threads\" = 8/32");
      wide.row("", "concurrent async loops on its one event-loop thread; times itself");
    }
    if (masters != BenchmarkChecks.GOAL_MASTERS) {
      wide.row(
          "note",
          "the goals are stated for "
              + BenchmarkChecks.GOAL_MASTERS
              + " masters on loopback; this run has "
              + masters);
    }
  }

  private static String describe(Contender c) {
    return c.runs() ? c.name() : c.name() + ": " + c.skipped();
  }

  /** Prints the header of a run of the heal section alone. */
  void healOnlyHeader(Config config, Masters masters) {
    mastersAndMachine(masters);
    rows.row("plan", healPlan(masters, config.healRepeats()) + " (--only heal)");
  }

  /** Prints the header of a run of the isolation section alone. */
  void isolationOnlyHeader(Config config, Masters masters) {
    mastersAndMachine(masters);
    rows.row("plan", isolationPlan(config) + " (--only isolation)");
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
        "5. heal: %d of %d masters hung, then resumed; time to the first lease, %d times",
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

  void latencyMeasuring(Lineup lineup, int rounds, int block) {
    out.printf(
        Locale.ROOT,
        "Measuring: %d rounds of %,d operations per measurement (p50 of each block, us)%n",
        rounds,
        block);
    List<Contender> measured = lineup.measured();
    StringBuilder groups = new StringBuilder(String.format("  %-7s", ""));
    groups.append(centered("acquire alone", 3 * 9));
    groups.append("  ").append(centered("acquire+release", measured.size() * 9));
    groups.append("  ").append(centered("over floor", 3 * 6));
    out.println(groups.toString().stripTrailing());
    StringBuilder heading = new StringBuilder(String.format("  %-7s", "round"));
    for (String column : List.of("floor", "plain", "dflt")) {
      heading.append(String.format(" %8s", column));
    }
    heading.append("  ");
    for (Contender c : measured) {
      heading.append(String.format(" %8s", c.column()));
    }
    heading.append("  ");
    for (String column : List.of("plain", "dflt", "token")) {
      heading.append(String.format(" %5s", column));
    }
    out.println(heading);
  }

  void latencyRound(Lineup lineup, int round, int rounds) {
    StringBuilder line =
        new StringBuilder(String.format(Locale.ROOT, "  %-7s", (round + 1) + "/" + rounds));
    for (Operation op : lineup.alone().all()) {
      line.append(String.format(" %8s", lastP50(op)));
    }
    line.append("  ");
    for (Contender c : lineup.measured()) {
      line.append(String.format(" %8s", lastP50(c.latency())));
    }
    line.append("  ");
    Operation floor = lineup.floor().latency();
    for (Contender c : List.of(lineup.plain(), lineup.defaults(), lineup.token())) {
      line.append(
          String.format(Locale.ROOT, " %5.2f", BenchmarkChecks.lastRatio(c.latency(), floor)));
    }
    out.println(line);
  }

  // ---- 2. throughput ----

  void throughputStart(Duration warmUp, Duration block) {
    out.println();
    out.printf(
        Locale.ROOT,
        "2. Throughput. Warming up %.1f s per row and thread count, then %d rounds of %.1f s"
            + " each (ops/s)%n",
        warmUp.toNanos() / 1e9,
        ThroughputRun.ROUNDS,
        block.toNanos() / 1e9);
  }

  void throughputHeading(List<Contender> contenders) {
    StringBuilder heading = new StringBuilder(String.format("  %-7s %7s", "round", "threads"));
    for (Contender c : contenders) {
      if (c.runs()) {
        heading.append(String.format(Locale.ROOT, " %9s", c.column()));
      }
    }
    out.println(heading);
  }

  /**
   * One round's lines, one per thread count: the latest block of each row, in heading order.
   *
   * @param runs the runs, thread count first (as {@link ThroughputRun#runs} orders them)
   * @param blocks each run's blocks so far, in the order of {@code runs}
   */
  void throughputRound(int round, List<Run> runs, List<List<Throughput>> blocks) {
    for (int threads : ThroughputRun.THREAD_COUNTS) {
      StringBuilder line =
          new StringBuilder(
              String.format(
                  Locale.ROOT,
                  "  %-7s %7d",
                  threads == ThroughputRun.THREAD_COUNTS.get(0)
                      ? (round + 1) + "/" + ThroughputRun.ROUNDS
                      : "",
                  threads));
      for (int i = 0; i < runs.size(); i++) {
        if (runs.get(i).threads() == threads) {
          List<Throughput> list = blocks.get(i);
          line.append(
              String.format(Locale.ROOT, " %,9.0f", list.get(list.size() - 1).opsPerSecond()));
        }
      }
      out.println(line);
    }
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

  // ---- the chart ----

  /** What the chart says under its title: where and how it was measured. */
  String chartCaption(Config config, Masters masters) {
    return String.format(
        Locale.ROOT,
        "%d %s, %d CPUs, Java %s; node timeout %d ms; %,d timed ops per row in %d rounds,"
            + " throughput %.1f s per row and thread count; %s",
        masters.uris().size(),
        masters.local() ? "local redis-server masters" : "masters given by --nodes",
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        config.nodeTimeout().toMillis(),
        config.iterations(),
        config.rounds(),
        config.throughputTime().toNanos() / 1e9,
        LocalDate.now(ZoneOffset.UTC));
  }

  void chartWritten(Path chart) {
    out.println();
    out.println("Chart written to " + chart.toAbsolutePath().normalize());
  }

  // ---- after the sections ----

  /**
   * After a run on local masters: how many of the library's own keys ({@code redlock:*}: the one
   * fence counter, the dataset-birth marker, the admitted run) and how many keys in all each still
   * holds (lock keys until their TTL, and the peers' keys, such as Redisson's unlock latches).
   */
  void keysLeft(List<Long> own, List<Long> all) {
    out.println();
    out.println(
        "Keys left on the masters: the library's own (redlock:*) "
            + counts(own)
            + "; in all "
            + counts(all));
  }

  private static String counts(List<Long> sizes) {
    return String.join(
        " / ", sizes.stream().map(n -> String.format(Locale.ROOT, "%,d", n)).toList());
  }

  /** After a run on masters given by {@code --nodes}: what the run left on them. */
  void fencingCountersNote() {
    out.println();
    out.println(
        "Note: the library's own keys on the masters stay bounded (redlock:fence, one counter per"
            + " master; redlock:dataset-born;");
    out.println(
        "redlock:admitted); the lock keys expire with their TTL, and the peers' keys (Redisson's"
            + " unlock latches) with theirs.");
  }

  // ---- helpers ----

  private static String centered(String text, int width) {
    String dashes = "-".repeat(Math.max(2, (width - text.length() - 2) / 2));
    return String.format("%" + width + "s", dashes + " " + text + " " + dashes);
  }

  private static String lastP50(Operation op) {
    return Percentiles.micros(op.lastBlock().p50());
  }

  private static String lastP50AndP99(Operation op) {
    Summary s = op.lastBlock();
    return Percentiles.micros(s.p50()) + " / " + Percentiles.micros(s.p99());
  }
}
