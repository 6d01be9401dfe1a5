package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.drill.Flags.UsageException;
import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.function.ToLongFunction;

/**
 * Prints latency and throughput figures for RedLock next to a hand-written baseline, measured in
 * one run against the same masters. A program that reports, not a test: it passes no judgement
 * beyond printing the ratio to the goal.
 *
 * <pre>
 * mvn -q -o -pl redlock-drill package -Pbench
 * mvn -q -o -pl redlock-drill package -Pbench -Dbench.args="--iterations 50000 --rounds 20"
 * </pre>
 *
 * <h2>What it measures</h2>
 *
 * <ol>
 *   <li><b>Uncontended latency</b>, one thread, a new key per operation: {@code tryAcquire} alone
 *       (the release that follows is not timed) and {@code tryAcquire} plus {@code close()}.
 *   <li><b>The baseline</b> for both, on the same thread: {@link BaselineClient}, N blocking
 *       sockets that write {@code SET key token NX PX ttl} to every master, then read every reply;
 *       for the full cycle, a second round with the same release script RedLock uses. Its timed
 *       part includes making the token (the same 128 bits of {@link SecureRandom}) and encoding the
 *       key, as RedLock's does.
 *   <li><b>Throughput</b> of acquire plus release with 8 and 32 threads sharing one RedLock.
 * </ol>
 *
 * Every measurement is warmed up first. The latency measurements then run in rounds of short
 * blocks, RedLock and baseline alternating, in reverse order every other round, so that noise on
 * the machine (another process, a GC, frequency scaling) falls on both alike; the throughput blocks
 * alternate the same way.
 */
public final class Benchmark {

  /** How many local masters are started when {@code --nodes} is not given. */
  static final int LOCAL_MASTERS = 5;

  static final int DEFAULT_ITERATIONS = 20_000;
  static final int DEFAULT_WARMUP = 5_000;
  static final int DEFAULT_ROUNDS = 10;
  static final Duration DEFAULT_THROUGHPUT_TIME = Duration.ofSeconds(3);

  /** The goal for RedLock's p50 acquire latency over the baseline's SET round. */
  static final double GOAL_RATIO = 1.15;

  private static final int THROUGHPUT_ROUNDS = 3;
  private static final List<Integer> THREAD_COUNTS = List.of(8, 32);
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration BASELINE_TIMEOUT = Duration.ofSeconds(2);

  private static final Set<String> FLAGS =
      Set.of("nodes", "iterations", "warmup", "rounds", "throughput-seconds");

  private static final String USAGE =
      String.format(
          Locale.ROOT,
          """
          Usage: Benchmark [options]

          Prints RedLock's acquire and acquire+release latency next to a hand-written baseline
          (blocking sockets, hand-parsed RESP) on the same masters, and RedLock's throughput with
          %s threads.

          Options:
            --nodes URI,URI,...       Redis masters to use (plain redis:// for the baseline)
                                      (default: start %d local redis-server processes)
            --iterations N            timed operations per latency measurement (default %,d)
            --warmup N                untimed operations per measurement first (default %,d)
            --rounds R                blocks each latency measurement is split into (default %d)
            --throughput-seconds S    time per thread count, split into %d blocks (default %d)
            -h, --help                show this help
          """,
          THREAD_COUNTS.get(0) + " and " + THREAD_COUNTS.get(1),
          LOCAL_MASTERS,
          DEFAULT_ITERATIONS,
          DEFAULT_WARMUP,
          DEFAULT_ROUNDS,
          THROUGHPUT_ROUNDS,
          DEFAULT_THROUGHPUT_TIME.toSeconds());

  private Benchmark() {}

  /**
   * Runs the benchmark with the options shown by {@code --help}, prints the figures to standard
   * output and exits: 0 if it ran, 1 if it could not, 2 for a bad command line.
   *
   * @param args the command-line options
   */
  public static void main(String[] args) {
    int code = run(args, System.out);
    System.out.flush();
    System.exit(code);
  }

