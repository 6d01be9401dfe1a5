package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.LeaseLostException;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.benchmark.Benchmark.Config;
import dev.redlock.benchmark.IsolationRun.Isolation;
import dev.redlock.benchmark.ThroughputRun.Throughput;
import dev.redlock.drill.Harness;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.drill.Masters;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;

/**
 * Sections 1 to 4 of the benchmark (see {@link Benchmark}): makes the clients (the {@link
 * Contender}s), measures latency (here), throughput ({@link ThroughputRun}), the circuit breakers
 * (here) and isolation ({@link IsolationRun}), and draws the chart ({@link BenchmarkChart}); {@link
 * BenchmarkReport} prints the header and the rounds, {@link BenchmarkSummary} the summary. Not
 * thread-safe: one thread runs it.
 */
final class BenchmarkRun {

  /** Connect and read timeout of the floor's sockets. */
  private static final Duration FLOOR_TIMEOUT = Duration.ofSeconds(2);

  /** How long the breaker section's warm-up may take to see the black hole's breaker open. */
  static final Duration BREAKER_OPEN_LIMIT = Duration.ofSeconds(10);

  private final RedLock plain;
  private final RedLock defaults;
  private final RedLock tls; // null: no TLS row
  private final String tlsSkipped;
  private final Floor floor;
  private final BenchmarkReport report;
  private long sequence;

  private BenchmarkRun(
      RedLock plain,
      RedLock defaults,
      RedLock tls,
      String tlsSkipped,
      Floor floor,
      BenchmarkReport report) {
    this.plain = plain;
    this.defaults = defaults;
    this.tls = tls;
    this.tlsSkipped = tlsSkipped;
    this.floor = floor;
    this.report = report;
  }

  /** Why the TLS row is skipped, or null if it runs. */
  private static String tlsSkipped(Config config, Masters masters) {
    if (config.skip().contains(Benchmark.TLS)) {
      return "skipped: --skip " + Benchmark.TLS;
    }
    return masters.tlsUris().isEmpty() ? "skipped: " + masters.noTls() : null;
  }

  /** The default RedLock on the masters' TLS ports ({@code rediss://}, the Jedis transport). */
  private static RedLock tlsRedLock(Config config, Masters masters, BreakerWatch watch) {
    return RedLock.builder()
        .nodes(masters.tlsUris())
        .nodeTimeout(config.nodeTimeout())
        .sslContext(masters.sslContext())
        .listener(watch)
        .build();
  }

  /**
   * Runs sections 1 to 4 on {@code masters} (4, isolation, unless skipped) and prints them, with
   * the header first and the summary last; writes the chart if asked; closes every client it made.
   *
   * @param admit whether to admit the masters as a brand-new cluster first
   * @throws IOException if the floor cannot talk to a master, the black hole cannot listen, the
   *     node-redlock process stops answering, or the chart cannot be written
   * @throws CannotRun if the default RedLock gets no lease (masters not admitted, say)
   */
  static void measure(
      Config config,
      Masters masters,
      boolean admit,
      BenchmarkReport report,
      IsolationReport isolationReport,
      BenchmarkSummary summary)
      throws IOException, InterruptedException, CannotRun {
    List<String> uris = masters.uris();
    BreakerWatch healthyWatch = new BreakerWatch(null);
    try (RedLock plain =
            RedLock.builder()
                .nodes(uris)
                .nodeTimeout(config.nodeTimeout())
                .fencing(false)
                .restartGuard(false)
                .listener(healthyWatch)
                .build();
        RedLock defaults =
            RedLock.builder()
                .nodes(uris)
                .nodeTimeout(config.nodeTimeout())
                .listener(healthyWatch)
                .build();
        Floor floor = new Floor(uris, masters.quorum());
        BlackHole hole = BlackHole.start()) {
      String tlsSkipped = tlsSkipped(config, masters);
      try (RedLock tls = tlsSkipped == null ? tlsRedLock(config, masters, healthyWatch) : null) {
        measure(
            config,
            masters,
            admit,
            report,
            isolationReport,
            summary,
            new BenchmarkRun(plain, defaults, tls, tlsSkipped, floor, report),
            healthyWatch,
            hole);
      }
    }
  }

