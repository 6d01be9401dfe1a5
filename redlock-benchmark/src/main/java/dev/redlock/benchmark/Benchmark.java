package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.benchmark.Flags.UsageException;
import dev.redlock.benchmark.IsolationRun.Isolation;
import dev.redlock.drill.Harness;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.drill.Masters;
import dev.redlock.internal.transport.Transport;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Prints, in one run against the same masters, the figures that judge the performance goals:
 * acquire+release latency (p50, p99) and throughput (8 and 32 threads) of a hand-written floor, the
 * plain and the default RedLock, the default RedLock reading its fencing token every time, the
 * default RedLock over TLS, Redisson's RedLock and node-redlock; each goal with its ratio and met /
 * NOT met; optionally a chart of it all (SVG). Then what a master that never answers costs with and
 * without circuit breakers, whether one hostile master stalls the others, and how soon a lease is
 * granted again after a majority of masters hung and came back. A program that reports, not a test:
 * it passes no judgement beyond printing each figure next to its goal.
 *
 * <pre>
 * ./mvnw -q -Pbench package -DskipTests
 * ./mvnw -q -Pbench package -DskipTests -Dbench.args="--iterations 20000 --chart docs/benchmark.svg"
 * ./mvnw -q -Pbench package -DskipTests -Dbench.args="--only heal --heal-repeats 10"
 * ./mvnw -q -Pbench package -DskipTests -pl redlock-benchmark -am -Dbench.args="--only isolation"
 * ./mvnw -q -Pbench package -DskipTests -pl redlock-benchmark -am -Dbench.args="--only handoff"
 * </pre>
 *
 * The Maven profile runs this class with the test class path and {@code bench.args} split at spaces
 * into its arguments; {@code --help} lists them.
 *
 * <h2>The rows</h2>
 *
 * <ul>
 *   <li><b>floor</b>: {@link BaselineClient}, one thread, N blocking sockets: it writes {@code SET
 *       key token NX PX ttl} to every master, then reads every reply; then the same for the release
 *       (RedLock's own release script, by {@code EVALSHA}). Its timed part includes making the
 *       token (the same 128 bits of {@link SecureRandom}) and encoding the key, as RedLock's does.
 *       Each throughput thread has sockets of its own.
 *   <li><b>plain RedLock</b>: {@code fencing(false).restartGuard(false)}, the Redlock algorithm as
 *       specified: acquire is one {@code SET key token NX PX ttl} round, the very command the floor
 *       sends.
 *   <li><b>default RedLock</b>: the library's defaults: fencing (the token is chosen during the
 *       acquire and stored only when first read, so a lease whose token is not read costs one
 *       round), the restart guard (the masters admitted explicitly, as a brand-new cluster must be)
 *       and circuit breakers.
 *   <li><b>default RedLock + fencingToken()</b>: the same RedLock, each cycle reading the lease's
 *       fencing token between acquire and release (a quorum round of its own).
 *   <li><b>default RedLock over TLS</b>: the same configuration on the same masters' TLS ports
 *       ({@code rediss://}, a private CA made with openssl; the Jedis transport, a connection and
 *       an I/O thread per master). Local masters only; skipped, with the reason, without openssl.
 *   <li><b>Redisson RedLock</b>: {@link RedissonRedLockClient}.
 *   <li><b>node-redlock</b>: {@link NodeRedlock}, a child {@code node} process; its "threads" are
 *       concurrent async loops in that one process. Skipped, with the reason, without node or npm
 *       or when {@code npm ci} fails.
 * </ul>
 *
 * Every RedLock here has the node timeout of {@code --node-timeout} (default 50 ms, the library's).
 *
 * <h2>What it measures</h2>
 *
 * <ol>
 *   <li><b>Uncontended latency</b>, one thread, a new key per operation: acquire+release for every
 *       row, and acquire alone (the release that follows is not timed) for the floor, the plain and
 *       the default RedLock.
 *   <li><b>Throughput</b> of acquire+release with 8 and 32 threads, each thread on keys of its own
 *       ({@link ThroughputRun}).
 *   <li><b>Circuit breakers</b>: acquire plus release with the default RedLock on N healthy
 *       masters, and on N-1 healthy masters plus a {@link BlackHole} in place of the last (a server
 *       that accepts connections and never answers), once with circuit breakers (measured only
 *       after the listener reported the black hole's breaker OPEN) and once without. The p99 with
 *       the black hole over the healthy p99 should stay at most {@value
 *       BenchmarkChecks#BREAKER_GOAL_RATIO} with breakers.
 *   <li><b>Isolation</b> ({@link IsolationRun}, issue 15): the default RedLock's tryAcquire of a
 *       new key (then release) on the healthy masters, then with the last master replaced in turn
 *       by a hostile master in a child JVM ({@code HostileMasterProcess} of redlock-testkit) that
 *       answers the handshake and then floods, sends garbage, dribbles (slowloris), announces a 512
 *       MiB reply or resets. Per case: grants out of attempts (goal: all), tryAcquire p99 (goal: at
 *       most 1.5 x the healthy p99 + 1 ms) and heap growth with the case's RedLock open (goal: at
 *       most 16 MiB); the goals are printed with the others. {@code --isolation-iterations} sets
 *       the cycles per block; {@code --only isolation} runs this section alone, {@code --skip
 *       isolation} leaves it out.
 *   <li><b>Heal</b> ({@link HealRun}), on local masters only: {@value HealRun#HUNG} of them hung
 *       with {@code SIGSTOP} while the default RedLock fails to acquire, then resumed; the time
 *       from the last one running again to the first lease, held against a goal of 100 ms, and the
 *       outcome of a tryAcquire 1.5 s later. {@code --only heal} runs this section alone.
 *   <li><b>Hand-off</b> ({@link HandOffRun}, issue 18), before the heal: {@value
 *       HandOffRun#CONTENDERS} contenders on one resource, each with its own client, holding it
 *       {@value HandOffRun#HOLD_MILLIS} ms and pausing {@value HandOffRun#PAUSE_MILLIS} ms between
 *       holds, then not at all: wait p50, p99 and max, utilization, grants of the fewest and the
 *       most, for the default RedLock, the RedLock with {@code wakeUps(false)}, Redisson's {@code
 *       RLock} on one master, {@code RedissonRedLock}, and two hand-written floors ({@link
 *       HandOffFloor}: a hand-off's least cost in two rounds and in one); the goals against
 *       the default's figures. {@code --only handoff} runs it alone, {@code --skip handoff} leaves
 *       it out.
 *   <li><b>Async load</b> ({@link AsyncLoadRun}, issue 30), after the hand-off: {@value
 *       AsyncLoadRun#WAITERS} waiters of one default RedLock on {@value AsyncLoadRun#RESOURCES}
 *       resources at once (futures, then blocking calls on virtual threads on a JDK 21 or later),
 *       then ten times as many, each holder working 1 ms, reading its fencing token and releasing:
 *       granted, fenced, failed (by kind), circuit breakers opened, mean hand-off per resource.
 *       {@code --only async-load} runs it alone, {@code --skip async-load} leaves it out.
 * </ol>
 *
 * Every measurement is warmed up first. The latency measurements then run in rounds of short
 * blocks, one block of each operation per round, in reverse order every other round, so that noise
 * on the machine (another process, a GC, frequency scaling) falls on all alike; the throughput
 * blocks alternate the same way. {@link BenchmarkSummary} prints the table and the goals ({@link
 * BenchmarkChecks#goals}, {@link BenchmarkChecks#isolationGoals}).
 */
public final class Benchmark {

  static final int DEFAULT_ITERATIONS = 10_000;
  static final int DEFAULT_WARMUP = 2_000;
  static final int DEFAULT_ROUNDS = 10;
  static final int DEFAULT_BLACKHOLE_ITERATIONS = 10_000;
  static final Duration DEFAULT_THROUGHPUT_TIME = Duration.ofSeconds(2);
  static final int DEFAULT_HEAL_REPEATS = 5;
  static final int DEFAULT_ISOLATION_ITERATIONS = 1_000;

  /** The value of {@code --only} that runs the heal section alone. */
  static final String HEAL = "heal";

  /**
   * The value of {@code --only} that runs the isolation section alone, and of {@code --skip} that
   * leaves it out.
   */
  static final String ISOLATION = "isolation";

  /**
   * The value of {@code --only} that runs the hand-off section alone, and of {@code --skip} that
   * leaves it out.
   */
  static final String HANDOFF = "handoff";

  /**
   * The value of {@code --only} that runs the async-load section alone, and of {@code --skip} that
   * leaves it out.
   */
  static final String ASYNC_LOAD = "async-load";

  /** The values {@code --transport} takes. */
  static final List<String> TRANSPORTS = List.of("selector", "jedis");

  /** The node timeout of every RedLock in the benchmark unless {@code --node-timeout} says. */
  static final Duration DEFAULT_NODE_TIMEOUT = RedLock.DEFAULT_NODE_TIMEOUT;

  /** The value of {@code --skip} that leaves out the Redisson row. */
  static final String REDISSON = "redisson";

  /** The value of {@code --skip} that leaves out the TLS row. */
  static final String TLS = "tls";

  /** The value of {@code --skip} that leaves out the node-redlock row. */
  static final String NODE_REDLOCK = "node-redlock";

  /**
   * The system property that gives the default of {@code --node-dir} (the Maven profile sets it to
   * a directory under {@code target}).
   */
  static final String NODE_DIR_PROPERTY = "redlock.bench.nodeDir";

  /** The time to live of every lease in the benchmark. */
  static final Duration TTL = Duration.ofSeconds(10);

  private static final String USAGE =
      String.format(
          Locale.ROOT,
          """
          Usage: Benchmark [options]

          Prints acquire+release latency (p50, p99) and throughput (%s threads) of a
          hand-written floor (one thread writes SET NX PX to every master, then reads every
          reply; the same for the release), the plain RedLock (fencing and restart guard off),
          the default RedLock, the default RedLock reading its fencing token every time,
          Redisson's RedLock and node-redlock (a node child process), all on the same masters in
          interleaved blocks; each performance goal with its ratio and met / NOT met; what one
          master that never answers costs with and without circuit breakers; and (local masters
          only) how soon the default RedLock grants a lease again after %d of %d masters hung
          (SIGSTOP) and resumed. Before the heal, isolation: whether one hostile master (a child
          JVM that floods, sends garbage, dribbles, announces 512 MiB or resets after the
          handshake) in place of the last stalls the others: tryAcquire grants, p99 and heap
          growth against a healthy block, each against its goal.

          Options:
            --nodes URI,URI,...       Redis masters to use (plain redis:// for the floor); the
                                      last one is replaced by the black hole in the breaker section
                                      and by the hostile masters in the isolation section
                                      (default: start %d local redis-server processes)
            --admit-fresh-nodes       call admitFreshNodes() on the --nodes masters first (local
                                      masters always are): only for a brand-new cluster
            --iterations N            timed operations per latency measurement (default %,d)
            --warmup N                untimed operations per measurement first (default %,d)
            --rounds R                blocks each latency measurement is split into (default %d)
            --throughput-seconds S    time per row and thread count, split into %d blocks
                                      (default %d)
            --blackhole-iterations N  timed operations per circuit-breaker measurement (default %,d)
            --node-timeout MS         node timeout of every RedLock (default %d); raise it on a
                                      starved machine, where a 50 ms timeout can trip
            --chart FILE              also write a chart of the latency percentiles and the
                                      throughput of every row to FILE (SVG)
            --node-dir DIR            where npm ci installs node-redlock (default: %s)
            --skip ROW,...            leave out any of the rows %s, %s and %s (the row
                                      says so) and the sections %s, %s and %s
            --heal-repeats N          heal measurements, each with a new RedLock (default %d)
            --isolation-iterations N  tryAcquire cycles per isolation block (default %,d); a
                                      case with a hostile master stops after %d s
            --only SECTION            run one section alone: heal (needs the local masters),
                                      isolation, handoff or async-load (%,d and %,d waiters
                                      of one RedLock on %d resources, each holder reading its
                                      fencing token)
            --handoff-seconds S       time per row of the hand-off section (%d contenders on one
                                      resource, hold %d ms, pause %d ms, then no pause; default %d)
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
          DEFAULT_NODE_TIMEOUT.toMillis(),
          defaultNodeDir(),
          REDISSON,
          NODE_REDLOCK,
          TLS,
          ISOLATION,
          HANDOFF,
          ASYNC_LOAD,
          DEFAULT_HEAL_REPEATS,
          DEFAULT_ISOLATION_ITERATIONS,
          IsolationRun.CASE_LIMIT.toSeconds(),
          AsyncLoadRun.WAITERS,
          10 * AsyncLoadRun.WAITERS,
          AsyncLoadRun.RESOURCES,
          HandOffRun.CONTENDERS,
          HandOffRun.HOLD_MILLIS,
          HandOffRun.PAUSE_MILLIS,
          HandOffRun.DEFAULT_TIME.toSeconds());

  /** The options that take a value, without their leading dashes. */
  static final Set<String> FLAGS =
      Set.of(
          "nodes",
          "iterations",
          "warmup",
          "rounds",
          "throughput-seconds",
          "blackhole-iterations",
          "node-timeout",
          "chart",
          "node-dir",
          "skip",
          "heal-repeats",
          "isolation-iterations",
          "only",
          "transport",
          "handoff-seconds");

  private static final Program HARNESS =
      new Program(
          "benchmark", "benchmark failed: ", USAGE, FLAGS, Set.of(Harness.ADMIT_FRESH_NODES));

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
   * Runs every measurement (or only the section {@code --only} names) and prints the figures:
   * starts local masters unless {@code config} names some, and shuts everything down on every path.
   *
   * @throws IOException if the floor cannot talk to a master, the black hole cannot listen, the
   *     node-redlock process stops answering, or the chart cannot be written
   * @throws CannotRun if the default RedLock gets no lease (masters not admitted, say)
   */
  static void run(Config config, PrintStream out)
      throws IOException, InterruptedException, CannotRun {
    requireNonNull(config, "config");
    requireNonNull(out, "out");
    if (config.transport() != null) {
      // redlock-core's hook for comparisons (an unexported package; the benchmark runs on the
      // class path): jedis, a connection and I/O thread per master, or the default, one selector
      // thread for all; set before any RedLock is built.
      Transport.usePlaintext(
          "jedis".equals(config.transport()) ? Transport.JEDIS : Transport.SELECTOR);
    }
    BenchmarkReport report = new BenchmarkReport(out);
    boolean tls = config.only() == null && !config.skip().contains(TLS);
    try (Masters masters = Masters.open(config.nodes(), tls, out)) {
      boolean admit = masters.local() || config.admitFreshNodes();
      if (config.onlyHeal()) {
        report.healOnlyHeader(config, masters);
      } else if (config.onlyHandOff()) {
        out.printf("Hand-off section alone (--only %s)%n", HANDOFF);
      } else if (config.onlyAsyncLoad()) {
        out.printf("Async-load section alone (--only %s)%n", ASYNC_LOAD);
      } else if (config.onlyIsolation()) {
        report.isolationOnlyHeader(config, masters);
        IsolationReport isolationReport = new IsolationReport(out);
        Isolation isolation = IsolationRun.measure(config, masters, admit, isolationReport);
        new BenchmarkSummary(out).printIsolation(isolation, isolationReport);
      } else {
        BenchmarkRun.measure(
            config, masters, admit, report, new IsolationReport(out), new BenchmarkSummary(out));
      }
      if (config.handOff()) {
        HandOffRun.measure(
            masters.uris(),
            config.nodeTimeout(),
            admit,
            config.handOffTime(),
            !config.skip().contains(REDISSON),
            masters.local(),
            out);
      }
      if (config.asyncLoad()) {
        AsyncLoadRun.measure(masters.uris(), config.nodeTimeout(), admit, out);
      }
      if (!config.onlyIsolation() && !config.onlyHandOff() && !config.onlyAsyncLoad()) {
        if (masters.local()) {
          HealRun.measure(masters, config.healRepeats(), config.nodeTimeout(), new HealReport(out));
        } else {
          new HealReport(out).skipped();
        }
      }
      if (masters.local()) {
        List<Long> own = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        for (RedisProcess node : masters.processes()) {
          own.add((long) ((List<?>) node.admin().command("KEYS", "redlock:*")).size());
          sizes.add(node.admin().dbSize());
        }
        report.keysLeft(own, sizes);
      } else {
        report.fencingCountersNote();
      }
    }
  }

  /**
   * Where node-redlock is installed unless {@code --node-dir} says: the {@value #NODE_DIR_PROPERTY}
   * system property (under {@code target} through Maven), else a directory in the temporary
   * directory.
   */
  static Path defaultNodeDir() {
    String property = System.getProperty(NODE_DIR_PROPERTY);
    return property == null || property.isBlank()
        ? Path.of(System.getProperty("java.io.tmpdir"), "redlock-bench-node-redlock")
        : Path.of(property);
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
   * @param throughputTime time per row and thread count, split into blocks
   * @param blackholeIterations timed operations per circuit-breaker measurement
   * @param nodeTimeout the node timeout of every RedLock
   * @param chart where to write the chart (SVG), if anywhere
   * @param nodeDir where node-redlock is installed
   * @param skip the rows and sections left out: {@link #REDISSON}, {@link #NODE_REDLOCK}, {@link
   *     #TLS}, {@link #ISOLATION}
   * @param healRepeats how many times the heal section measures
   * @param isolationIterations tryAcquire cycles per block of the isolation section
   * @param only the section to run alone, {@link #HEAL} (needs local masters) or {@link
   *     #ISOLATION}; null to run them all
   * @param transport the transport of plaintext masters ({@link #TRANSPORTS}), or null for the
   *     library's default
   * @param handOffTime time per row of the hand-off section
   */
  record Config(
      List<String> nodes,
      boolean admitFreshNodes,
      int iterations,
      int warmup,
      int rounds,
      Duration throughputTime,
      int blackholeIterations,
      Duration nodeTimeout,
      Optional<Path> chart,
      Path nodeDir,
      Set<String> skip,
      int healRepeats,
      int isolationIterations,
      String only,
      String transport,
      Duration handOffTime) {

    Config {
      nodes = List.copyOf(nodes);
      requireNonNull(throughputTime, "throughputTime");
      requireNonNull(nodeTimeout, "nodeTimeout");
      requireNonNull(chart, "chart");
      requireNonNull(nodeDir, "nodeDir");
      skip = Set.copyOf(skip);
      requireNonNull(handOffTime, "handOffTime");
      if (only != null && !List.of(HEAL, ISOLATION, HANDOFF, ASYNC_LOAD).contains(only)) {
        throw new IllegalArgumentException("no section '" + only + "' runs alone");
      }
      if (HEAL.equals(only) && !nodes.isEmpty()) {
        throw new IllegalArgumentException("the heal section needs local masters, not nodes");
      }
      if (isolationIterations < 1) {
        throw new IllegalArgumentException("isolationIterations must be at least 1");
      }
      if (nodeTimeout.compareTo(TTL) >= 0) {
        throw new IllegalArgumentException("the node timeout must be below the TTL " + TTL);
      }
    }

    static Config from(Flags flags) throws UsageException {
      List<String> nodes = Program.nodes(flags);
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
      Duration nodeTimeout =
          flags.millis(
              "node-timeout",
              DEFAULT_NODE_TIMEOUT,
              Duration.ofMillis(1),
              TTL.dividedBy(2).minusMillis(1));
      Optional<Path> chart =
          flags.has("chart") ? Optional.of(Path.of(flags.value("chart"))) : Optional.empty();
      Path nodeDir = flags.has("node-dir") ? Path.of(flags.value("node-dir")) : defaultNodeDir();
      Set<String> skip = new LinkedHashSet<>(flags.list("skip"));
      for (String row : skip) {
        if (!List.of(REDISSON, NODE_REDLOCK, TLS, ISOLATION, HANDOFF, ASYNC_LOAD).contains(row)) {
          throw new UsageException(
              "--skip takes any of "
                  + REDISSON
                  + ", "
                  + NODE_REDLOCK
                  + ", "
                  + TLS
                  + ", "
                  + ISOLATION
                  + ", "
                  + HANDOFF
                  + " and "
                  + ASYNC_LOAD
                  + "; was '"
                  + row
                  + "'");
        }
      }
      int healRepeats = flags.intValue("heal-repeats", DEFAULT_HEAL_REPEATS, 1, 1_000);
      int isolationIterations =
          flags.intValue("isolation-iterations", DEFAULT_ISOLATION_ITERATIONS, 1, 10_000_000);
      String only = only(flags);
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
      if (HEAL.equals(only) && !nodes.isEmpty()) {
        throw new UsageException(
            "--only heal hangs masters with SIGSTOP, so it needs the local ones: leave out --nodes");
      }
      if (ISOLATION.equals(only) && skip.contains(ISOLATION)) {
        throw new UsageException("--only isolation and --skip isolation leave nothing to run");
      }
      if (HANDOFF.equals(only) && skip.contains(HANDOFF)) {
        throw new UsageException("--only handoff and --skip handoff leave nothing to run");
      }
      if (ASYNC_LOAD.equals(only) && skip.contains(ASYNC_LOAD)) {
        throw new UsageException("--only async-load and --skip async-load leave nothing to run");
      }
      Duration handOffTime =
          flags.seconds(
              "handoff-seconds",
              HandOffRun.DEFAULT_TIME,
              Duration.ofSeconds(1),
              Duration.ofHours(1));
      return new Config(
          nodes,
          flags.isSet(Harness.ADMIT_FRESH_NODES),
          iterations,
          warmup,
          rounds,
          throughputTime,
          blackholeIterations,
          nodeTimeout,
          chart,
          nodeDir,
          skip,
          healRepeats,
          isolationIterations,
          only,
          transport.isEmpty() ? null : transport.get(0),
          handOffTime);
    }

    /** The section {@code --only} names ({@link #HEAL} or {@link #ISOLATION}), or null. */
    private static String only(Flags flags) throws UsageException {
      List<String> only = flags.list("only");
      if (only.isEmpty()) {
        return null;
      }
      if (only.size() > 1 || !List.of(HEAL, ISOLATION, HANDOFF, ASYNC_LOAD).contains(only.get(0))) {
        throw new UsageException(
            "--only takes one of '"
                + HEAL
                + "', '"
                + ISOLATION
                + "', '"
                + HANDOFF
                + "' and '"
                + ASYNC_LOAD
                + "', the sections that run alone; was '"
                + String.join(",", only)
                + "'");
      }
      return only.get(0);
    }

    /** Whether the heal section runs alone. */
    boolean onlyHeal() {
      return HEAL.equals(only);
    }

    /** Whether the isolation section runs alone. */
    boolean onlyIsolation() {
      return ISOLATION.equals(only);
    }

    /** Whether the isolation section runs, alone or with the others. */
    boolean isolation() {
      return !onlyHeal() && !onlyHandOff() && !onlyAsyncLoad() && !skip.contains(ISOLATION);
    }

    /** Whether the async-load section runs alone. */
    boolean onlyAsyncLoad() {
      return ASYNC_LOAD.equals(only);
    }

    /** Whether the async-load section runs, alone or with the others. */
    boolean asyncLoad() {
      return (only == null || onlyAsyncLoad()) && !skip.contains(ASYNC_LOAD);
    }

    /** Whether the hand-off section runs alone. */
    boolean onlyHandOff() {
      return HANDOFF.equals(only);
    }

    /** Whether the hand-off section runs, alone or with the others. */
    boolean handOff() {
      return (only == null || onlyHandOff()) && !skip.contains(HANDOFF);
    }
  }
}