  /** Parses {@code args}, runs the benchmark, prints to {@code out} and returns the exit code. */
  static int run(String[] args, PrintStream out) {
    Config config;
    try {
      Flags flags = Flags.parse(args, FLAGS);
      if (flags.help()) {
        out.print(USAGE);
        return 0;
      }
      config = Config.from(flags);
    } catch (UsageException e) {
      out.println("benchmark: " + e.getMessage());
      out.println("Run with --help to see the options.");
      return 2;
    }
    try {
      run(config, out);
      return 0;
    } catch (IOException | RuntimeException e) {
      out.println("benchmark failed: " + e);
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      out.println("benchmark interrupted");
      return 1;
    }
  }

  /**
   * Runs every measurement and prints the figures: starts local masters unless {@code config} names
   * some, and shuts everything down on every path.
   *
   * @throws IOException if the baseline cannot talk to a master
   */
  static void run(Config config, PrintStream out) throws IOException, InterruptedException {
    requireNonNull(config, "config");
    requireNonNull(out, "out");
    if (!config.nodes().isEmpty()) {
      measure(config, config.nodes(), "given by --nodes", out);
      return;
    }
    out.printf("Starting %d local redis-server masters...%n", LOCAL_MASTERS);
    try (RedisCluster cluster = RedisCluster.start(LOCAL_MASTERS)) {
      measure(config, cluster.uris(), "local redis-server processes", out);
    }
  }

  private static void measure(Config config, List<String> uris, String origin, PrintStream out)
      throws IOException, InterruptedException {
    try (RedLock redlock = RedLock.builder().nodes(uris).build();
        BaselineClient baseline = BaselineClient.connect(uris, BASELINE_TIMEOUT)) {
      printHeader(config, uris, origin, out);
      Bench bench = new Bench(redlock, baseline, uris.size() / 2 + 1);
      bench.warmUp(config, out);
      Map<Kind, Samples> latency = bench.latency(config, out);
      Map<Integer, Throughput> throughput = bench.throughput(config, out);
      printSummary(uris.size(), bench, latency, throughput, out);
    }
  }

  // ---- measurements ----

  /** The four latency measurements, in the order of an even round. */
  enum Kind {
    REDLOCK_ACQUIRE("RedLock tryAcquire"),
    BASELINE_ACQUIRE("baseline SET NX PX round"),
    REDLOCK_CYCLE("RedLock tryAcquire + close"),
    BASELINE_CYCLE("baseline SET round + EVALSHA round");

    final String label;

    Kind(String label) {
      this.label = label;
    }
  }

  /** The benchmark's state: one RedLock, one baseline, the key sequence and failure counts. */
  private static final class Bench {
    final RedLock redlock;
    final BaselineClient baseline;
    final int quorum;
    final SecureRandom random = new SecureRandom();
    final Map<Kind, Long> failures = new EnumMap<>(Kind.class);
    final List<Double> acquireRatios = new ArrayList<>();
    final List<Double> cycleRatios = new ArrayList<>();
    long sequence;

    Bench(RedLock redlock, BaselineClient baseline, int quorum) {
      this.redlock = redlock;
      this.baseline = baseline;
      this.quorum = quorum;
      for (Kind kind : Kind.values()) {
        failures.put(kind, 0L);
      }
    }

    void warmUp(Config config, PrintStream out) throws IOException, InterruptedException {
      out.println();
      out.printf(
          Locale.ROOT,
          "Warming up: %,d operations per measurement, then 0.5 s per thread count...%n",
          config.warmup());
      int block = Math.max(1, Math.min(500, config.warmup()));
      for (int done = 0; done < config.warmup(); done += block) {
        for (Kind kind : Kind.values()) {
          for (int i = 0; i < Math.min(block, config.warmup() - done); i++) {
            once(kind);
          }
        }
      }
      for (int threads : THREAD_COUNTS) {
        runThroughput(threads, Duration.ofMillis(500));
      }
      failures.replaceAll((kind, count) -> 0L);
    }