  private static void measure(
      Config config,
      Masters masters,
      boolean admit,
      BenchmarkReport report,
      IsolationReport isolationReport,
      BenchmarkSummary summary,
      BenchmarkRun run,
      BreakerWatch healthyWatch,
      BlackHole hole)
      throws IOException, InterruptedException, CannotRun {
    List<String> uris = masters.uris();
    RedLock defaults = run.defaults;
    String admission =
        admit ? admit(defaults) : "not admitted (--" + Harness.ADMIT_FRESH_NODES + ")";
    BenchmarkChecks.defaultsGrant(defaults, report::restartedHint);
    report.header(config, masters, admission, hole);
    String redissonSkipped = null;
    RedissonRedLockClient redisson = null;
    if (config.skip().contains(Benchmark.REDISSON)) {
      redissonSkipped = "skipped: --skip " + Benchmark.REDISSON;
    } else if (!redissonOnClassPath()) {
      redissonSkipped =
          "skipped: Redisson is not on the class path (the executable jar leaves it out;"
              + " run the benchmark through Maven, -Pbench)";
    } else {
      try {
        redisson = RedissonRedLockClient.connect(uris);
      } catch (RuntimeException e) {
        redissonSkipped = "skipped: Redisson could not connect: " + e;
      }
    }
    try (RedissonRedLockClient redissonClient = redisson) {
      String nodeSkipped = null;
      NodeRedlock node = null;
      if (config.skip().contains(Benchmark.NODE_REDLOCK)) {
        nodeSkipped = "skipped: --skip " + Benchmark.NODE_REDLOCK;
      } else {
        try {
          node =
              NodeRedlock.start(
                  config.nodeDir(),
                  uris,
                  Benchmark.TTL,
                  NodeRedlock.Tools.onPath(),
                  report::progress);
        } catch (NodeRedlock.Unavailable e) {
          nodeSkipped = "skipped: " + e.getMessage();
        }
      }
      try (NodeRedlock nodeClient = node) {
        Lineup lineup =
            run.lineup(redissonClient, redissonSkipped, nodeClient, nodeSkipped, masters.quorum());
        report.contenders(lineup, uris.size());
        run.latency(config, lineup);
        List<Throughput> throughput = ThroughputRun.measure(config, lineup.all(), report);
        Breakers breakers = run.breakers(config, uris, hole);
        Optional<Isolation> isolation =
            config.isolation()
                ? Optional.of(IsolationRun.measure(config, masters, admit, isolationReport))
                : Optional.empty();
        summary.print(
            config,
            uris.size(),
            lineup,
            throughput,
            breakers,
            healthyWatch,
            hole,
            isolation,
            isolationReport);
        if (config.chart().isPresent()) {
          Path chart = config.chart().get();
          BenchmarkChart.write(
              chart, lineup, throughput, uris.size(), report.chartCaption(config, masters));
          report.chartWritten(chart);
        }
      }
    }
  }

  /** Admits the masters as a brand-new cluster; returns a line for the header. */
  static String admit(RedLock redlock) {
    return admission(redlock.admitFreshNodes());
  }

