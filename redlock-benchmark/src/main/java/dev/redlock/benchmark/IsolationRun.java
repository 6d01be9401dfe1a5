package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.benchmark.Benchmark.Config;
import dev.redlock.benchmark.BreakerLog.Transition;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.drill.Masters;
import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.drill.Samples;
import dev.redlock.testkit.HostileMaster.Mode;
import dev.redlock.testkit.HostileMaster.Stats;
import dev.redlock.testkit.HostileMasterProcess;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Section 4 of the benchmark, "isolation": whether one hostile master stalls the others (issue 15).
 *
 * <p>First a healthy block: the default RedLock on every master (admitted as a brand-new cluster
 * when the run admits), warmed up, then up to {@code --isolation-iterations} cycles, each a {@code
 * tryAcquire} of a new key (timed) followed by the release of the lease (not timed). Then one case
 * per {@link #MODES mode}: the last master is replaced by a {@link HostileMasterProcess}, a child
 * JVM (a flooder in this JVM would take the CPU and heap being measured), which answers the
 * handshake and misbehaves from the first lock command on; a new default RedLock on those masters
 * runs {@value #CASE_WARMUP} warm-up cycles (at most {@link #WARMUP_LIMIT}), then the same cycles
 * as the healthy block, for at most {@link #CASE_LIMIT}: a case that is slow stops there, with
 * fewer samples. The heap in use (MemoryMXBean, right after {@code System.gc()}) is read before
 * each block's RedLock is built and at checkpoints while it is open: after each quarter of the
 * cycles, at least once a {@link #CHECKPOINT_INTERVAL}, after the last cycle. The growth is the
 * largest checkpoint's over the first reading: a client that buffers a hostile master's bytes holds
 * them only until it drops the connection, so a single reading at the end may fall between two such
 * bursts. Checkpoints run between cycles and are not timed, nor are the few cycles right after each
 * (see {@link #settle}).
 *
 * <p>The figures per block: the leases granted out of the attempts, tryAcquire p50 / p99 / max, the
 * heap growth, the votes the healthy masters failed (FAILED or TIMED_OUT outcomes of the measured
 * acquire rounds: a healthy master that could not answer because of the hostile one), the healthy
 * masters' circuit-breaker transitions, and what the hostile master did (connections, bytes sent).
 * {@link BenchmarkChecks#isolationGoals} holds them against the goals. Not thread-safe: one thread
 * runs it.
 */
final class IsolationRun {

  /** The cases, in order: the last master replaced by a hostile master in each of these modes. */
  static final List<Mode> MODES =
      List.of(Mode.FLOOD, Mode.GARBAGE, Mode.SLOWLORIS, Mode.OVERSIZE, Mode.RESET);

  /** At most this many warm-up cycles per case (fewer if {@code --warmup} says fewer). */
  static final int CASE_WARMUP = 50;

  /** How long a case's warm-up may take at most. */
  static final Duration WARMUP_LIMIT = Duration.ofSeconds(1);

  /** How long a case's measured cycles may take at most: a stalled client stops here. */
  static final Duration CASE_LIMIT = Duration.ofSeconds(5);

  /** At most this many warm-up cycles of the healthy block, which warms the JIT for all. */
  static final int HEALTHY_WARMUP = 1_000;

  /** How long the healthy block's warm-up may take at most. */
  static final Duration HEALTHY_WARMUP_LIMIT = Duration.ofSeconds(10);

  /** The healthy block's warm-up ends after this many cycles in a row without a failed vote. */
  static final int CLEAN_CYCLES = 100;

  /** The longest time between two heap checkpoints while a block's cycles run. */
  static final Duration CHECKPOINT_INTERVAL = Duration.ofSeconds(1);

  /** How long admitting the masters may be tried again. */
  static final Duration ADMIT_LIMIT = Duration.ofSeconds(5);

  private final Config config;
  private final IsolationReport report;
  private long keys;

  private IsolationRun(Config config, IsolationReport report) {
    this.config = config;
    this.report = report;
  }

  /**
   * Measures and prints the section: the healthy block, then one case per mode.
   *
   * @param admit whether to admit the masters as a brand-new cluster first
   * @throws CannotRun if the default RedLock gets no lease on the healthy masters
   */
  static Isolation measure(Config config, Masters masters, boolean admit, IsolationReport report)
      throws CannotRun {
    requireNonNull(config, "config");
    requireNonNull(masters, "masters");
    requireNonNull(report, "report");
    IsolationRun run = new IsolationRun(config, report);
    List<String> uris = masters.uris();
    long began = System.nanoTime();
    report.start(config, masters);
    Block healthy = run.healthy(uris, admit);
    report.block(healthy);
    List<Block> cases = new ArrayList<>();
    for (Mode mode : MODES) {
      Block block = run.hostile(uris, mode);
      report.block(block);
      cases.add(block);
    }
    Duration took = Duration.ofNanos(System.nanoTime() - began);
    report.done(took);
    return new Isolation(uris.size(), healthy, cases, took);
  }

  /** The healthy block, on every master. */
  private Block healthy(List<String> uris, boolean admit) throws CannotRun {
    long heapBefore = heapAfterGc();
    Watch watch = new Watch(null);
    try (RedLock redlock = newRedLock(uris, watch)) {
      String admission = admit ? admitEvery(redlock) : "not admitted (--admit-fresh-nodes)";
      warmUpUntilClean(redlock, watch);
      // After the warm-up, so that a slow first connection on a busy machine does not stop the run.
      BenchmarkChecks.defaultsGrant(redlock, report::restartedHint);
      watch.measuring();
      Cycles cycles = cycles(redlock, "healthy", Duration.ofDays(1), heapBefore);
      return new Block(null, admission, cycles, watch, Optional.empty(), null, null);
    }
  }

  /** One case: the last master replaced by a hostile master in {@code mode}. */
  private Block hostile(List<String> uris, Mode mode) {
    HostileMasterProcess child;
    try {
      child = HostileMasterProcess.start(mode);
    } catch (RuntimeException e) {
      return Block.failed(mode, "the hostile master did not start: " + e.getMessage());
    }
    try (child) {
      List<String> caseUris = new ArrayList<>(uris);
      caseUris.set(caseUris.size() - 1, child.uri());
      long heapBefore = heapAfterGc();
      Watch watch = new Watch(child.node());
      try (RedLock redlock = newRedLock(caseUris, watch)) {
        warmUp(redlock, Math.min(config.warmup(), CASE_WARMUP), WARMUP_LIMIT);
        watch.measuring();
        Cycles cycles = cycles(redlock, mode.flag(), CASE_LIMIT, heapBefore);
        Optional<Stats> stats;
        String statsMissing = null;
        try {
          stats = Optional.of(child.stats());
        } catch (IllegalStateException e) {
          stats = Optional.empty();
          statsMissing = e.getMessage();
        }
        return new Block(
            mode,
            child.node() + " (pid " + child.pid() + ")",
            cycles,
            watch,
            stats,
            statsMissing,
            null);
      }
    } catch (RuntimeException e) {
      // Building the RedLock, say: the case is reported as not measured, the others still run.
      return Block.failed(mode, e.toString());
    }
  }

  /**
   * Admits the masters as a brand-new cluster, again until every one answered (at most {@link
   * #ADMIT_LIMIT}): on a busy machine a first connection can miss the node timeout, and a master
   * left out would not vote in any case, which would blame the hostile master for it.
   */
  private static String admitEvery(RedLock redlock) {
    long giveUp = System.nanoTime() + ADMIT_LIMIT.toNanos();
    int tries = 0;
    List<NodeOutcome> outcomes;
    do {
      if (tries++ > 0) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
      }
      outcomes = redlock.admitFreshNodes();
    } while (outcomes.stream()
            .anyMatch(o -> o.status() != Status.GRANTED && o.status() != Status.TAKEN)
        && System.nanoTime() - giveUp < 0);
    return BenchmarkRun.admission(outcomes) + (tries > 1 ? " (" + tries + " calls)" : "");
  }

  private RedLock newRedLock(List<String> uris, Watch watch) {
    return RedLock.builder().nodes(uris).nodeTimeout(config.nodeTimeout()).listener(watch).build();
  }

  private void warmUp(RedLock redlock, int count, Duration limit) {
    long giveUp = System.nanoTime() + limit.toNanos();
    for (int i = 0; i < count && System.nanoTime() - giveUp < 0; i++) {
      cycle(redlock, "warm", new Cycles(0));
    }
  }

  /**
   * The healthy block's warm-up: at least {@code min(--warmup, }{@value #HEALTHY_WARMUP}{@code )}
   * cycles, then on until {@value #CLEAN_CYCLES} in a row had no failed vote, at most {@link
   * #HEALTHY_WARMUP_LIMIT}. On a cold JVM a first connection can miss the node timeout, and the
   * failures open that master's breaker for a while: the baseline would be four masters.
   */
  private void warmUpUntilClean(RedLock redlock, Watch watch) {
    long giveUp = System.nanoTime() + HEALTHY_WARMUP_LIMIT.toNanos();
    int least = Math.min(config.warmup(), HEALTHY_WARMUP);
    int done = 0;
    int clean = 0;
    while ((done < least || clean < CLEAN_CYCLES) && System.nanoTime() - giveUp < 0) {
      long failed = watch.failedVotes();
      cycle(redlock, "warm", new Cycles(0));
      done++;
      clean = watch.failedVotes() == failed ? clean + 1 : 0;
    }
  }

  /**
   * Up to {@code --isolation-iterations} cycles, stopping after {@code limit}, with a heap
   * checkpoint ({@code System.gc()}, between two cycles, not timed) after each quarter of them, at
   * least once a {@link #CHECKPOINT_INTERVAL}, and after the last.
   */
  private Cycles cycles(RedLock redlock, String tag, Duration limit, long heapBefore) {
    Cycles cycles = new Cycles(heapBefore);
    int iterations = config.isolationIterations();
    int quarter = Math.max(1, (iterations + 3) / 4);
    long began = System.nanoTime();
    long giveUp = began + limit.toNanos();
    long checkAt = began + CHECKPOINT_INTERVAL.toNanos();
    long checking = 0;
    boolean checked = false;
    while (cycles.attempts < iterations) {
      if (System.nanoTime() - giveUp >= 0) {
        cycles.cutShort = true;
        break;
      }
      cycle(redlock, tag, cycles);
      checked = cycles.attempts % quarter == 0 || System.nanoTime() - checkAt >= 0;
      if (checked) {
        long at = System.nanoTime();
        cycles.checkpoint(heapAfterGc());
        settle(redlock, tag);
        long after = System.nanoTime();
        checking += after - at;
        checkAt = after + CHECKPOINT_INTERVAL.toNanos();
      }
    }
    cycles.nanos = System.nanoTime() - began - checking;
    if (!checked) {
      cycles.checkpoint(heapAfterGc());
    }
    return cycles;
  }

  /**
   * A few untimed cycles after a checkpoint's full collection: the cycles right after one are
   * slower for everyone (caches, the collector's own work), and with four or five checkpoints per
   * thousand cycles they alone would set the p99 the goal compares, of the healthy block as of a
   * hostile one.
   */
  private void settle(RedLock redlock, String tag) {
    for (int i = 0; i < SETTLE_CYCLES; i++) {
      try {
        redlock
            .tryAcquire("bench:iso:" + tag + ":settle:" + keys++, Benchmark.TTL)
            .ifPresent(Lease::close);
      } catch (RuntimeException e) {
        // untimed and uncounted: what the cycles measure is said by the timed ones
      }
    }
  }

  /** Untimed cycles after each checkpoint; see {@link #settle}. */
  private static final int SETTLE_CYCLES = 5;

  /** One tryAcquire of a new key (timed), then the release of its lease (not timed). */
  private void cycle(RedLock redlock, String tag, Cycles cycles) {
    String key = "bench:iso:" + tag + ":" + keys++;
    Optional<Lease> lease;
    long before = System.nanoTime();
    try {
      lease = redlock.tryAcquire(key, Benchmark.TTL);
    } catch (QuorumUnavailableException e) {
      cycles.samples.add(System.nanoTime() - before);
      cycles.attempts++;
      cycles.unavailable++;
      return;
    }
    cycles.samples.add(System.nanoTime() - before);
    cycles.attempts++;
    if (lease.isEmpty()) {
      cycles.refused++;
      return;
    }
    cycles.granted++;
    try {
      lease.get().close();
    } catch (RuntimeException e) {
      cycles.releaseFailures++; // a majority did not confirm; the keys expire with the TTL
    }
  }

  /** The heap in use right after a full collection, in bytes. */
  private static long heapAfterGc() {
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  /** One block's cycles and heap checkpoints. Filled by the measuring thread only. */
  static final class Cycles {
    final Samples samples = new Samples();
    final long heapBefore;
    int attempts;
    int granted;
    int unavailable;
    int refused;
    int releaseFailures;
    long nanos; // the cycles' time, the checkpoints' left out
    boolean cutShort;
    int checkpoints;
    long heapPeak = Long.MIN_VALUE;
    long heapEnd;

    Cycles(long heapBefore) {
      this.heapBefore = heapBefore;
    }

    void checkpoint(long heapUsed) {
      checkpoints++;
      heapPeak = Math.max(heapPeak, heapUsed);
      heapEnd = heapUsed;
    }

    /** The largest heap in use at a checkpoint, minus before the RedLock; bytes. */
    long heapGrowth() {
      return checkpoints == 0 ? 0 : heapPeak - heapBefore;
    }

    /** The heap in use at the last checkpoint, after the last cycle, minus before; bytes. */
    long heapGrowthAtEnd() {
      return checkpoints == 0 ? 0 : heapEnd - heapBefore;
    }
  }

  /**
   * Hears the acquire rounds and breaker transitions of one block's RedLock: the healthy masters'
   * failed votes (FAILED or TIMED_OUT outcomes of acquire rounds; a master skipped because its
   * breaker is open fails its vote too) and every breaker transition. The hostile master ({@code
   * hostile}, null in the healthy block) has no votes counted. What the report shows is counted
   * from {@link #measuring()} on. Thread-safe.
   */
  static final class Watch implements RedLockListener {
    private final String hostile;
    private final AtomicLong failedVotes = new AtomicLong();
    private final AtomicLong roundsWithFailedVotes = new AtomicLong();
    private final BreakerLog breakers = new BreakerLog();
    private volatile long measuringSince = Long.MAX_VALUE;
    private volatile long votesMark;
    private volatile long roundsMark;

    Watch(String hostile) {
      this.hostile = hostile;
    }

    /** From now on, the figures count. */
    void measuring() {
      votesMark = failedVotes.get();
      roundsMark = roundsWithFailedVotes.get();
      measuringSince = System.nanoTime();
    }

    @Override
    public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
      count(outcomes);
    }

    @Override
    public void denied(
        String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
      count(outcomes);
    }

    private void count(List<NodeOutcome> outcomes) {
      long failed =
          outcomes.stream()
              .filter(o -> !o.node().equals(hostile))
              .filter(o -> o.status() == Status.FAILED || o.status() == Status.TIMED_OUT)
              .count();
      if (failed > 0) {
        failedVotes.addAndGet(failed);
        roundsWithFailedVotes.incrementAndGet();
      }
    }

    @Override
    public void circuitChanged(String node, CircuitState state) {
      breakers.circuitChanged(node, state);
    }

    /** The healthy masters' failed votes since {@link #measuring()}, or all before it. */
    long failedVotes() {
      long all = failedVotes.get();
      return measuringSince == Long.MAX_VALUE ? all : all - votesMark;
    }

    /** The acquire rounds with a healthy master's failed vote since {@link #measuring()}. */
    long roundsWithFailedVotes() {
      return roundsWithFailedVotes.get() - roundsMark;
    }

    /** The healthy masters' breaker transitions since {@link #measuring()}, in order. */
    List<Transition> healthyBreakers() {
      return since().stream().filter(t -> !t.node().equals(hostile)).toList();
    }

    /** How many times a healthy master's breaker went OPEN since {@link #measuring()}. */
    long healthyOpened() {
      return healthyBreakers().stream().filter(t -> t.state() == CircuitState.OPEN).count();
    }

    /** How many times the hostile master's breaker went OPEN since {@link #measuring()}. */
    long hostileOpened() {
      return since().stream()
          .filter(t -> t.node().equals(hostile) && t.state() == CircuitState.OPEN)
          .count();
    }

    /** When {@link #measuring()} was called, on {@link System#nanoTime()}. */
    long measuringSince() {
      return measuringSince;
    }

    private List<Transition> since() {
      return breakers.since(measuringSince);
    }
  }

  /**
   * One block of the section: the healthy one, or one case.
   *
   * @param mode the hostile master's mode; null for the healthy block
   * @param about the healthy block: how the masters were admitted; a case: the hostile master
   * @param cycles what the cycles did, with the heap checkpoints; null if not measured
   * @param watch what the RedLock's listener heard; null if not measured
   * @param hostile what the hostile master did, if it said
   * @param hostileSilent why the hostile master did not say, or null
   * @param failure why the block was not measured, or null
   */
  record Block(
      Mode mode,
      String about,
      Cycles cycles,
      Watch watch,
      Optional<Stats> hostile,
      String hostileSilent,
      String failure) {

    Block {
      requireNonNull(hostile, "hostile");
    }

    static Block failed(Mode mode, String why) {
      return new Block(mode, "", null, null, Optional.empty(), null, requireNonNull(why));
    }

    /** Whether the block was measured. */
    boolean measured() {
      return failure == null;
    }

    /** The block's name in the report: {@code "healthy"} or the mode's. */
    String name() {
      return mode == null ? "healthy" : mode.flag();
    }

    /** tryAcquire's figures, in nanoseconds. */
    Summary summary() {
      return cycles.samples.summary();
    }

    /** The heap growth the goal judges: the largest at a checkpoint, bytes. */
    long heapGrowth() {
      return cycles.heapGrowth();
    }
  }

  /**
   * The section's figures.
   *
   * @param masters how many masters, the hostile one included in each case
   * @param healthy the healthy block
   * @param cases one block per mode, in the order of {@link #MODES}
   * @param took how long the section took, hostile masters' start-up included
   */
  record Isolation(int masters, Block healthy, List<Block> cases, Duration took) {
    Isolation {
      requireNonNull(healthy, "healthy");
      cases = List.copyOf(cases);
      requireNonNull(took, "took");
    }
  }
}