    Map<Kind, Samples> latency(Config config, PrintStream out) throws IOException {
      Map<Kind, Samples> all = new EnumMap<>(Kind.class);
      for (Kind kind : Kind.values()) {
        all.put(kind, new Samples());
      }
      int block = (config.iterations() + config.rounds() - 1) / config.rounds();
      out.println();
      out.printf(
          Locale.ROOT,
          "Measuring latency: %d rounds of %,d operations per measurement (p50 of each block, us)%n",
          config.rounds(),
          block);
      out.printf(
          "  %-7s %11s %11s %6s   %11s %11s %6s%n",
          "round", "RL acquire", "BL SET", "ratio", "RL acq+rel", "BL SET+rel", "ratio");
      int remaining = config.iterations();
      for (int round = 0; round < config.rounds() && remaining > 0; round++) {
        int count = Math.min(block, remaining);
        remaining -= count;
        Map<Kind, Long> p50 = new EnumMap<>(Kind.class);
        Kind[] order = Kind.values();
        for (int k = 0; k < order.length; k++) {
          Kind kind = round % 2 == 0 ? order[k] : order[order.length - 1 - k];
          Samples samples = new Samples();
          for (int i = 0; i < count; i++) {
            samples.add(once(kind));
          }
          p50.put(kind, samples.summary().p50());
          all.get(kind).addAll(samples);
        }
        acquireRatios.add(ratio(p50.get(Kind.REDLOCK_ACQUIRE), p50.get(Kind.BASELINE_ACQUIRE)));
        cycleRatios.add(ratio(p50.get(Kind.REDLOCK_CYCLE), p50.get(Kind.BASELINE_CYCLE)));
        out.printf(
            Locale.ROOT,
            "  %-7s %11s %11s %6.2f   %11s %11s %6.2f%n",
            (round + 1) + "/" + config.rounds(),
            Percentiles.micros(p50.get(Kind.REDLOCK_ACQUIRE)),
            Percentiles.micros(p50.get(Kind.BASELINE_ACQUIRE)),
            acquireRatios.get(acquireRatios.size() - 1),
            Percentiles.micros(p50.get(Kind.REDLOCK_CYCLE)),
            Percentiles.micros(p50.get(Kind.BASELINE_CYCLE)),
            cycleRatios.get(cycleRatios.size() - 1));
      }
      return all;
    }

    /** Runs one operation of {@code kind}; returns the timed part in nanoseconds. */
    long once(Kind kind) throws IOException {
      long n = sequence++;
      switch (kind) {
        case REDLOCK_ACQUIRE -> {
          String key = "bench:rl:" + n;
          long before = System.nanoTime();
          Optional<Lease> lease = tryAcquire(key);
          long after = System.nanoTime();
          release(kind, lease);
          return after - before;
        }
        case REDLOCK_CYCLE -> {
          String key = "bench:rl:" + n;
          long before = System.nanoTime();
          Optional<Lease> lease = tryAcquire(key);
          release(kind, lease);
          return System.nanoTime() - before;
        }
        case BASELINE_ACQUIRE -> {
          String key = "bench:bl:" + n;
          long before = System.nanoTime();
          byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
          byte[] token = newToken();
          int granted = baseline.setRound(keyBytes, token, TTL.toMillis());
          long after = System.nanoTime();
          baseline.releaseRound(keyBytes, token);
          countFailure(kind, granted < quorum);
          return after - before;
        }
        case BASELINE_CYCLE -> {
          String key = "bench:bl:" + n;
          long before = System.nanoTime();
          byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
          byte[] token = newToken();
          int granted = baseline.setRound(keyBytes, token, TTL.toMillis());
          baseline.releaseRound(keyBytes, token);
          long elapsed = System.nanoTime() - before;
          countFailure(kind, granted < quorum);
          return elapsed;
        }
        default -> throw new AssertionError(kind);
      }
    }

    private Optional<Lease> tryAcquire(String key) {
      try {
        return redlock.tryAcquire(key, TTL);
      } catch (QuorumUnavailableException e) {
        return Optional.empty();
      }
    }

    private void release(Kind kind, Optional<Lease> lease) {
      lease.ifPresent(Lease::close);
      countFailure(kind, lease.isEmpty());
    }

    private void countFailure(Kind kind, boolean failed) {
      if (failed) {
        failures.merge(kind, 1L, Long::sum);
      }
    }

    /** A lock value as RedLock makes it: 128 bits of SecureRandom, as 32 hex digits. */
    private byte[] newToken() {
      byte[] raw = new byte[16];
      random.nextBytes(raw);
      return HexFormat.of().formatHex(raw).getBytes(StandardCharsets.US_ASCII);
    }

