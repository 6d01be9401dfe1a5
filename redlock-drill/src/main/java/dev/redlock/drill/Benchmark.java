package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.drill.Flags.UsageException;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;

/**
 * Prints latency and throughput figures for RedLock next to a hand-written baseline, and what a
 * master that never answers costs with and without circuit breakers, all measured in one run
 * against the same masters. A program that reports, not a test: it passes no judgement beyond
 * printing each ratio next to its goal.
 *
 * <pre>
 * mvn -q -o -pl redlock-drill package -Pbench
 * mvn -q -o -pl redlock-drill package -Pbench -Dbench.args="--iterations 50000 --rounds 20"
 * </pre>
 *
 * <h2>The clients</h2>
 *
 * <ul>
 *   <li><b>plain RedLock</b>: {@code fencing(false).restartGuard(false)}, the Redlock algorithm as
 *       specified: acquire is one {@code SET key token NX PX ttl} round, the very command the
 *       baseline sends.
 *   <li><b>default RedLock</b>: the library's defaults: fencing tokens (acquire is a vote round,
 *       then a round that stores the token), the restart guard (the masters admitted explicitly, as
 *       a brand-new cluster must be) and circuit breakers.
 *   <li><b>baseline</b>: {@link BaselineClient}, N blocking sockets on one thread that write {@code
 *       SET key token NX PX ttl} to every master, then read every reply; for the full cycle, a
 *       second round with the same release script RedLock uses. Its timed part includes making the
 *       token (the same 128 bits of {@link SecureRandom}) and encoding the key, as RedLock's does.
 * </ul>
 *
 * Every RedLock here has a node timeout of {@value #NODE_TIMEOUT_MILLIS} ms.
 *
 * <h2>What it measures</h2>
 *
 * <ol>
 *   <li><b>Uncontended latency</b>, one thread, a new key per operation: {@code tryAcquire} alone
 *       (the release that follows is not timed) and {@code tryAcquire} plus {@code close()}, for
 *       the plain and the default RedLock and the baseline: plain / baseline is the library's
 *       overhead (goal p50 at most {@value #GOAL_RATIO}), default / plain the cost of fencing.
 *   <li><b>Throughput</b> of acquire plus release with 8 and 32 threads sharing one RedLock, each
 *       thread on keys of its own, for the default and the plain RedLock.
 *   <li><b>Circuit breakers</b>: acquire plus release with the default RedLock on N healthy
 *       masters, and on N-1 healthy masters plus a {@link BlackHole} in place of the last (a server
 *       that accepts connections and never answers), once with circuit breakers (measured only
 *       after the listener reported the black hole's breaker OPEN) and once without. The p99 with
 *       the black hole over the healthy p99 should stay at most {@value #BREAKER_GOAL_RATIO} with
 *       breakers.
 * </ol>
 *
 * Every measurement is warmed up first. The latency measurements then run in rounds of short
 * blocks, one block of each operation per round, in reverse order every other round, so that noise
 * on the machine (another process, a GC, frequency scaling) falls on all alike; the throughput
 * blocks alternate the same way.
 */
public final class Benchmark {

  static final int DEFAULT_ITERATIONS = 10_000;
  static final int DEFAULT_WARMUP = 2_000;
  static final int DEFAULT_ROUNDS = 10;
  static final int DEFAULT_BLACKHOLE_ITERATIONS = 10_000;
  static final Duration DEFAULT_THROUGHPUT_TIME = Duration.ofSeconds(2);

  /** The goal for the plain RedLock's p50 acquire latency over the baseline's SET round. */
  static final double GOAL_RATIO = 1.15;

  /** The goal for the p99 with one master black-holed (breakers on) over the healthy p99. */
  static final double BREAKER_GOAL_RATIO = 1.5;

  static final long NODE_TIMEOUT_MILLIS = 50;

  /** The node timeout of every RedLock in the benchmark. */
  static final Duration NODE_TIMEOUT = Duration.ofMillis(NODE_TIMEOUT_MILLIS);

  private static final int THROUGHPUT_ROUNDS = 3;
  private static final List<Integer> THREAD_COUNTS = List.of(8, 32);
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration BASELINE_TIMEOUT = Duration.ofSeconds(2);

  /** How long the breaker section's warm-up may take to see the black hole's breaker open. */
  private static final Duration BREAKER_OPEN_LIMIT = Duration.ofSeconds(10);

  /** A round this slow is counted apart in the breaker section: it waited for the black hole. */
  private static final long SLOW_NANOS = TimeUnit.MILLISECONDS.toNanos(NODE_TIMEOUT_MILLIS / 5);

