package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.Flags.UsageException;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.PrintStream;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Prints latency and throughput figures for RedLock next to a hand-written baseline, what a master
 * that never answers costs with and without circuit breakers, and how soon a lease is granted again
 * after a majority of masters hung and came back, all measured in one run against the same masters.
 * A program that reports, not a test: it passes no judgement beyond printing each ratio next to its
 * goal.
 *
 * <pre>
 * mvn -q -o -pl redlock-drill package -Pbench
 * mvn -q -o -pl redlock-drill package -Pbench -Dbench.args="--iterations 50000 --rounds 20"
 * mvn -q -o -pl redlock-drill package -Pbench -Dbench.args="--only heal --heal-repeats 10"
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
 *       overhead (goal p50 at most {@value BenchmarkChecks#GOAL_RATIO}), default / plain the cost
 *       of fencing.
 *   <li><b>Throughput</b> of acquire plus release with 8 and 32 threads sharing one RedLock, each
 *       thread on keys of its own, for the default and the plain RedLock.
 *   <li><b>Circuit breakers</b>: acquire plus release with the default RedLock on N healthy
 *       masters, and on N-1 healthy masters plus a {@link BlackHole} in place of the last (a server
 *       that accepts connections and never answers), once with circuit breakers (measured only
 *       after the listener reported the black hole's breaker OPEN) and once without. The p99 with
 *       the black hole over the healthy p99 should stay at most {@value
 *       BenchmarkChecks#BREAKER_GOAL_RATIO} with breakers.
 *   <li><b>Heal</b> ({@link HealRun}), on local masters only: {@value HealRun#HUNG} of them hung
 *       with {@code SIGSTOP} while the default RedLock fails to acquire, then resumed; the time
 *       from the last one running again to the first lease, held against a goal of 100 ms, and the
 *       outcome of a tryAcquire 1.5 s later. {@code --only heal} runs this section alone.
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
  static final int DEFAULT_HEAL_REPEATS = 5;

  /** The value of {@code --only} that runs the heal section alone. */
  static final String HEAL = "heal";

  /**
   * The system property redlock-core reads to pick the transport of plaintext masters, for
   * comparisons only: {@code jedis} (a connection and I/O thread per master) or the default, one
   * selector thread for all. {@code --transport} sets it before any RedLock is built.
   */
  static final String TRANSPORT_PROPERTY = "dev.redlock.transport";

  /** The values {@code --transport} takes. */
  static final List<String> TRANSPORTS = List.of("selector", "jedis");

  static final long NODE_TIMEOUT_MILLIS = 50;

  /** The node timeout of every RedLock in the benchmark. */
  static final Duration NODE_TIMEOUT = Duration.ofMillis(NODE_TIMEOUT_MILLIS);

  /** The time to live of every lease in the benchmark. */
  static final Duration TTL = Duration.ofSeconds(10);

  private static final String USAGE =
      String.format(
          Locale.ROOT,
          """
          Usage: Benchmark [options]

          Prints acquire and acquire+release latency of the plain RedLock (fencing and restart
          guard off: one SET NX PX round) next to a hand-written baseline (blocking sockets,
          hand-parsed RESP) on the same masters, the cost of the default RedLock's fencing, the
          throughput of both with %s threads, what one master that never answers costs with
          and without circuit breakers, and (local masters only) how soon the default RedLock
          grants a lease again after %d of %d masters hung (SIGSTOP) and resumed.

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
            --heal-repeats N          heal measurements, each with a new RedLock (default %d)
            --only heal               run the heal section alone (needs the local masters)
            --transport T             the RedLocks' transport for plaintext masters: selector
                                      (the default: one NIO thread for all) or jedis (a
                                      connection and I/O thread per master), to compare them
            -h, --help                show this help
          """,
          BenchmarkReport.threadCounts(),
          HealRun.HUNG,
          Masters.LOCAL_COUNT,
          Masters.LOCAL_COUNT,
          DEFAULT_ITERATIONS,
          DEFAULT_WARMUP,
          DEFAULT_ROUNDS,
          ThroughputRun.ROUNDS,
          DEFAULT_THROUGHPUT_TIME.toSeconds(),
          DEFAULT_BLACKHOLE_ITERATIONS,
          DEFAULT_HEAL_REPEATS);

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
              "blackhole-iterations",
              "heal-repeats",
              "only",
              "transport"),
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
   * Runs every measurement (or only the heal section) and prints the figures: starts local masters
   * unless {@code config} names some, and shuts everything down on every path.
   *
   * @throws IOException if the baseline cannot talk to a master, or the black hole cannot listen
   * @throws CannotRun if the default RedLock gets no lease (masters not admitted, say)
   */
  static void run(Config config, PrintStream out)
      throws IOException, InterruptedException, CannotRun {
    requireNonNull(config, "config");
    requireNonNull(out, "out");
    if (config.transport() != null) {
      System.setProperty(TRANSPORT_PROPERTY, config.transport());
    }
    BenchmarkReport report = new BenchmarkReport(out);
    try (Masters masters = Masters.open(config.nodes(), out)) {
      if (config.onlyHeal()) {
        report.healOnlyHeader(config, masters);
      } else {
        boolean admit = masters.local() || config.admitFreshNodes();
        BenchmarkRun.measure(config, masters, admit, report, new BenchmarkSummary(out));
      }
      if (masters.local()) {
        HealRun.measure(masters, config.healRepeats(), new HealReport(out));
        List<Long> sizes = new ArrayList<>();
        for (RedisProcess node : masters.processes()) {
          sizes.add(node.admin().dbSize());
        }
        report.keysLeft(sizes);
      } else {
        new HealReport(out).skipped();
        report.fencingCountersNote();
      }
    }
  }

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
   * @param healRepeats how many times the heal section measures
   * @param onlyHeal whether to run the heal section alone (needs local masters)
   * @param transport the transport of plaintext masters ({@link #TRANSPORTS}), or null for the
   *     library's default
   */
  record Config(
      List<String> nodes,
      boolean admitFreshNodes,
      int iterations,
      int warmup,
      int rounds,
      Duration throughputTime,
      int blackholeIterations,
      int healRepeats,
      boolean onlyHeal,
      String transport) {

    Config {
      nodes = List.copyOf(nodes);
      requireNonNull(throughputTime, "throughputTime");
      if (onlyHeal && !nodes.isEmpty()) {
        throw new IllegalArgumentException("the heal section needs local masters, not nodes");
      }
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
      int healRepeats = flags.intValue("heal-repeats", DEFAULT_HEAL_REPEATS, 1, 1_000);
      boolean onlyHeal = only(flags);
      List<String> transport = flags.list("transport");
      if (!transport.isEmpty()
          && (transport.size() > 1 || !TRANSPORTS.contains(transport.get(0)))) {
        throw new UsageException(
            "--transport takes one of "
                + TRANSPORTS
                + "; was '"
                + String.join(",", transport)
                + "'");
      }
      if (onlyHeal && !nodes.isEmpty()) {
        throw new UsageException(
            "--only heal hangs masters with SIGSTOP, so it needs the local ones: leave out --nodes");
      }
      return new Config(
          nodes,
          flags.isSet(Harness.ADMIT_FRESH_NODES),
          iterations,
          warmup,
          rounds,
          throughputTime,
          blackholeIterations,
          healRepeats,
          onlyHeal,
          transport.isEmpty() ? null : transport.get(0));
    }

    /** Whether {@code --only heal} was given; the heal section is the one that runs alone. */
    private static boolean only(Flags flags) throws UsageException {
      List<String> only = flags.list("only");
      if (only.isEmpty()) {
        return false;
      }
      if (!only.equals(List.of(HEAL))) {
        throw new UsageException(
            "--only takes '"
                + HEAL
                + "', the one section that runs alone; was '"
                + String.join(",", only)
                + "'");
      }
      return true;
    }
  }
}