    Map<Integer, Throughput> throughput(Config config, PrintStream out)
        throws InterruptedException {
      Duration block = config.throughputTime().dividedBy(THROUGHPUT_ROUNDS);
      out.println();
      out.printf(
          Locale.ROOT,
          "Measuring throughput: %d rounds of %.1f s per thread count, one shared RedLock%n",
          THROUGHPUT_ROUNDS,
          block.toNanos() / 1e9);
      Map<Integer, List<Throughput>> blocks = new TreeMap<>();
      for (int round = 0; round < THROUGHPUT_ROUNDS; round++) {
        StringBuilder line = new StringBuilder();
        line.append(String.format(Locale.ROOT, "  %-7s", (round + 1) + "/" + THROUGHPUT_ROUNDS));
        List<Integer> order = new ArrayList<>(THREAD_COUNTS);
        if (round % 2 == 1) {
          Collections.reverse(order);
        }
        Map<Integer, Throughput> thisRound = new TreeMap<>();
        for (int threads : order) {
          Throughput result = runThroughput(threads, block);
          thisRound.put(threads, result);
          blocks.computeIfAbsent(threads, t -> new ArrayList<>()).add(result);
        }
        thisRound.forEach(
            (threads, result) ->
                line.append(
                    String.format(
                        Locale.ROOT, " %4d threads %,9.0f ops/s", threads, result.opsPerSecond())));
        out.println(line);
      }
      Map<Integer, Throughput> total = new TreeMap<>();
      blocks.forEach((threads, list) -> total.put(threads, Throughput.sum(list)));
      return total;
    }

    /** {@code threads} threads acquire and release new keys for {@code time}. */
    Throughput runThroughput(int threads, Duration time) throws InterruptedException {
      CountDownLatch ready = new CountDownLatch(threads);
      CountDownLatch go = new CountDownLatch(1);
      long[] startAndEnd = new long[2]; // written before go.countDown(), read after go.await()
      List<Loop> loops = new ArrayList<>();
      List<Thread> running = new ArrayList<>();
      long block = sequence++;
      for (int t = 0; t < threads; t++) {
        Loop loop = new Loop(redlock, "bench:tp:" + block + ":" + t + ":", ready, go, startAndEnd);
        Thread thread = new Thread(loop, "bench-" + threads + "-" + t);
        thread.setDaemon(true);
        loops.add(loop);
        running.add(thread);
        thread.start();
      }
      ready.await();
      startAndEnd[0] = System.nanoTime();
      startAndEnd[1] = startAndEnd[0] + time.toNanos();
      go.countDown();
      for (Thread thread : running) {
        thread.join();
      }
      long ops = 0;
      long failed = 0;
      long lastFinish = startAndEnd[1];
      Samples latency = new Samples();
      for (Loop loop : loops) {
        if (loop.error != null) {
          throw new IllegalStateException("throughput thread failed", loop.error);
        }
        ops += loop.ops;
        failed += loop.failed;
        lastFinish = Math.max(lastFinish, loop.finishedAt);
        latency.addAll(loop.latency);
      }
      return new Throughput(ops, failed, lastFinish - startAndEnd[0], latency);
    }
  }

  /** One throughput thread. Its fields are read after it was joined. */
  private static final class Loop implements Runnable {
    final RedLock redlock;
    final String prefix;
    final CountDownLatch ready;
    final CountDownLatch go;
    final long[] startAndEnd;
    final Samples latency = new Samples();
    long ops;
    long failed;
    long finishedAt;
    Throwable error;

    Loop(RedLock redlock, String prefix, CountDownLatch ready, CountDownLatch go, long[] times) {
      this.redlock = redlock;
      this.prefix = prefix;
      this.ready = ready;
      this.go = go;
      this.startAndEnd = times;
    }

    @Override
    public void run() {
      try {
        ready.countDown();
        go.await();
        long end = startAndEnd[1];
        long i = 0;
        long now = System.nanoTime();
        while (now - end < 0) {
          Optional<Lease> lease;
          try {
            lease = redlock.tryAcquire(prefix + i++, TTL);
          } catch (QuorumUnavailableException e) {
            lease = Optional.empty();
          }
          if (lease.isPresent()) {
            lease.get().close();
            long after = System.nanoTime();
            latency.add(after - now);
            ops++;
            now = after;
          } else {
            failed++;
            now = System.nanoTime();
          }
        }
        finishedAt = now;
      } catch (Throwable e) {
        error = e;
      }
    }
  }