  private static final String USAGE =
      String.format(
          Locale.ROOT,
          """
          Usage: Benchmark [options]

          Prints acquire and acquire+release latency of the plain RedLock (fencing and restart
          guard off: one SET NX PX round) next to a hand-written baseline (blocking sockets,
          hand-parsed RESP) on the same masters, the cost of the default RedLock's fencing, the
          throughput of both with %s threads, and what one master that never answers costs with
          and without circuit breakers.

          Options:
            --nodes URI,URI,...       Redis masters to use (plain redis:// for the baseline); the
                                      last one is replaced by the black hole in the breaker section
                                      (default: start %d local redis-server processes)
            --admit-fresh-nodes       call admitFreshNodes() on the --nodes masters first (local
                                      masters always are): only for a brand-new cluster
            --iterations N            timed operations per latency measurement (default %,d)
            --warmup N                untimed operations per measurement first (default %,d)
            --rounds R                blocks each latency measurement is split into (default %d)
            --throughput-seconds S    time per client and thread count, split into %d blocks
                                      (default %d)
            --blackhole-iterations N  timed operations per circuit-breaker measurement (default %,d)
            -h, --help                show this help
          """,
          THREAD_COUNTS.get(0) + " and " + THREAD_COUNTS.get(1),
          Masters.LOCAL_COUNT,
          DEFAULT_ITERATIONS,
          DEFAULT_WARMUP,
          DEFAULT_ROUNDS,
          THROUGHPUT_ROUNDS,
          DEFAULT_THROUGHPUT_TIME.toSeconds(),
          DEFAULT_BLACKHOLE_ITERATIONS);

  private static final Harness HARNESS =
      new Harness(
          "benchmark",
          "benchmark failed: ",
          USAGE,
          Set.of(
              "nodes",
              "iterations",
              "warmup",
              "rounds",
              "throughput-seconds",
              "blackhole-iterations"),
          Set.of(Harness.ADMIT_FRESH_NODES));

  private Benchmark() {}

  /**
   * Runs the benchmark with the options shown by {@code --help}, prints the figures to standard
   * output and exits: 0 if it ran, 1 if it could not, 2 for a bad command line.
   *
   * @param args the command-line options
   */
  public static void main(String[] args) {
    Harness.exit(run(args, System.out));
  }

  /** Parses {@code args}, runs the benchmark, prints to {@code out} and returns the exit code. */
  static int run(String[] args, PrintStream out) {
    return HARNESS.run(
        args,
        out,
        Config::from,
        config -> {
          run(config, out);
          return Harness.EXIT_OK;
        });
  }

  /**
   * Runs every measurement and prints the figures: starts local masters unless {@code config} names
   * some, and shuts everything down on every path.
   *
   * @throws IOException if the baseline cannot talk to a master, or the black hole cannot listen
   * @throws CannotRun if the default RedLock gets no lease (masters not admitted, say)
   */
  static void run(Config config, PrintStream out)
      throws IOException, InterruptedException, CannotRun {
    requireNonNull(config, "config");
    requireNonNull(out, "out");
    try (Masters masters = Masters.open(config.nodes(), out)) {
      measure(config, masters, masters.local() || config.admitFreshNodes(), out);
      if (masters.local()) {
        List<String> sizes = new ArrayList<>();
        for (RedisProcess node : masters.processes()) {
          sizes.add(String.format(Locale.ROOT, "%,d", node.admin().dbSize()));
        }
        out.println();
        out.println(
            "Keys left on the masters (the default RedLock's fencing counters never expire): "
                + String.join(" / ", sizes));
        return;
      }
      out.println();
      out.println(
          "Note: the default RedLock left a fencing counter on the masters for every key it locked"
              + " (they never");
      out.println(
          "expire, by design); remove them with redis-cli --scan --pattern"
              + " 'redlock:fence:bench:*' | xargs redis-cli del");
    }
  }

