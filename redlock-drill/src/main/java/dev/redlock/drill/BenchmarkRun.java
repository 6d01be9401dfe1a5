package dev.redlock.drill;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.drill.Benchmark.Config;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.drill.ThroughputRun.Throughput;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
 * Sections 1 to 3 of the benchmark (see {@link Benchmark}): makes the clients, measures latency
 * (here), throughput ({@link ThroughputRun}) and the circuit breakers (here); {@link
 * BenchmarkReport} prints the header and the rounds, {@link BenchmarkSummary} the summary. Not
 * thread-safe: one thread runs it.
 */
final class BenchmarkRun {

  /** Connect and read timeout of the baseline's sockets. */
  private static final Duration BASELINE_TIMEOUT = Duration.ofSeconds(2);

  /** How long the breaker section's warm-up may take to see the black hole's breaker open. */
  static final Duration BREAKER_OPEN_LIMIT = Duration.ofSeconds(10);

  private final RedLock plain;
  private final RedLock defaults;
  private final BaselineClient baseline;
  private final int quorum;
  private final BenchmarkReport report;
  private final SecureRandom random = new SecureRandom();
  private long sequence;

  private BenchmarkRun(
      RedLock plain,
      RedLock defaults,
      BaselineClient baseline,
      int quorum,
      BenchmarkReport report) {
    this.plain = plain;
    this.defaults = defaults;
    this.baseline = baseline;
    this.quorum = quorum;
    this.report = report;
  }

  /**
   * Runs sections 1 to 3 on {@code masters} and prints them, with the header first and the summary
   * last; closes every client it made.
   *
   * @param admit whether to admit the masters as a brand-new cluster first
   * @throws IOException if the baseline cannot talk to a master, or the black hole cannot listen
   * @throws CannotRun if the default RedLock gets no lease (masters not admitted, say)
   */
  static void measure(
      Config config,
      Masters masters,
      boolean admit,
      BenchmarkReport report,
      BenchmarkSummary summary)
      throws IOException, InterruptedException, CannotRun {
    List<String> uris = masters.uris();
    BreakerWatch healthyWatch = new BreakerWatch(null);
    try (RedLock plain =
            RedLock.builder()
                .nodes(uris)
                .nodeTimeout(Benchmark.NODE_TIMEOUT)
                .fencing(false)
                .restartGuard(false)
                .listener(healthyWatch)
                .build();
        RedLock defaults =
            RedLock.builder()
                .nodes(uris)
                .nodeTimeout(Benchmark.NODE_TIMEOUT)
                .listener(healthyWatch)
                .build();
        BaselineClient baseline = BaselineClient.connect(uris, BASELINE_TIMEOUT);
        BlackHole hole = BlackHole.start()) {
      String admission =
          admit ? admit(defaults) : "not admitted (--" + Harness.ADMIT_FRESH_NODES + ")";
      BenchmarkChecks.defaultsGrant(defaults, report);
      report.header(config, masters, admission, hole);
      BenchmarkRun run = new BenchmarkRun(plain, defaults, baseline, masters.quorum(), report);

      Latency latency = run.latency(config);
      List<Throughput> throughput = ThroughputRun.measure(config, defaults, plain, report);

      List<String> holeUris = new ArrayList<>(uris);
      holeUris.set(holeUris.size() - 1, hole.uri());
      BreakerWatch holeWatch = new BreakerWatch(hole.node());
      try (RedLock withBreakers =
              RedLock.builder()
                  .nodes(holeUris)
                  .nodeTimeout(Benchmark.NODE_TIMEOUT)
                  .listener(holeWatch)
                  .build();
          RedLock withoutBreakers =
              RedLock.builder()
                  .nodes(holeUris)
                  .nodeTimeout(Benchmark.NODE_TIMEOUT)
                  .circuitBreakers(false)
                  .build()) {
        Breakers breakers = run.breakers(config, withBreakers, withoutBreakers, holeWatch, hole);
        summary.print(uris.size(), latency, throughput, breakers, healthyWatch, hole);
      }
    }
  }

  /** Admits the masters as a brand-new cluster; returns a line for the header. */
  static String admit(RedLock redlock) {
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

  private Latency latency(Config config) throws IOException {
    Latency ops =
        new Latency(
            new Operation("plain RedLock tryAcquire", op -> acquireOnly(plain, op)),
            new Operation("baseline SET NX PX round", this::baselineAcquire),
            new Operation("default RedLock tryAcquire", op -> acquireOnly(defaults, op)),
            new Operation("plain RedLock tryAcquire + close", op -> cycle(plain, op)),
            new Operation("baseline SET round + EVALSHA round", this::baselineCycle),
            new Operation("default RedLock tryAcquire + close", op -> cycle(defaults, op)));
    report.latencyWarmingUp(config.warmup());
    Operation.warmUp(ops.all(), config.warmup());
    report.latencyMeasuring(config.rounds(), blockSize(config.iterations(), config.rounds()));
    Operation.interleave(
        ops.all(),
        config.iterations(),
        config.rounds(),
        (round, rounds) -> report.latencyRound(ops, round, rounds));
    return ops;
  }

  private Breakers breakers(
      Config config,
      RedLock withBreakers,
      RedLock withoutBreakers,
      BreakerWatch watch,
      BlackHole hole)
      throws IOException {
    Operation healthy = new Operation("all masters healthy", op -> cycle(defaults, op));
    Operation on = new Operation("black hole, breakers on (OPEN)", op -> cycle(withBreakers, op));
    Operation off = new Operation("black hole, breakers off", op -> cycle(withoutBreakers, op));
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
    int granted = baseline.setRound(keyBytes, token, Benchmark.TTL.toMillis());
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
    int granted = baseline.setRound(keyBytes, token, Benchmark.TTL.toMillis());
    baseline.releaseRound(keyBytes, token);
    long elapsed = System.nanoTime() - before;
    op.failedIf(granted < quorum);
    return elapsed;
  }

  private static Optional<Lease> tryAcquire(RedLock redlock, String key) {
    try {
      return redlock.tryAcquire(key, Benchmark.TTL);
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

  /** The latency section's operations. */
  record Latency(
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