  /**
   * What one or more throughput blocks did.
   *
   * @param ops acquire+release cycles completed
   * @param failed attempts that got no lease (too few masters answered in time)
   * @param elapsedNanos wall time of the blocks
   * @param latency the completed cycles' durations, in nanoseconds
   */
  record Throughput(long ops, long failed, long elapsedNanos, Samples latency) {

    double opsPerSecond() {
      return ops * 1e9 / elapsedNanos;
    }

    static Throughput sum(List<Throughput> blocks) {
      long ops = 0;
      long failed = 0;
      long elapsed = 0;
      Samples latency = new Samples();
      for (Throughput b : blocks) {
        ops += b.ops();
        failed += b.failed();
        elapsed += b.elapsedNanos();
        latency.addAll(b.latency());
      }
      return new Throughput(ops, failed, elapsed, latency);
    }
  }

  // ---- report ----

  private static void printHeader(
      Config config, List<String> uris, String origin, PrintStream out) {
    out.println();
    out.println("RedLock benchmark");
    row(out, "masters", uris.size() + " (" + origin + "), quorum " + (uris.size() / 2 + 1));
    for (String uri : uris) {
      row(out, "", Drill.redact(uri));
    }
    if (origin.startsWith("local")) {
      row(out, "redis-server", RedisProcess.binaryDescription());
    }
    row(
        out,
        "machine",
        Runtime.getRuntime().availableProcessors()
            + " CPUs, Java "
            + System.getProperty("java.version")
            + " ("
            + System.getProperty("java.vm.name")
            + ")");
    row(
        out,
        "RedLock",
        "one instance, node timeout "
            + RedLock.DEFAULT_NODE_TIMEOUT.toMillis()
            + " ms, ttl "
            + TTL.toSeconds()
            + " s, a new key per operation (no contention)");
    row(
        out,
        "baseline",
        "one thread, "
            + uris.size()
            + " blocking sockets (TCP_NODELAY); a round writes the command to all "
            + uris.size()
            + ",");
    row(out, "", "then reads all " + uris.size() + " replies; RESP parsed by hand");
    row(
        out,
        "plan",
        String.format(
            Locale.ROOT,
            "warm-up %,d ops per measurement; %,d timed ops each in %d rounds, RedLock and",
            config.warmup(),
            config.iterations(),
            config.rounds()));
    row(out, "", "baseline blocks alternating, in reverse order every other round");
  }

  private static void printSummary(
      int masters,
      Bench bench,
      Map<Kind, Samples> latency,
      Map<Integer, Throughput> throughput,
      PrintStream out) {
    Map<Kind, Long> failures = bench.failures;
    Map<Kind, Summary> s = new EnumMap<>(Kind.class);
    latency.forEach((kind, samples) -> s.put(kind, samples.summary()));
    out.println();
    out.printf(
        "Uncontended latency, one thread, new key per op       %8s %8s %9s %7s%n",
        "p50 us", "p99 us", "samples", "failed");
    latencyRow(out, "acquire", Kind.REDLOCK_ACQUIRE, s, failures);
    latencyRow(out, "", Kind.BASELINE_ACQUIRE, s, failures);
    double acquireRatio = ratio(s, Kind.REDLOCK_ACQUIRE, Kind.BASELINE_ACQUIRE, Summary::p50);
    ratioRow(out, s, Kind.REDLOCK_ACQUIRE, Kind.BASELINE_ACQUIRE, goalNote(acquireRatio));
    spreadRow(out, bench.acquireRatios);
    latencyRow(out, "acquire+release", Kind.REDLOCK_CYCLE, s, failures);
    latencyRow(out, "", Kind.BASELINE_CYCLE, s, failures);
    ratioRow(out, s, Kind.REDLOCK_CYCLE, Kind.BASELINE_CYCLE, "");
    spreadRow(out, bench.cycleRatios);

    out.println();
    out.printf(
        "Throughput, one shared RedLock, acquire+release       %8s %8s %9s %7s%n",
        "p50 us", "p99 us", "ops/s", "failed");
    throughput.forEach(
        (threads, t) -> {
          Summary l = t.latency().summary();
          out.printf(
              Locale.ROOT,
              "  %-51s %8s %8s %,9.0f %,7d%n",
              threads + " threads, new key per op",
              Percentiles.micros(l.p50()),
              Percentiles.micros(l.p99()),
              t.opsPerSecond(),
              t.failed());
        });
    out.println();
    out.printf(
        "RedLock decides a round once %d of %d masters granted (its I/O threads read the rest);%n",
        masters / 2 + 1, masters);
    out.printf(
        "the baseline waits for all %d replies. A release waits for every master in both.%n",
        masters);
  }