  private static void measure(Config config, Masters masters, boolean admit, PrintStream out)
      throws IOException, InterruptedException, CannotRun {
    List<String> uris = masters.uris();
    BreakerWatch healthyWatch = new BreakerWatch(null);
    try (RedLock plain =
            RedLock.builder()
                .nodes(uris)
                .nodeTimeout(NODE_TIMEOUT)
                .fencing(false)
                .restartGuard(false)
                .listener(healthyWatch)
                .build();
        RedLock defaults =
            RedLock.builder().nodes(uris).nodeTimeout(NODE_TIMEOUT).listener(healthyWatch).build();
        BaselineClient baseline = BaselineClient.connect(uris, BASELINE_TIMEOUT);
        BlackHole hole = BlackHole.start()) {
      String admission =
          admit ? admit(defaults) : "not admitted (--" + Harness.ADMIT_FRESH_NODES + ")";
      checkDefaultsGrant(defaults, out);
      printHeader(config, masters, admission, hole, out);
      Bench bench = new Bench(plain, defaults, baseline, uris.size() / 2 + 1);

      Latency latency = bench.latency(config, out);
      List<Throughput> throughput = bench.throughput(config, out);

      List<String> holeUris = new ArrayList<>(uris);
      holeUris.set(holeUris.size() - 1, hole.uri());
      BreakerWatch holeWatch = new BreakerWatch(hole.node());
      try (RedLock withBreakers =
              RedLock.builder()
                  .nodes(holeUris)
                  .nodeTimeout(NODE_TIMEOUT)
                  .listener(holeWatch)
                  .build();
          RedLock withoutBreakers =
              RedLock.builder()
                  .nodes(holeUris)
                  .nodeTimeout(NODE_TIMEOUT)
                  .circuitBreakers(false)
                  .build()) {
        Breakers breakers =
            bench.breakers(config, withBreakers, withoutBreakers, holeWatch, hole, out);
        printSummary(uris.size(), latency, throughput, breakers, healthyWatch, hole, out);
      }
    }
  }