  /** What {@code admitFreshNodes()} answered, as a line for a header. */
  static String admission(List<NodeOutcome> outcomes) {
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

  private static boolean redissonOnClassPath() {
    try {
      Class.forName("org.redisson.Redisson", false, BenchmarkRun.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** Every row of the benchmark, measured or skipped, and the acquire-alone operations. */
  private Lineup lineup(
      RedissonRedLockClient redisson,
      String redissonSkipped,
      NodeRedlock node,
      String nodeSkipped,
      int quorum)
      throws IOException {
    Cycle floorCycle = floor.forThread(0);
    Contender floorRow =
        Contender.measured(
            Lineup.FLOOR,
            "floor",
            timed(Lineup.FLOOR + " acquire+release", "fl", floorCycle),
            ThroughputRun.onThreads(floor));
    Contender plainRow = redlockRow(Lineup.PLAIN, "plain", "pl", plain, false);
    Contender defaultsRow = redlockRow(Lineup.DEFAULTS, "dflt", "df", defaults, false);
    Contender tokenRow = redlockRow(Lineup.TOKEN, "token", "tk", defaults, true);
    Contender tlsRow =
        tls == null
            ? Contender.skipped(Lineup.TLS, "tls", tlsSkipped)
            : redlockRow(Lineup.TLS, "tls", "ts", tls, false);
    String redissonName = "Redisson RedLock";
    Contender redissonRow;
    if (redisson == null) {
      redissonRow = Contender.skipped(redissonName, "redisson", redissonSkipped);
    } else {
      redissonName += " " + RedissonRedLockClient.version();
      Cycle cycle = key -> redisson.cycle(key, Benchmark.TTL);
      redissonRow =
          Contender.measured(
              redissonName,
              "redisson",
              timed(redissonName + " acquire+release", "rs", cycle),
              ThroughputRun.onThreads(index -> cycle));
    }
    Contender nodeRow;
    if (node == null) {
      nodeRow = Contender.skipped("node-redlock", "node", nodeSkipped);
    } else {
      String name = "node-redlock " + nodeVersion(node.versions());
      Operation latency =
          Operation.ofBlocks(
              name + " acquire+release",
              (count, op) -> node.cycles(count, "bench:nr:" + sequence++ + ":", op::addFailures));
      nodeRow =
          Contender.measured(
              name, "node", latency, (threads, time, prefix) -> node.loops(threads, time, prefix));
    }
    AcquireAlone alone =
        new AcquireAlone(
            new Operation("floor SET NX PX round", this::floorAcquire),
            new Operation("plain RedLock tryAcquire", op -> acquireOnly(plain, op)),
            new Operation("default RedLock tryAcquire", op -> acquireOnly(defaults, op)));
    return new Lineup(
        floorRow, plainRow, defaultsRow, tokenRow, tlsRow, redissonRow, nodeRow, alone, quorum);
  }

  /** "5.0.0-beta.2" out of "node=20.20.2 redlock=v5.0.0-beta.2 ioredis=5.9.3". */
  private static String nodeVersion(String versions) {
    for (String word : versions.split(" ")) {
      if (word.startsWith("redlock=")) {
        String version = word.substring("redlock=".length());
        return version.startsWith("v") ? version.substring(1) : version;
      }
    }
    return "?";
  }

  private Contender redlockRow(
      String name, String column, String keyTag, RedLock redlock, boolean readToken) {
    Cycle cycle = key -> redlockCycle(redlock, key, readToken);
    return Contender.measured(
        name,
        column,
        timed(name + " acquire+release", keyTag, cycle),
        ThroughputRun.onThreads(index -> cycle));
  }

  /** A one-thread operation that times {@code cycle} on a new key each time. */
  private Operation timed(String label, String keyTag, Cycle cycle) {
    return new Operation(
        label,
        op -> {
          String key = "bench:" + keyTag + ":" + sequence++;
          long before = System.nanoTime();
          boolean succeeded = cycle.run(key);
          long elapsed = System.nanoTime() - before;
          op.failedIf(!succeeded);
          return elapsed;
        });
  }

  private void latency(Config config, Lineup lineup) throws IOException, InterruptedException {
    List<Operation> ops = lineup.latencyOperations();
    report.latencyWarmingUp(config.warmup());
    Operation.warmUp(ops, config.warmup());
    report.latencyMeasuring(
        lineup, config.rounds(), blockSize(config.iterations(), config.rounds()));
    Operation.interleave(
        ops,
        config.iterations(),
        config.rounds(),
        (round, rounds) -> report.latencyRound(lineup, round, rounds));
  }

  /** Section 3: the default RedLock with the black hole in place of the last master. */
  private Breakers breakers(Config config, List<String> uris, BlackHole hole)
      throws IOException, InterruptedException {
    List<String> holeUris = new ArrayList<>(uris);
    holeUris.set(holeUris.size() - 1, hole.uri());
    BreakerWatch watch = new BreakerWatch(hole.node());
    try (RedLock withBreakers =
            RedLock.builder()
                .nodes(holeUris)
                .nodeTimeout(config.nodeTimeout())
                .listener(watch)
                .build();
        RedLock withoutBreakers =
            RedLock.builder()
                .nodes(holeUris)
                .nodeTimeout(config.nodeTimeout())
                .circuitBreakers(false)
                .build()) {
      return breakers(config, withBreakers, withoutBreakers, watch, hole);
    }
  }

  private Breakers breakers(
      Config config,
      RedLock withBreakers,
      RedLock withoutBreakers,
      BreakerWatch watch,
      BlackHole hole)
      throws IOException, InterruptedException {
    Operation healthy =
        timed("all masters healthy", "bh", key -> redlockCycle(defaults, key, false));
    Operation on =
        timed(
            "black hole, breakers on (OPEN)", "bh", key -> redlockCycle(withBreakers, key, false));
    Operation off =
        timed("black hole, breakers off", "bh", key -> redlockCycle(withoutBreakers, key, false));
    report.breakersWarmingUp(hole);
    long began = System.nanoTime();
    long giveUp = began + BREAKER_OPEN_LIMIT.toNanos();
    long ops = 0;
    while (!watch.opened() && System.nanoTime() - giveUp < 0) {
      on.once();
      ops++;
    }
    long openedAfter = System.nanoTime() - began;
    if (watch.opened()) {
      report.breakerOpened(hole, ops, openedAfter);
    } else {
      ops = -1;
      report.breakerNotOpened(hole);
    }
    List<Operation> all = List.of(healthy, on, off);
    Operation.warmUp(all, Math.min(config.warmup(), 500));
    int mark = watch.transitions().size();
    int rounds = Math.min(config.rounds(), config.blackholeIterations());
    report.breakersMeasuring(rounds, blockSize(config.blackholeIterations(), rounds));
    Operation.interleave(
        all,
        config.blackholeIterations(),
        rounds,
        (round, total) -> report.breakersRound(healthy, on, off, round, total));
    List<RedLockListener.CircuitState> during =
        List.copyOf(watch.transitions().subList(mark, watch.transitions().size()));
    return new Breakers(healthy, on, off, ops, openedAfter, during);
  }

  private static int blockSize(int iterations, int rounds) {
    return (iterations + rounds - 1) / rounds;
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

  private long floorAcquire(Operation op) throws IOException {
    return floor.acquireOnly("bench:fa:" + sequence++, op);
  }

  /**
   * One acquire+release with {@code redlock}; with {@code readToken}, the lease's fencing token is
   * read in between (storing it: a quorum round of its own).
   *
   * @return whether the lease was granted (and, with {@code readToken}, its token stored)
   */
  static boolean redlockCycle(RedLock redlock, String key, boolean readToken) {
    Optional<Lease> lease = tryAcquire(redlock, key);
    if (lease.isEmpty()) {
      return false;
    }
    try (Lease held = lease.get()) {
      if (readToken) {
        held.fencingToken();
      }
      return true;
    } catch (QuorumUnavailableException | LeaseLostException e) {
      return false;
    }
  }

  private static Optional<Lease> tryAcquire(RedLock redlock, String key) {
    try {
      return redlock.tryAcquire(key, Benchmark.TTL);
    } catch (QuorumUnavailableException e) {
      return Optional.empty();
    }
  }

  /** A lock value as RedLock makes it: 128 bits of SecureRandom, as 32 hex digits. */
  private static byte[] newToken(SecureRandom random) {
    byte[] raw = new byte[16];
    random.nextBytes(raw);
    return HexFormat.of().formatHex(raw).getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * Every row of the benchmark, in the order the report shows them, and the acquire-alone
   * operations.
   *
   * @param quorum how many masters make a majority
   */
  record Lineup(
      Contender floor,
      Contender plain,
      Contender defaults,
      Contender token,
      Contender tls,
      Contender redisson,
      Contender node,
      AcquireAlone alone,
      int quorum) {

    static final String FLOOR = "floor (hand-written)";
    static final String PLAIN = "plain RedLock";
    static final String DEFAULTS = "default RedLock";
    static final String TOKEN = "default RedLock + fencingToken()";
    static final String TLS = "default RedLock over TLS";

    /** Every row, measured or skipped. */
    List<Contender> all() {
      return List.of(floor, plain, defaults, token, tls, redisson, node);
    }

    /** The rows that are measured. */
    List<Contender> measured() {
      return all().stream().filter(Contender::runs).toList();
    }

    /** The operations of the latency section: acquire alone first, then every row's cycle. */
    List<Operation> latencyOperations() {
      List<Operation> ops = new ArrayList<>(alone.all());
      measured().forEach(c -> ops.add(c.latency()));
      return Collections.unmodifiableList(ops);
    }
  }

  /** Acquire alone, the release not timed: the floor's SET round, the plain and default RedLock. */
  record AcquireAlone(Operation floor, Operation plain, Operation defaults) {
    List<Operation> all() {
      return List.of(floor, plain, defaults);
    }
  }

  /**
   * The floor: {@link BaselineClient}s, one per measuring thread (its N sockets are its own),
   * connected on first use and kept for the run. Used by the thread that runs the benchmark, which
   * asks for each measuring thread's cycle before starting it.
   */
  private static final class Floor implements AutoCloseable, Cycle.PerThread {
    private final List<String> uris;
    private final int quorum;
    private final List<BaselineClient> clients = new ArrayList<>();
    private final SecureRandom random = new SecureRandom();

    Floor(List<String> uris, int quorum) {
      this.uris = requireNonNull(uris, "uris");
      this.quorum = quorum;
    }

    /** Thread {@code index}'s cycle: SET round, then EVALSHA round, on its own sockets. */
    @Override
    public Cycle forThread(int index) throws IOException {
      BaselineClient client = client(index);
      SecureRandom own = new SecureRandom();
      return key -> {
        byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
        byte[] token = newToken(own);
        int granted = client.setRound(keyBytes, token, Benchmark.TTL.toMillis());
        client.releaseRound(keyBytes, token);
        return granted >= quorum;
      };
    }

    /** The SET round alone, timed; the release after it is not. */
    long acquireOnly(String key, Operation op) throws IOException {
      BaselineClient client = client(0);
      long before = System.nanoTime();
      byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
      byte[] token = newToken(random);
      int granted = client.setRound(keyBytes, token, Benchmark.TTL.toMillis());
      long after = System.nanoTime();
      client.releaseRound(keyBytes, token);
      op.failedIf(granted < quorum);
      return after - before;
    }

    private BaselineClient client(int index) throws IOException {
      while (clients.size() <= index) {
        clients.add(BaselineClient.connect(uris, FLOOR_TIMEOUT));
      }
      return clients.get(index);
    }

    @Override
    public void close() {
      clients.forEach(BaselineClient::close);
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
  record Breakers(
      Operation healthy,
      Operation withBreakers,
      Operation withoutBreakers,
      long openedAfterOps,
      long openedAfterNanos,
      List<RedLockListener.CircuitState> duringMeasurement) {}

  /**
   * Hears circuit-breaker transitions: of one node ({@code watched}), recording them in order and
   * noting the first OPEN; of any other node (or of every node, when {@code watched} is null),
   * counting them, since healthy masters should have none. Thread-safe.
   */
  static final class BreakerWatch implements RedLockListener {
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
}