  private static void latencyRow(
      PrintStream out, String group, Kind kind, Map<Kind, Summary> s, Map<Kind, Long> failures) {
    Summary summary = s.get(kind);
    out.printf(
        Locale.ROOT,
        "  %-16s %-34s %8s %8s %,9d %,7d%n",
        group,
        kind.label,
        Percentiles.micros(summary.p50()),
        Percentiles.micros(summary.p99()),
        summary.count(),
        failures.get(kind));
  }

  private static void ratioRow(
      PrintStream out, Map<Kind, Summary> s, Kind redlock, Kind baseline, String note) {
    out.printf(
        Locale.ROOT,
        "  %-16s %-34s %8.2f %8.2f%s%n",
        "",
        "ratio RedLock / baseline",
        ratio(s, redlock, baseline, Summary::p50),
        ratio(s, redlock, baseline, Summary::p99),
        note.isEmpty() ? "" : "   " + note);
  }

  /** How much the ratio of the p50s moved from round to round: a measure of the noise. */
  private static void spreadRow(PrintStream out, List<Double> ratios) {
    List<Double> sorted = new ArrayList<>(ratios);
    Collections.sort(sorted);
    int n = sorted.size();
    if (n < 2) {
      return;
    }
    double median =
        n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    out.printf(
        Locale.ROOT,
        "  %-16s per-round p50 ratios: median %.2f, from %.2f to %.2f%n",
        "",
        median,
        sorted.get(0),
        sorted.get(n - 1));
  }

  private static String goalNote(double ratio) {
    return String.format(
        Locale.ROOT, "goal p50 <= %.2f: %s", GOAL_RATIO, ratio <= GOAL_RATIO ? "met" : "NOT met");
  }

  private static double ratio(
      Map<Kind, Summary> s, Kind redlock, Kind baseline, ToLongFunction<Summary> figure) {
    return ratio(figure.applyAsLong(s.get(redlock)), figure.applyAsLong(s.get(baseline)));
  }

  private static double ratio(long redlock, long baseline) {
    return baseline == 0 ? Double.NaN : (double) redlock / baseline;
  }

  private static void row(PrintStream out, String label, String value) {
    out.printf("  %-13s %s%n", label, value);
  }

  // ---- options ----

  /**
   * What one benchmark runs with.
   *
   * @param nodes the masters' URIs; empty to start {@link #LOCAL_MASTERS} local ones
   * @param iterations timed operations per latency measurement
   * @param warmup untimed operations per latency measurement before the timed ones
   * @param rounds blocks each latency measurement is split into
   * @param throughputTime time per thread count, split into blocks
   */
  record Config(
      List<String> nodes, int iterations, int warmup, int rounds, Duration throughputTime) {

    Config {
      nodes = List.copyOf(nodes);
      requireNonNull(throughputTime, "throughputTime");
    }

    static Config from(Flags flags) throws UsageException {
      List<String> nodes = flags.list("nodes");
      try {
        RedLock.builder().nodes(nodes);
      } catch (IllegalArgumentException e) {
        throw new UsageException("--nodes: " + e.getMessage());
      }
      int iterations = flags.intValue("iterations", DEFAULT_ITERATIONS, 1, 100_000_000);
      int warmup = flags.intValue("warmup", DEFAULT_WARMUP, 0, 100_000_000);
      int rounds = flags.intValue("rounds", DEFAULT_ROUNDS, 1, 10_000);
      if (rounds > iterations) {
        throw new UsageException("--rounds must not exceed --iterations");
      }
      Duration throughputTime =
          flags.seconds(
              "throughput-seconds",
              DEFAULT_THROUGHPUT_TIME,
              Duration.ofMillis(300),
              Duration.ofHours(1));
      return new Config(nodes, iterations, warmup, rounds, throughputTime);
    }
  }
}