  /** Admits the masters as a brand-new cluster; returns a line for the header. */
  private static String admit(RedLock redlock) {
    List<NodeOutcome> outcomes = redlock.admitFreshNodes();
    long now = outcomes.stream().filter(o -> o.status() == Status.GRANTED).count();
    long already = outcomes.stream().filter(o -> o.status() == Status.TAKEN).count();
    StringBuilder line =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "admitted explicitly (admitFreshNodes): %d now, %d already trusted",
                now,
                already));
    for (NodeOutcome o : outcomes) {
      if (o.status() != Status.GRANTED && o.status() != Status.TAKEN) {
        line.append("; NOT ").append(o.node()).append(' ').append(o.status());
      }
    }
    return line.toString();
  }

  /** One acquire with the default RedLock, so that unadmitted masters stop the run with a hint. */
  private static void checkDefaultsGrant(RedLock defaults, PrintStream out) throws CannotRun {
    List<NodeOutcome> outcomes;
    try {
      Optional<Lease> lease = defaults.tryAcquire("bench:check", TTL);
      if (lease.isPresent()) {
        lease.get().close();
        return;
      }
      throw new CannotRun("the default RedLock's first acquire was refused: is the key taken?");
    } catch (QuorumUnavailableException e) {
      outcomes = e.outcomes();
    }
    if (outcomes.stream().anyMatch(o -> o.status() == Status.RESTARTED)) {
      out.println(Harness.restartedHint(1));
      throw new CannotRun(
          "the default RedLock cannot acquire: masters answered RESTARTED " + outcomes);
    }
    throw new CannotRun("the default RedLock cannot acquire: " + outcomes);
  }

  // ---- measurements ----

  /** What one operation does once: returns its timed part in nanoseconds. */
  @FunctionalInterface
  private interface Body {
    long once(Operation self) throws IOException;
  }

  /** One measured operation: its label, what it does, its samples, and its per-block medians. */
  private static final class Operation {
    final String label;
    final Body body;
    final Samples samples = new Samples();
    final List<Summary> blocks = new ArrayList<>();
    long failures;

    Operation(String label, Body body) {
      this.label = label;
      this.body = body;
    }

    long once() throws IOException {
      return body.once(this);
    }

    void failedIf(boolean failed) {
      if (failed) {
        failures++;
      }
    }

    Summary summary() {
      return samples.summary();
    }

    /** Ratios of this operation's block medians to {@code other}'s, round by round. */
    List<Double> blockRatios(Operation other) {
      List<Double> ratios = new ArrayList<>();
      for (int i = 0; i < blocks.size() && i < other.blocks.size(); i++) {
        ratios.add(ratio(blocks.get(i).p50(), other.blocks.get(i).p50()));
      }
      return ratios;
    }
  }

  /** The latency section's operations. */
  private record Latency(
      Operation plainAcquire,
      Operation baselineAcquire,
      Operation defaultAcquire,
      Operation plainCycle,
      Operation baselineCycle,
      Operation defaultCycle) {

    List<Operation> all() {
      return List.of(
          plainAcquire, baselineAcquire, defaultAcquire, plainCycle, baselineCycle, defaultCycle);
    }
  }

  /**
   * The circuit-breaker section's operations and what the black hole's breaker did.
   *
   * @param healthy acquire+release on the healthy masters
   * @param withBreakers with the black hole, breakers on
   * @param withoutBreakers with the black hole, breakers off
   * @param openedAfterOps warm-up cycles until the breaker was reported OPEN; -1 if it never was
   * @param openedAfterNanos warm-up time until then
   * @param duringMeasurement the breaker's transitions while measuring, in order
   */
  private record Breakers(
      Operation healthy,
      Operation withBreakers,
      Operation withoutBreakers,
      long openedAfterOps,
      long openedAfterNanos,
      List<RedLockListener.CircuitState> duringMeasurement) {}

  /** The benchmark's state: the clients, the key sequence and the token source. */
  private static final class Bench {
    final RedLock plain;
    final RedLock defaults;
    final BaselineClient baseline;
    final int quorum;
    final SecureRandom random = new SecureRandom();
    long sequence;

    Bench(RedLock plain, RedLock defaults, BaselineClient baseline, int quorum) {
      this.plain = plain;
      this.defaults = defaults;
      this.baseline = baseline;
      this.quorum = quorum;
    }

    Latency latency(Config config, PrintStream out) throws IOException {
      Latency ops =
          new Latency(
              new Operation("plain RedLock tryAcquire", op -> acquireOnly(plain, op)),
              new Operation("baseline SET NX PX round", this::baselineAcquire),
              new Operation("default RedLock tryAcquire", op -> acquireOnly(defaults, op)),
              new Operation("plain RedLock tryAcquire + close", op -> cycle(plain, op)),
              new Operation("baseline SET round + EVALSHA round", this::baselineCycle),
              new Operation("default RedLock tryAcquire + close", op -> cycle(defaults, op)));
      out.println();
      out.printf(
          Locale.ROOT,
          "1. Latency. Warming up: %,d operations per measurement...%n",
          config.warmup());
      warmUp(ops.all(), config.warmup());
      int block = (config.iterations() + config.rounds() - 1) / config.rounds();
      out.printf(
          Locale.ROOT,
          "Measuring: %d rounds of %,d operations per measurement (p50 of each block, us)%n",
          config.rounds(),
          block);
      out.printf(
          "  %-7s %26s   %26s%n",
          "", "---------- acquire ---------", "------ acquire+release -----");
      out.printf(
          "  %-7s %6s %6s %6s %4s %4s   %6s %6s %6s %4s %4s%n",
          "round", "plain", "base", "dflt", "p/b", "d/p", "plain", "base", "dflt", "p/b", "d/p");
      interleave(
          ops.all(),
          config.iterations(),
          config.rounds(),
          (round, rounds) ->
              out.printf(
                  Locale.ROOT,
                  "  %-7s %6s %6s %6s %4.2f %4.2f   %6s %6s %6s %4.2f %4.2f%n",
                  (round + 1) + "/" + rounds,
                  lastP50(ops.plainAcquire()),
                  lastP50(ops.baselineAcquire()),
                  lastP50(ops.defaultAcquire()),
                  lastRatio(ops.plainAcquire(), ops.baselineAcquire()),
                  lastRatio(ops.defaultAcquire(), ops.plainAcquire()),
                  lastP50(ops.plainCycle()),
                  lastP50(ops.baselineCycle()),
                  lastP50(ops.defaultCycle()),
                  lastRatio(ops.plainCycle(), ops.baselineCycle()),
                  lastRatio(ops.defaultCycle(), ops.plainCycle())));
      return ops;
    }

    Breakers breakers(
        Config config,
        RedLock withBreakers,
        RedLock withoutBreakers,
        BreakerWatch watch,
        BlackHole hole,
        PrintStream out)
        throws IOException {
      Operation healthy = new Operation("all masters healthy", op -> cycle(defaults, op));
      Operation on = new Operation("black hole, breakers on (OPEN)", op -> cycle(withBreakers, op));
      Operation off = new Operation("black hole, breakers off", op -> cycle(withoutBreakers, op));
      out.println();
      out.printf(
          "3. Circuit breakers: default RedLock, acquire+release; black hole %s in place of the"
              + " last master.%n",
          hole.node());
      out.println("Warming up the RedLock with breakers until its listener reports OPEN...");
      long began = System.nanoTime();
      long giveUp = began + BREAKER_OPEN_LIMIT.toNanos();
      long ops = 0;
      while (!watch.opened() && System.nanoTime() - giveUp < 0) {
        on.once();
        ops++;
      }
      long openedAfter = System.nanoTime() - began;
      if (watch.opened()) {
        out.printf(
            Locale.ROOT,
            "  breaker of %s reported OPEN after %,d acquire+release cycles (%,.1f ms)%n",
            hole.node(),
            ops,
            openedAfter / 1e6);
      } else {
        ops = -1;
        out.printf(
            "  breaker of %s NOT reported OPEN within %d s; measuring anyway%n",
            hole.node(), BREAKER_OPEN_LIMIT.toSeconds());
      }
      List<Operation> all = List.of(healthy, on, off);
      warmUp(all, Math.min(config.warmup(), 500));
      int mark = watch.transitions().size();
      int rounds = Math.min(config.rounds(), config.blackholeIterations());
      int block = (config.blackholeIterations() + rounds - 1) / rounds;
      out.printf(
          Locale.ROOT,
          "Measuring: %d rounds of %,d operations per measurement (p50 / p99 of each block, us)%n",
          rounds,
          block);
      out.printf(
          "  %-7s %17s   %17s   %17s%n",
          "round", "healthy", "hole, breakers on", "hole, no breakers");
      interleave(
          all,
          config.blackholeIterations(),
          rounds,
          (round, total) ->
              out.printf(
                  Locale.ROOT,
                  "  %-7s %17s   %17s   %17s%n",
                  (round + 1) + "/" + total,
                  lastP50AndP99(healthy),
                  lastP50AndP99(on),
                  lastP50AndP99(off)));
      List<RedLockListener.CircuitState> during =
          List.copyOf(watch.transitions().subList(mark, watch.transitions().size()));
      return new Breakers(healthy, on, off, ops, openedAfter, during);
    }

    /** Runs each operation {@code count} times, in blocks of up to 500, unmeasured. */
    private void warmUp(List<Operation> ops, int count) throws IOException {
      int block = Math.max(1, Math.min(500, count));
      for (int done = 0; done < count; done += block) {
        for (Operation op : ops) {
          for (int i = 0; i < Math.min(block, count - done); i++) {
            op.once();
          }
        }
      }
      for (Operation op : ops) {
        op.failures = 0;
      }
    }

    /**
     * Runs every operation {@code iterations} times in {@code rounds} blocks: one block of each per
     * round, in reverse order every other round; tells {@code afterRound} after each round.
     */
    private void interleave(
        List<Operation> ops, int iterations, int rounds, RoundListener afterRound)
        throws IOException {
      int block = (iterations + rounds - 1) / rounds;
      int remaining = iterations;
      for (int round = 0; round < rounds && remaining > 0; round++) {
        int count = Math.min(block, remaining);
        remaining -= count;
        List<Operation> order = new ArrayList<>(ops);
        if (round % 2 == 1) {
          Collections.reverse(order);
        }
        for (Operation op : order) {
          Samples samples = new Samples();
          for (int i = 0; i < count; i++) {
            samples.add(op.once());
          }
          op.blocks.add(samples.summary());
          op.samples.addAll(samples);
        }
        afterRound.roundDone(round, rounds);
      }
    }

    private long acquireOnly(RedLock redlock, Operation op) {
      String key = "bench:rl:" + sequence++;
      long before = System.nanoTime();
      Optional<Lease> lease = tryAcquire(redlock, key);
      long after = System.nanoTime();
      lease.ifPresent(Lease::close);
      op.failedIf(lease.isEmpty());
      return after - before;
    }

    private long cycle(RedLock redlock, Operation op) {
      String key = "bench:rl:" + sequence++;
      long before = System.nanoTime();
      Optional<Lease> lease = tryAcquire(redlock, key);
      lease.ifPresent(Lease::close);
      long elapsed = System.nanoTime() - before;
      op.failedIf(lease.isEmpty());
      return elapsed;
    }

    private long baselineAcquire(Operation op) throws IOException {
      String key = "bench:bl:" + sequence++;
      long before = System.nanoTime();
      byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
      byte[] token = newToken();
      int granted = baseline.setRound(keyBytes, token, TTL.toMillis());
      long after = System.nanoTime();
      baseline.releaseRound(keyBytes, token);
      op.failedIf(granted < quorum);
      return after - before;
    }

    private long baselineCycle(Operation op) throws IOException {
      String key = "bench:bl:" + sequence++;
      long before = System.nanoTime();
      byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
      byte[] token = newToken();
      int granted = baseline.setRound(keyBytes, token, TTL.toMillis());
      baseline.releaseRound(keyBytes, token);
      long elapsed = System.nanoTime() - before;
      op.failedIf(granted < quorum);
      return elapsed;
    }

    private static Optional<Lease> tryAcquire(RedLock redlock, String key) {
      try {
        return redlock.tryAcquire(key, TTL);
      } catch (QuorumUnavailableException e) {
        return Optional.empty();
      }
    }

    /** A lock value as RedLock makes it: 128 bits of SecureRandom, as 32 hex digits. */
    private byte[] newToken() {
      byte[] raw = new byte[16];
      random.nextBytes(raw);
      return HexFormat.of().formatHex(raw).getBytes(StandardCharsets.US_ASCII);
    }

    List<Throughput> throughput(Config config, PrintStream out) throws InterruptedException {
      List<Run> runs = new ArrayList<>();
      for (int threads : THREAD_COUNTS) {
        runs.add(new Run("default RedLock", defaults, threads));
        runs.add(new Run("plain RedLock", plain, threads));
      }
      Duration block = config.throughputTime().dividedBy(THROUGHPUT_ROUNDS);
      Duration warmUp =
          block.compareTo(Duration.ofMillis(500)) < 0 ? block : Duration.ofMillis(500);
      out.println();
      out.printf(
          Locale.ROOT,
          "2. Throughput. Warming up %.1f s per client and thread count, then %d rounds of %.1f s"
              + " each (ops/s)%n",
          warmUp.toNanos() / 1e9,
          THROUGHPUT_ROUNDS,
          block.toNanos() / 1e9);
      for (Run run : runs) {
        runThroughput(run.redlock(), run.threads(), warmUp);
      }
      StringBuilder heading = new StringBuilder(String.format("  %-7s", "round"));
      for (Run run : runs) {
        heading.append(
            String.format(
                Locale.ROOT, " %14s", run.name().replace(" RedLock", "") + " x" + run.threads()));
      }
      out.println(heading);
      List<List<Throughput>> blocks = new ArrayList<>();
      runs.forEach(r -> blocks.add(new ArrayList<>()));
      for (int round = 0; round < THROUGHPUT_ROUNDS; round++) {
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
          order.add(i);
        }
        if (round % 2 == 1) {
          Collections.reverse(order);
        }
        for (int i : order) {
          Run run = runs.get(i);
          blocks.get(i).add(runThroughput(run.redlock(), run.threads(), block));
        }
        StringBuilder line =
            new StringBuilder(
                String.format(Locale.ROOT, "  %-7s", (round + 1) + "/" + THROUGHPUT_ROUNDS));
        for (List<Throughput> list : blocks) {
          line.append(
              String.format(Locale.ROOT, " %,14.0f", list.get(list.size() - 1).opsPerSecond()));
        }
        out.println(line);
      }
      List<Throughput> totals = new ArrayList<>();
      for (int i = 0; i < runs.size(); i++) {
        Run run = runs.get(i);
        totals.add(Throughput.sum(run.name(), run.threads(), blocks.get(i)));
      }
      return totals;
    }

    /** {@code threads} threads acquire and release new keys of their own for {@code time}. */
    Throughput runThroughput(RedLock redlock, int threads, Duration time)
        throws InterruptedException {
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
      return new Throughput("", threads, ops, failed, lastFinish - startAndEnd[0], latency);
    }
  }

  /** Told after each round of an interleaved measurement. */
  @FunctionalInterface
  private interface RoundListener {
    void roundDone(int round, int rounds);
  }

  /** One throughput measurement: a client and a thread count. */
  private record Run(String name, RedLock redlock, int threads) {}

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
   * @param client which RedLock
   * @param threads how many threads shared it
   * @param ops acquire+release cycles completed
   * @param failed attempts that got no lease (too few masters answered in time)
   * @param elapsedNanos wall time of the blocks
   * @param latency the completed cycles' durations, in nanoseconds
   */
  record Throughput(
      String client, int threads, long ops, long failed, long elapsedNanos, Samples latency) {

    double opsPerSecond() {
      return ops * 1e9 / elapsedNanos;
    }

    static Throughput sum(String client, int threads, List<Throughput> blocks) {
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
      return new Throughput(client, threads, ops, failed, elapsed, latency);
    }
  }

  /**
   * Hears circuit-breaker transitions: of one node ({@code watched}), recording them in order and
   * noting the first OPEN; of any other node (or of every node, when {@code watched} is null),
   * counting them, since healthy masters should have none. Thread-safe.
   */
  private static final class BreakerWatch implements RedLockListener {
    private final String watched;
    private final CountDownLatch opened = new CountDownLatch(1);
    private final List<CircuitState> transitions = Collections.synchronizedList(new ArrayList<>());
    private final ConcurrentLinkedQueue<String> others = new ConcurrentLinkedQueue<>();

    BreakerWatch(String watched) {
      this.watched = watched;
    }

    @Override
    public void circuitChanged(String node, CircuitState state) {
      if (node.equals(watched)) {
        transitions.add(state);
        if (state == CircuitState.OPEN) {
          opened.countDown();
        }
      } else {
        others.add(node + " " + state);
      }
    }

    boolean opened() {
      return opened.getCount() == 0;
    }

    List<CircuitState> transitions() {
      synchronized (transitions) {
        return List.copyOf(transitions);
      }
    }

    List<String> others() {
      return List.copyOf(others);
    }
  }

  // ---- report ----

  private static void printHeader(
      Config config, Masters masters, String admission, BlackHole hole, PrintStream out) {
    List<String> uris = masters.uris();
    Rows rows = new Rows(out, 16);
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
    rows.row(
        "every RedLock",
        "node timeout "
            + NODE_TIMEOUT_MILLIS
            + " ms, ttl "
            + TTL.toSeconds()
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
            THREAD_COUNTS.get(0) + " and " + THREAD_COUNTS.get(1),
            config.throughputTime().toNanos() / 1e9));
    rows.row(
        "",
        String.format(
            Locale.ROOT,
            "3. circuit breakers: %,d timed acquire+release each, after the breaker opened",
            config.blackholeIterations()));
  }

  private static void printSummary(
      int masters,
      Latency l,
      List<Throughput> throughput,
      Breakers b,
      BreakerWatch healthyWatch,
      BlackHole hole,
      PrintStream out) {
    out.println();
    out.println("Summary");
    out.println();
    out.printf(
        "1. Uncontended latency, one thread, new key per op      %8s %8s %9s %7s%n",
        "p50 us", "p99 us", "samples", "failed");
    latencyRow(out, "acquire", l.plainAcquire());
    latencyRow(out, "", l.baselineAcquire());
    double acquireRatio = ratio(l.plainAcquire(), l.baselineAcquire(), Summary::p50);
    ratioRow(
        out,
        "ratio plain / baseline",
        l.plainAcquire(),
        l.baselineAcquire(),
        goalNote(acquireRatio));
    spreadRow(out, l.plainAcquire().blockRatios(l.baselineAcquire()));
    latencyRow(out, "", l.defaultAcquire());
    ratioRow(out, "fencing cost: default / plain", l.defaultAcquire(), l.plainAcquire(), "");
    spreadRow(out, l.defaultAcquire().blockRatios(l.plainAcquire()));
    latencyRow(out, "acquire+release", l.plainCycle());
    latencyRow(out, "", l.baselineCycle());
    ratioRow(out, "ratio plain / baseline", l.plainCycle(), l.baselineCycle(), "");
    spreadRow(out, l.plainCycle().blockRatios(l.baselineCycle()));
    latencyRow(out, "", l.defaultCycle());
    ratioRow(out, "fencing cost: default / plain", l.defaultCycle(), l.plainCycle(), "");
    spreadRow(out, l.defaultCycle().blockRatios(l.plainCycle()));

    out.println();
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

    out.println();
    out.printf(
        "3. Circuit breakers, default RedLock, acquire+release   %8s %8s %8s %8s %7s %6s%n",
        "p50 us", "p99 us", "p99.9 us", "max us", "samples", "failed");
    breakerRow(out, masters + " healthy masters", b.healthy());
    breakerRow(out, (masters - 1) + " healthy + black hole, breakers on", b.withBreakers());
    breakerRow(out, (masters - 1) + " healthy + black hole, breakers off", b.withoutBreakers());
    double withRatio = ratio(b.withBreakers(), b.healthy(), Summary::p99);
    double withoutRatio = ratio(b.withoutBreakers(), b.healthy(), Summary::p99);
    out.printf(
        Locale.ROOT,
        "  %-53s %8.2f   goal <= %.2f: %s%n",
        "p99 ratio black hole with breakers / healthy",
        withRatio,
        BREAKER_GOAL_RATIO,
        withRatio <= BREAKER_GOAL_RATIO ? "met" : "NOT met");
    out.printf(
        Locale.ROOT,
        "  %-53s %8.2f%n",
        "p99 ratio black hole without breakers / healthy",
        withoutRatio);
    out.printf(
        Locale.ROOT,
        "  cycles over %d ms: healthy %,d, breakers on %,d, breakers off %,d%n",
        TimeUnit.NANOSECONDS.toMillis(SLOW_NANOS),
        slow(b.healthy()),
        slow(b.withBreakers()),
        slow(b.withoutBreakers()));
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
          hole.node(), BREAKER_OPEN_LIMIT.toSeconds());
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

    out.println();
    out.printf(
        "RedLock decides an acquire round once %d of %d masters granted (its I/O threads read the"
            + " rest);%n",
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

  private static long slow(Operation op) {
    long[] sorted = op.samples.sorted();
    long count = 0;
    for (int i = sorted.length - 1; i >= 0 && sorted[i] > SLOW_NANOS; i--) {
      count++;
    }
    return count;
  }

  private static String describeTransitions(List<RedLockListener.CircuitState> states) {
    if (states.isEmpty()) {
      return "no transitions (stayed OPEN)";
    }
    long halfOpen =
        states.stream().filter(s -> s == RedLockListener.CircuitState.HALF_OPEN).count();
    long open = states.stream().filter(s -> s == RedLockListener.CircuitState.OPEN).count();
    long closed = states.stream().filter(s -> s == RedLockListener.CircuitState.CLOSED).count();
    return String.format(
        Locale.ROOT,
        "%d probes (HALF_OPEN), %d back to OPEN, %d CLOSED (open wait %d ms)",
        halfOpen,
        open,
        closed,
        RedLock.DEFAULT_CIRCUIT_BREAKER_WAIT.toMillis());
  }

  private static void latencyRow(PrintStream out, String group, Operation op) {
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

  private static void breakerRow(PrintStream out, String label, Operation op) {
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

  private static void ratioRow(
      PrintStream out, String label, Operation numerator, Operation denominator, String note) {
    out.printf(
        Locale.ROOT,
        "  %-16s %-35s %8.2f %8.2f%s%n",
        "",
        label,
        ratio(numerator, denominator, Summary::p50),
        ratio(numerator, denominator, Summary::p99),
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
        "  %-16s   per-round p50 ratios: median %.2f, from %.2f to %.2f%n",
        "",
        median,
        sorted.get(0),
        sorted.get(n - 1));
  }

  private static String goalNote(double ratio) {
    return String.format(
        Locale.ROOT, "goal p50 <= %.2f: %s", GOAL_RATIO, ratio <= GOAL_RATIO ? "met" : "NOT met");
  }

  private static String lastP50(Operation op) {
    return Percentiles.micros(op.blocks.get(op.blocks.size() - 1).p50());
  }

  private static String lastP50AndP99(Operation op) {
    Summary s = op.blocks.get(op.blocks.size() - 1);
    return Percentiles.micros(s.p50()) + " / " + Percentiles.micros(s.p99());
  }

  private static double lastRatio(Operation numerator, Operation denominator) {
    return ratio(
        numerator.blocks.get(numerator.blocks.size() - 1).p50(),
        denominator.blocks.get(denominator.blocks.size() - 1).p50());
  }

  private static double ratio(
      Operation numerator, Operation denominator, ToLongFunction<Summary> figure) {
    return ratio(
        figure.applyAsLong(numerator.summary()), figure.applyAsLong(denominator.summary()));
  }

  private static double ratio(long numerator, long denominator) {
    return denominator == 0 ? Double.NaN : (double) numerator / denominator;
  }

  // ---- options ----

  /**
   * What one benchmark runs with.
   *
   * @param nodes the masters' URIs; empty to start {@link Masters#LOCAL_COUNT} local ones
   * @param admitFreshNodes whether to admit the {@code nodes} as a brand-new cluster (local masters
   *     always are)
   * @param iterations timed operations per latency measurement
   * @param warmup untimed operations per latency measurement before the timed ones
   * @param rounds blocks each latency measurement is split into
   * @param throughputTime time per client and thread count, split into blocks
   * @param blackholeIterations timed operations per circuit-breaker measurement
   */
  record Config(
      List<String> nodes,
      boolean admitFreshNodes,
      int iterations,
      int warmup,
      int rounds,
      Duration throughputTime,
      int blackholeIterations) {

    Config {
      nodes = List.copyOf(nodes);
      requireNonNull(throughputTime, "throughputTime");
    }

    static Config from(Flags flags) throws UsageException {
      List<String> nodes = Harness.nodes(flags);
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
      int blackholeIterations =
          flags.intValue("blackhole-iterations", DEFAULT_BLACKHOLE_ITERATIONS, 1, 100_000_000);
      return new Config(
          nodes,
          flags.isSet(Harness.ADMIT_FRESH_NODES),
          iterations,
          warmup,
          rounds,
          throughputTime,
          blackholeIterations);
    }
  }
}
