package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.drill.Flags.UsageException;
import dev.redlock.drill.Percentiles.Summary;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The contention drill, the README's first command: several workers, each with its own {@link
 * RedLock} as separate processes would have, fight over one resource for a while; then the drill
 * checks that the lock did its job.
 *
 * <pre>
 * mvn -q -o -pl redlock-drill package -Pdrill
 * mvn -q -o -pl redlock-drill package -Pdrill -Ddrill.args="--workers 16 --duration 30"
 * mvn -q -o -pl redlock-drill package -Pdrill -Ddrill.args="--nodes redis://a:6379,redis://b:6379,redis://c:6379"
 * </pre>
 *
 * <h2>What a worker does</h2>
 *
 * Until the time is up: {@code tryAcquire("drill:inventory", ttl)}; if that fails (another worker
 * holds the lock, or the votes were split), back off 1 to 5 ms at random and try again. Holding a
 * lease, it reads the inventory counter, yields the processor (to widen the window in which an
 * overlapping holder would interleave), checks {@link Lease#isValid()}, writes the counter minus
 * one, and releases. It records the lease's validity window: from the moment {@code tryAcquire}
 * returned to the earlier of the start of the release and the lease's deadline; and the lease's
 * fencing token with the moment it was acquired.
 *
 * <h2>The library's defaults it runs with</h2>
 *
 * Each worker's RedLock has the library's defaults: fencing tokens, the restart guard and circuit
 * breakers. The restart guard does not count the vote of a master whose dataset is younger than the
 * maximum lease time (one minute), and a brand-new master looks just like one that restarted
 * without its data. So with the local masters it starts itself the drill admits them explicitly
 * ({@link RedLock#admitFreshNodes()}, on each worker's RedLock); masters given by {@code --nodes}
 * are admitted only with {@code --admit-fresh-nodes}, an operator's decision the drill cannot make.
 * If masters answer {@code RESTARTED}, the report says so and points to that flag.
 *
 * <h2>What passes</h2>
 *
 * <ul>
 *   <li><b>No lost update.</b> The counter is one field shared by the workers in this JVM. It is
 *       {@code volatile}, so each read sees the latest write, but the decrement is a separate read
 *       and write: only the lock keeps two workers from both reading 7 and both writing 6. The
 *       final value must equal the initial value minus the number of decrements the workers made.
 *   <li><b>No overlap.</b> Sorted by start, no window may begin before an earlier one has ended.
 *       All windows are read on one monotonic clock, {@link System#nanoTime()}, the clock the
 *       library measures validity with.
 *   <li><b>Rising fencing tokens.</b> Per resource, with the leases sorted by the moment {@code
 *       tryAcquire} returned them (across all workers), each token must be greater than the one
 *       before it.
 *   <li>At least one lease was granted and every worker stopped cleanly.
 * </ul>
 *
 * The last line is {@code DRILL PASSED} (exit code 0) or {@code DRILL FAILED: <reasons>} (exit code
 * 1); a bad command line exits with 2. The counter lives in this JVM rather than in Redis so that
 * the check depends on nothing but the lock.
 */
public final class Drill {

  /** The resource every worker locks. */
  static final String RESOURCE = "drill:inventory";

  static final int DEFAULT_WORKERS = 8;
  static final Duration DEFAULT_DURATION = Duration.ofSeconds(10);

  /** Far more than a default run can sell (about 2,000 decrements a second on a laptop). */
  static final long DEFAULT_INVENTORY = 1_000_000;

  static final Duration DEFAULT_TTL = Duration.ofSeconds(2);
  static final Duration DEFAULT_NODE_TIMEOUT = RedLock.DEFAULT_NODE_TIMEOUT;

  /** A worker waiting longer than this has "given up", as {@code acquire(.., maxWait)} would. */
  static final Duration MAX_WAIT = Duration.ofSeconds(5);

  private static final long BACKOFF_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final long BACKOFF_MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  /** How long past the deadline the workers get to stop before the drill fails. */
  private static final Duration STOP_GRACE = Duration.ofSeconds(10);

  /** How often the admission is retried for masters that did not answer it, 100 ms apart. */
  private static final int ADMIT_RETRIES = 5;

  private static final String USAGE_FORMAT =
      """
      Usage: Drill [options]

      Workers, each with its own RedLock, fight over one lock and decrement a shared counter
      under it. Passes if no update was lost, no two leases overlapped and the fencing tokens rose
      in acquisition order.

      Options:
        --nodes URI,URI,...   Redis masters to use, e.g. redis://10.0.0.1:6379,redis://10.0.0.2:6379
                              (default: start %d local redis-server processes for the run, which
                              are admitted as a brand-new cluster)
        --admit-fresh-nodes   call admitFreshNodes() on the --nodes masters first: only for a
                              brand-new cluster, or when no master lost a lock it held within the
                              last %d s (the restart guard otherwise keeps young masters from voting)
        --workers K           workers, each with its own RedLock (default %d)
        --duration SECONDS    how long to run; fractions allowed (default %d)
        --inventory N         initial value of the counter; the run ends early if it sells out
                              (default %,d)
        --ttl MS              lease time to live in milliseconds (default %d)
        --node-timeout MS     per-master timeout in milliseconds (default %d)
        -h, --help            show this help

      Exit code: 0 DRILL PASSED, 1 DRILL FAILED, 2 bad command line.
      """;

  private static final String USAGE =
      String.format(
          Locale.ROOT,
          USAGE_FORMAT,
          Masters.LOCAL_COUNT,
          RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds(),
          DEFAULT_WORKERS,
          DEFAULT_DURATION.toSeconds(),
          DEFAULT_INVENTORY,
          DEFAULT_TTL.toMillis(),
          DEFAULT_NODE_TIMEOUT.toMillis());

  private static final Harness HARNESS =
      new Harness(
          "drill",
          "DRILL FAILED: ",
          USAGE,
          Set.of("nodes", "workers", "duration", "inventory", "ttl", "node-timeout"),
          Set.of(Harness.ADMIT_FRESH_NODES));

  private Drill() {}

  /**
   * Runs the drill with the command-line options shown by {@code --help}, prints the report to
   * standard output and exits: 0 if the drill passed, 1 if it failed, 2 for a bad command line.
   *
   * @param args the command-line options
   */
  public static void main(String[] args) {
    Harness.exit(run(args, System.out));
  }

  /** Parses {@code args}, runs the drill, prints to {@code out} and returns the exit code. */
  static int run(String[] args, PrintStream out) {
    return HARNESS.run(
        args,
        out,
        Config::from,
        config -> run(config, out).passed() ? Harness.EXIT_OK : Harness.EXIT_FAILED);
  }

  /**
   * Runs the drill: starts local masters unless {@code config} names some, admits the masters when
   * they are the local ones or {@code config} says so, runs the workers, prints the report to
   * {@code out} (ending with the verdict) and shuts everything down.
   *
   * @throws IllegalStateException if local masters cannot be started
   */
  static Result run(Config config, PrintStream out) {
    requireNonNull(config, "config");
    requireNonNull(out, "out");
    try (Masters masters = Masters.open(config.nodes(), out)) {
      if (!masters.local()) {
        return drill(config, masters.uris(), masters.origin(), config.admitFreshNodes(), out);
      }
      String origin = masters.origin() + ", started in " + masters.startTime().toMillis() + " ms";
      return drill(config, masters.uris(), origin, true, out);
    }
  }

  private static Result drill(
      Config config, List<String> uris, String origin, boolean admit, PrintStream out) {
    Watch watch = new Watch();
    List<RedLock> clients = new ArrayList<>();
    try {
      for (int i = 0; i < config.workers(); i++) {
        clients.add(
            RedLock.builder()
                .nodes(uris)
                .nodeTimeout(config.nodeTimeout())
                .listener(watch)
                .build());
      }
      Admission admission = admit ? admit(clients) : null;
      printHeader(config, uris, origin, admission, out);
      Result result = runWorkers(config, clients, watch, out);
      printResult(result, out);
      return result;
    } finally {
      for (RedLock client : clients) {
        client.close();
      }
    }
  }

  /**
   * Calls {@link RedLock#admitFreshNodes()} on every worker's RedLock, then retries a few times on
   * the first while some master has answered none of the calls (a connection still being opened).
   */
  private static Admission admit(List<RedLock> clients) {
    Map<String, Status> best = new LinkedHashMap<>();
    Map<String, String> details = new LinkedHashMap<>();
    for (RedLock client : clients) {
      keepBest(client.admitFreshNodes(), best, details);
    }
    for (int retry = 0; retry < ADMIT_RETRIES && !Admission.allAnswered(best); retry++) {
      try {
        TimeUnit.MILLISECONDS.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      keepBest(clients.get(0).admitFreshNodes(), best, details);
    }
    return new Admission(clients.size(), best, details);
  }

  /** Keeps, per master, the best answer so far: GRANTED (admitted now), TAKEN, or a failure. */
  private static void keepBest(
      List<NodeOutcome> outcomes, Map<String, Status> best, Map<String, String> details) {
    for (NodeOutcome outcome : outcomes) {
      Status previous = best.get(outcome.node());
      Status status = outcome.status();
      if (previous == null
          || status == Status.GRANTED
          || (status == Status.TAKEN && previous != Status.GRANTED)) {
        best.put(outcome.node(), status);
        details.put(outcome.node(), outcome.detail());
      }
    }
  }

  private static Result runWorkers(
      Config config, List<RedLock> clients, Watch watch, PrintStream out) {
    long start = System.nanoTime();
    long deadline = start + config.duration().toNanos();
    Counter counter = new Counter(config.inventory());
    CountDownLatch finished = new CountDownLatch(clients.size());
    List<Worker> workers = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < clients.size(); i++) {
      Worker worker = new Worker(config, clients.get(i), counter, start, deadline, finished);
      workers.add(worker);
      Thread thread = new Thread(worker, "drill-worker-" + i);
      thread.setDaemon(true);
      threads.add(thread);
    }
    out.println();
    out.printf("Running %d workers for %s...%n", workers.size(), seconds(config.duration()));
    threads.forEach(Thread::start);

    // A progress line about ten times per run, at least a second apart.
    long interval = Math.max(TimeUnit.SECONDS.toNanos(1), config.duration().toNanos() / 10);
    long giveUp = deadline + STOP_GRACE.toNanos();
    boolean allStopped = false;
    try {
      long next = start + interval;
      while (true) {
        long now = System.nanoTime();
        if (now - giveUp >= 0) {
          break;
        }
        long until = next - giveUp < 0 ? next : giveUp;
        if (finished.await(until - now, TimeUnit.NANOSECONDS)) {
          allStopped = true;
          break;
        }
        if (System.nanoTime() - next >= 0) {
          if (next - deadline < 0) {
            long left = counter.value;
            out.printf(
                Locale.ROOT,
                "  %6s  %,9d sold   inventory %,d%n",
                seconds(Duration.ofNanos(next - start)),
                config.inventory() - left,
                left);
          }
          next += interval;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (!allStopped) {
      threads.forEach(Thread::interrupt);
    }
    List<String> failures = new ArrayList<>();
    for (int i = 0; i < threads.size(); i++) {
      if (!join(threads.get(i), Duration.ofSeconds(2))) {
        failures.add("worker " + i + " did not stop within " + STOP_GRACE.toSeconds() + " s");
      }
    }
    long elapsed = System.nanoTime() - start;
    return Result.of(config, workers, threads, counter.value, elapsed, watch, failures);
  }

  private static boolean join(Thread thread, Duration timeout) {
    try {
      thread.join(timeout.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !thread.isAlive();
  }

  /**
   * Counts windows that begin before an earlier-beginning window has ended: for windows sorted by
   * start, every one whose start is before the latest end seen so far. A window is a pair {@code
   * [from, to]} of readings of one monotonic clock.
   */
  static long countOverlaps(List<Window> windows) {
    return handovers(windows).overlaps();
  }

  /** Sorts the windows and measures every hand-over from one holder to the next. */
  static Handovers handovers(List<Window> windows) {
    List<Window> sorted = new ArrayList<>(windows);
    sorted.sort(Comparator.comparingLong(Window::from));
    long overlaps = 0;
    long closest = Long.MAX_VALUE;
    long latestEnd = Long.MIN_VALUE;
    for (int i = 0; i < sorted.size(); i++) {
      Window window = sorted.get(i);
      if (i > 0) {
        long gap = window.from() - latestEnd;
        closest = Math.min(closest, gap);
        if (gap < 0) {
          overlaps++;
        }
      }
      latestEnd = Math.max(latestEnd, window.to());
    }
    return new Handovers(overlaps, sorted.size() < 2 ? 0 : closest);
  }

  /**
   * Checks that fencing tokens rise in acquisition order: per resource, with the grants sorted by
   * the moment they were acquired, each token must be greater than the one before it.
   */
  static FencingOrder fencingOrder(List<Grant> grants) {
    Map<String, List<Grant>> byResource = new TreeMap<>();
    for (Grant grant : grants) {
      byResource.computeIfAbsent(grant.resource(), r -> new ArrayList<>()).add(grant);
    }
    long notIncreasing = 0;
    Grant firstBefore = null;
    Grant firstAfter = null;
    for (List<Grant> leases : byResource.values()) {
      leases.sort(Comparator.comparingLong(Grant::acquiredAt));
      for (int i = 1; i < leases.size(); i++) {
        Grant before = leases.get(i - 1);
        Grant after = leases.get(i);
        if (after.token() <= before.token()) {
          notIncreasing++;
          if (firstAfter == null || after.acquiredAt() < firstAfter.acquiredAt()) {
            firstBefore = before;
            firstAfter = after;
          }
        }
      }
    }
    return new FencingOrder(
        grants.size(),
        notIncreasing,
        Optional.ofNullable(firstBefore),
        Optional.ofNullable(firstAfter));
  }

  // ---- report ----

  private static void printHeader(
      Config config, List<String> uris, String origin, Admission admission, PrintStream out) {
    int quorum = uris.size() / 2 + 1;
    Rows rows = new Rows(out, 20);
    out.println();
    out.println("RedLock drill");
    rows.row("masters", uris.size() + " (" + origin + "), quorum " + quorum);
    for (String uri : uris) {
      rows.row("", Masters.redact(uri));
    }
    rows.row("workers", config.workers() + ", each with its own RedLock (as separate processes)");
    rows.row("duration", seconds(config.duration()));
    rows.row(
        "lock",
        "'"
            + RESOURCE
            + "', ttl "
            + config.ttl().toMillis()
            + " ms, node timeout "
            + config.nodeTimeout().toMillis()
            + " ms");
    rows.row("worker loop", "tryAcquire; if refused, back off 1-5 ms and retry;");
    rows.row("", "holding the lease: read counter, yield, check validity, write counter - 1;");
    rows.row("", "release");
    rows.row("counter", String.format(Locale.ROOT, "%,d to start with", config.inventory()));
    rows.row("", "a volatile field in this JVM: only the lock orders its read-then-write");
    rows.row("RedLock config", "the library's defaults:");
    rows.row(
        "",
        "fencing tokens, restart guard (maxLeaseTime "
            + RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds()
            + " s), circuit breakers (open wait "
            + RedLock.DEFAULT_CIRCUIT_BREAKER_WAIT.toMillis()
            + " ms)");
    rows.row("fencing", "every lease's token is checked to rise in acquisition order");
    if (admission == null) {
      rows.row(
          "restart guard",
          "masters not admitted (--"
              + Harness.ADMIT_FRESH_NODES
              + " not given): a master whose data");
      rows.row(
          "",
          "is younger than "
              + RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds()
              + " s answers RESTARTED and does not vote");
    } else {
      rows.row("restart guard", "a brand-new cluster: masters admitted explicitly (restart guard)");
      for (String line : admission.describe()) {
        rows.row("", line);
      }
    }
  }

  private static void printResult(Result r, PrintStream out) {
    double seconds = r.elapsedNanos() / 1e9;
    Rows rows = new Rows(out, 20);
    out.println();
    out.println("Results");
    rows.row(
        "acquisitions",
        String.format(
            Locale.ROOT,
            "%,d  (%,.0f/s; per worker %,d to %,d)",
            r.acquisitions(),
            r.acquisitions() / seconds,
            r.fewestPerWorker(),
            r.mostPerWorker()));
    rows.row(
        "contention",
        String.format(
            Locale.ROOT,
            "%,d failed tryAcquire rounds (%.2f per acquisition)",
            r.failedRounds(),
            r.acquisitions() == 0 ? 0.0 : (double) r.failedRounds() / r.acquisitions()));
    rows.row(
        "unavailable rounds",
        String.format(
            Locale.ROOT,
            "%,d (too few masters could vote: failed, timed out or RESTARTED)",
            r.unavailableRounds()));
    if (r.restartedRounds() > 0) {
      rows.row(
          "RESTARTED",
          String.format(
              Locale.ROOT,
              "%,d rounds in which a master answered RESTARTED (did not vote)",
              r.restartedRounds()));
    }
    rows.row(
        "circuit breakers",
        r.breakersOpened().isEmpty()
            ? "none opened"
            : "opened for " + String.join(", ", r.breakersOpened()));
    rows.row(
        "waits over " + MAX_WAIT.toSeconds() + " s",
        String.format(
            Locale.ROOT,
            "%,d (acquire with maxWait %d s would have thrown LockTakenException)",
            r.longWaits(),
            MAX_WAIT.toSeconds()));
    if (r.expiredBeforeWrite() > 0) {
      rows.row(
          "expired leases",
          String.format(
              Locale.ROOT,
              "%,d (found invalid before the write, which was skipped)",
              r.expiredBeforeWrite()));
    }
    rows.row(
        "final inventory",
        String.format(Locale.ROOT, "%,d%s", r.finalInventory(), r.soldOut() ? " (sold out)" : ""));
    rows.row(
        "expected inventory",
        String.format(
            Locale.ROOT,
            "%,d  (%,d - %,d decrements)",
            r.expectedInventory(),
            r.initialInventory(),
            r.decrements()));
    rows.row(
        "overlap violations",
        String.format(
            Locale.ROOT,
            "%,d among %,d validity windows (closest hand-over %s us)",
            r.violations(),
            r.windows(),
            Percentiles.micros(r.closestHandoverNanos())));
    rows.row("tryAcquire latency", latency(r.acquireLatency()) + "  (the successful call)");
    rows.row(
        "wait for the lock", latency(r.waitLatency()) + "  (first try to lease, with backoff)");
    if (r.restartedRounds() > 0) {
      out.println();
      out.println(Harness.restartedHint(r.restartedRounds()));
    }
    out.println();
    out.println(fencingLine(r.fencing()));
    out.println(r.passed() ? "DRILL PASSED" : "DRILL FAILED: " + String.join("; ", r.failures()));
  }

  private static String fencingLine(FencingOrder f) {
    String line =
        String.format(
            Locale.ROOT,
            "fencing tokens: %,d leases, strictly increasing: %s",
            f.leases(),
            f.increasing() ? "yes" : "no");
    if (!f.increasing()) {
      Grant before = f.firstBefore().orElseThrow();
      Grant after = f.firstAfter().orElseThrow();
      line +=
          String.format(
              Locale.ROOT,
              " (%,d not above the previous lease's; first: token %d at %.6f s after token %d at"
                  + " %.6f s)",
              f.notIncreasing(),
              after.token(),
              after.acquiredAt() / 1e9,
              before.token(),
              before.acquiredAt() / 1e9);
    }
    return line;
  }

  private static String latency(Summary s) {
    if (s.count() == 0) {
      return "no samples";
    }
    return String.format(
        Locale.ROOT,
        "p50 %6s us   p99 %6s us   max %7s us",
        Percentiles.micros(s.p50()),
        Percentiles.micros(s.p99()),
        Percentiles.micros(s.max()));
  }

  private static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0
        ? d.toSeconds() + " s"
        : String.format(Locale.ROOT, "%.1f s", d.toNanos() / 1e9);
  }

  // ---- the workload ----

  /** The guarded counter; see the class comment for why volatile and why that is not enough. */
  private static final class Counter {
    volatile long value;
    volatile boolean soldOut;

    Counter(long value) {
      this.value = value;
    }
  }

  /** One worker: its own RedLock, its own tallies; read them only after joining its thread. */
  private static final class Worker implements Runnable {
    final Config config;
    final RedLock redlock;
    final Counter counter;
    final long start;
    final long deadline;
    final CountDownLatch finished;

    long acquisitions;
    long decrements;
    long failedRounds;
    long unavailableRounds;
    long longWaits;
    long expiredBeforeWrite;
    final Samples acquireLatency = new Samples();
    final Samples waitLatency = new Samples();
    final List<Window> windows = new ArrayList<>();
    final List<Grant> grants = new ArrayList<>();
    Throwable failure;

    Worker(
        Config config,
        RedLock redlock,
        Counter counter,
        long start,
        long deadline,
        CountDownLatch finished) {
      this.config = config;
      this.redlock = redlock;
      this.counter = counter;
      this.start = start;
      this.deadline = deadline;
      this.finished = finished;
    }

    @Override
    public void run() {
      try {
        while (!counter.soldOut) {
          Optional<Lease> lease = awaitLease();
          if (lease.isEmpty()) {
            break;
          }
          holdAndDecrement(lease.get());
        }
      } catch (InterruptedException e) {
        // Told to stop by the drill; what was recorded so far stands.
      } catch (Throwable e) {
        failure = e;
      } finally {
        finished.countDown();
      }
    }

    /** Retries tryAcquire with a short random backoff; empty when the time is up. */
    private Optional<Lease> awaitLease() throws InterruptedException {
      long waitStart = System.nanoTime();
      while (!counter.soldOut && System.nanoTime() - deadline < 0) {
        long before = System.nanoTime();
        Optional<Lease> lease;
        try {
          lease = redlock.tryAcquire(RESOURCE, config.ttl());
        } catch (QuorumUnavailableException e) {
          unavailableRounds++;
          lease = null;
        }
        long after = System.nanoTime();
        if (lease != null && lease.isPresent()) {
          acquisitions++;
          acquireLatency.add(after - before);
          waitLatency.add(after - waitStart);
          grants.add(new Grant(RESOURCE, after - start, lease.get().fencingToken()));
          return lease;
        }
        if (lease != null) {
          failedRounds++;
        }
        if (after - waitStart > MAX_WAIT.toNanos()) {
          longWaits++;
          waitStart = after;
        }
        long backoff = ThreadLocalRandom.current().nextLong(BACKOFF_MIN_NANOS, BACKOFF_MAX_NANOS);
        TimeUnit.NANOSECONDS.sleep(backoff);
      }
      return Optional.empty();
    }

    private void holdAndDecrement(Lease lease) {
      long from = System.nanoTime();
      // Read the remaining validity first: the deadline computed is then a little late, never
      // early, so the window is never shorter than the lease really was.
      long remaining = lease.remainingValidity().toNanos();
      long validUntil = System.nanoTime() + remaining;
      try {
        long seen = counter.value;
        if (seen <= 0) {
          counter.soldOut = true;
          return;
        }
        Thread.yield();
        if (!lease.isValid()) {
          expiredBeforeWrite++;
          return;
        }
        counter.value = seen - 1;
        decrements++;
      } finally {
        long end = System.nanoTime();
        lease.close();
        long to = end - validUntil < 0 ? end : validUntil;
        windows.add(new Window(from - start, to - start));
      }
    }
  }

  // ---- values ----

  /**
   * What one drill runs with.
   *
   * @param nodes the masters' URIs; empty to start {@link Masters#LOCAL_COUNT} local ones
   * @param workers how many workers, each with its own RedLock
   * @param duration how long the workers run
   * @param inventory the counter's initial value
   * @param ttl each lease's time to live
   * @param nodeTimeout each RedLock's per-master timeout
   * @param admitFreshNodes whether to admit the {@code nodes} as a brand-new cluster (local masters
   *     are always admitted)
   */
  record Config(
      List<String> nodes,
      int workers,
      Duration duration,
      long inventory,
      Duration ttl,
      Duration nodeTimeout,
      boolean admitFreshNodes) {

    Config {
      nodes = List.copyOf(nodes);
      requireNonNull(duration, "duration");
      requireNonNull(ttl, "ttl");
      requireNonNull(nodeTimeout, "nodeTimeout");
      if (workers < 1) {
        throw new IllegalArgumentException("workers must be at least 1: " + workers);
      }
      if (inventory < 1) {
        throw new IllegalArgumentException("inventory must be at least 1: " + inventory);
      }
    }

    /** The defaults, with the given masters (none: start local ones). */
    static Config defaults(List<String> nodes) {
      return new Config(
          nodes,
          DEFAULT_WORKERS,
          DEFAULT_DURATION,
          DEFAULT_INVENTORY,
          DEFAULT_TTL,
          DEFAULT_NODE_TIMEOUT,
          false);
    }

    /** Returns a copy with another number of workers. */
    Config withWorkers(int workers) {
      return new Config(nodes, workers, duration, inventory, ttl, nodeTimeout, admitFreshNodes);
    }

    /** Returns a copy with another duration. */
    Config withDuration(Duration duration) {
      return new Config(nodes, workers, duration, inventory, ttl, nodeTimeout, admitFreshNodes);
    }

    /** Returns a copy with another initial inventory. */
    Config withInventory(long inventory) {
      return new Config(nodes, workers, duration, inventory, ttl, nodeTimeout, admitFreshNodes);
    }

    /** Returns a copy that does or does not admit the {@code nodes} as a brand-new cluster. */
    Config withAdmitFreshNodes(boolean admit) {
      return new Config(nodes, workers, duration, inventory, ttl, nodeTimeout, admit);
    }

    static Config from(Flags flags) throws UsageException {
      List<String> nodes = Harness.nodes(flags);
      int workers = flags.intValue("workers", DEFAULT_WORKERS, 1, 1024);
      Duration duration =
          flags.seconds("duration", DEFAULT_DURATION, Duration.ofMillis(100), Duration.ofDays(1));
      long inventory = flags.longValue("inventory", DEFAULT_INVENTORY, 1, Long.MAX_VALUE / 2);
      Duration ttl = flags.millis("ttl", DEFAULT_TTL, Duration.ofMillis(10), Duration.ofHours(1));
      Duration nodeTimeout =
          flags.millis(
              "node-timeout", DEFAULT_NODE_TIMEOUT, Duration.ofMillis(1), Duration.ofMinutes(1));
      if (ttl.compareTo(nodeTimeout) <= 0) {
        throw new UsageException(
            "--ttl ("
                + ttl.toMillis()
                + " ms) must be greater than --node-timeout ("
                + nodeTimeout.toMillis()
                + " ms)");
      }
      return new Config(
          nodes,
          workers,
          duration,
          inventory,
          ttl,
          nodeTimeout,
          flags.isSet(Harness.ADMIT_FRESH_NODES));
    }
  }

  /**
   * One lease's validity window, in nanoseconds since the drill started.
   *
   * @param from when tryAcquire returned the lease
   * @param to the earlier of the start of the release and the lease's deadline
   */
  record Window(long from, long to) {}

  /**
   * The hand-overs between consecutive windows.
   *
   * @param overlaps how many windows began before an earlier one ended; must be zero
   * @param closestNanos the shortest gap between one window's end and the next one's start
   *     (negative if some overlapped; zero with fewer than two windows)
   */
  record Handovers(long overlaps, long closestNanos) {}

  /**
   * One granted lease's fencing token.
   *
   * @param resource the resource locked
   * @param acquiredAt when tryAcquire returned the lease, in nanoseconds since the drill started
   * @param token the lease's fencing token
   */
  record Grant(String resource, long acquiredAt, long token) {
    Grant {
      requireNonNull(resource, "resource");
    }
  }

  /**
   * Whether the fencing tokens rose in acquisition order.
   *
   * @param leases how many leases were checked
   * @param notIncreasing how many tokens were not greater than the previous lease's on the same
   *     resource; must be zero
   * @param firstBefore the earlier lease of the earliest such pair, if any
   * @param firstAfter the later lease of the earliest such pair, if any
   */
  record FencingOrder(
      long leases, long notIncreasing, Optional<Grant> firstBefore, Optional<Grant> firstAfter) {

    FencingOrder {
      requireNonNull(firstBefore, "firstBefore");
      requireNonNull(firstAfter, "firstAfter");
    }

    /** Whether every token was greater than the one before it. */
    boolean increasing() {
      return notIncreasing == 0;
    }
  }

  /**
   * The masters' answers to the admission: per master, the best answer of every call.
   *
   * @param calls on how many RedLocks {@link RedLock#admitFreshNodes()} was called
   * @param statuses per master: GRANTED (admitted by a call), TAKEN (already trusted) or why no
   *     call reached it
   * @param details per master, the error of a failure; otherwise empty
   */
  record Admission(int calls, Map<String, Status> statuses, Map<String, String> details) {

    Admission {
      statuses = Collections.unmodifiableMap(new LinkedHashMap<>(statuses));
      details = Map.copyOf(details);
    }

    static boolean allAnswered(Map<String, Status> statuses) {
      return statuses.values().stream().allMatch(Admission::answered);
    }

    private static boolean answered(Status status) {
      return status == Status.GRANTED || status == Status.TAKEN;
    }

    /** Lines for the report. */
    List<String> describe() {
      long admittedNow = statuses.values().stream().filter(s -> s == Status.GRANTED).count();
      long trusted = statuses.values().stream().filter(Admission::answered).count();
      List<String> lines = new ArrayList<>();
      lines.add(
          String.format(
              Locale.ROOT,
              "admitFreshNodes() on each of the %d RedLocks: %d of %d masters trusted",
              calls,
              trusted,
              statuses.size()));
      lines.add(
          String.format(
              Locale.ROOT,
              "(%d admitted by these calls, %d were already)",
              admittedNow,
              trusted - admittedNow));
      statuses.forEach(
          (node, status) -> {
            if (!answered(status)) {
              String detail = details.getOrDefault(node, "");
              lines.add(
                  "NOT admitted: " + node + " " + status + (detail.isEmpty() ? "" : ": " + detail));
            }
          });
      return lines;
    }
  }

  /**
   * What the workers' RedLocks told their listener: rounds in which a master answered RESTARTED,
   * and masters whose circuit breaker opened. Thread-safe, and quick, as a listener must be.
   */
  static final class Watch implements RedLockListener {
    private final LongAdder restartedRounds = new LongAdder();
    private final Set<String> breakersOpened = new ConcurrentSkipListSet<>();

    @Override
    public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
      countRestarted(outcomes);
    }

    @Override
    public void denied(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
      countRestarted(outcomes);
    }

    @Override
    public void circuitChanged(String node, CircuitState state) {
      if (state == CircuitState.OPEN) {
        breakersOpened.add(node);
      }
    }

    private void countRestarted(List<NodeOutcome> outcomes) {
      for (NodeOutcome outcome : outcomes) {
        if (outcome.status() == Status.RESTARTED) {
          restartedRounds.increment();
          return;
        }
      }
    }

    long restartedRounds() {
      return restartedRounds.sum();
    }

    List<String> breakersOpened() {
      return List.copyOf(breakersOpened);
    }
  }

  /**
   * The outcome of a drill.
   *
   * @param acquisitions leases granted
   * @param decrements counter writes made under a lease
   * @param failedRounds tryAcquire calls refused because another worker held the lock
   * @param unavailableRounds tryAcquire calls that failed because too few masters answered
   * @param longWaits waits for a lease longer than {@link #MAX_WAIT}
   * @param expiredBeforeWrite leases found invalid before the write
   * @param perWorker acquisitions of each worker
   * @param initialInventory the counter's initial value
   * @param finalInventory the counter's value after every worker stopped
   * @param soldOut whether a worker found the counter at zero
   * @param windows how many validity windows were recorded
   * @param violations overlapping windows; see {@link #countOverlaps}
   * @param closestHandoverNanos the shortest gap between consecutive windows
   * @param acquireLatency durations of the successful tryAcquire calls, in nanoseconds
   * @param waitLatency from the first try to the lease, backoff included, in nanoseconds
   * @param elapsedNanos how long the workers ran
   * @param fencing whether the fencing tokens rose in acquisition order
   * @param restartedRounds rounds in which some master answered RESTARTED
   * @param breakersOpened the masters whose circuit breaker opened, in any worker's RedLock
   * @param failures why the drill failed; empty if it passed
   */
  record Result(
      long acquisitions,
      long decrements,
      long failedRounds,
      long unavailableRounds,
      long longWaits,
      long expiredBeforeWrite,
      List<Long> perWorker,
      long initialInventory,
      long finalInventory,
      boolean soldOut,
      long windows,
      long violations,
      long closestHandoverNanos,
      Summary acquireLatency,
      Summary waitLatency,
      long elapsedNanos,
      FencingOrder fencing,
      long restartedRounds,
      List<String> breakersOpened,
      List<String> failures) {

    /** Whether the drill passed: no failures. */
    boolean passed() {
      return failures.isEmpty();
    }

    /** The counter's value if no update was lost. */
    long expectedInventory() {
      return initialInventory - decrements;
    }

    long fewestPerWorker() {
      return perWorker.stream().mapToLong(Long::longValue).min().orElse(0);
    }

    long mostPerWorker() {
      return perWorker.stream().mapToLong(Long::longValue).max().orElse(0);
    }

    /** Totals the workers' tallies (each read after its thread was joined) and decides. */
    static Result of(
        Config config,
        List<Worker> workers,
        List<Thread> threads,
        long finalInventory,
        long elapsedNanos,
        Watch watch,
        List<String> stopFailures) {
      long acquisitions = 0;
      long decrements = 0;
      long failed = 0;
      long unavailable = 0;
      long longWaits = 0;
      long expired = 0;
      boolean soldOut = false;
      List<Long> perWorker = new ArrayList<>();
      List<Window> windows = new ArrayList<>();
      List<Grant> grants = new ArrayList<>();
      Samples acquire = new Samples();
      Samples wait = new Samples();
      List<String> failures = new ArrayList<>(stopFailures);
      for (int i = 0; i < workers.size(); i++) {
        if (threads.get(i).isAlive()) {
          continue; // its fields may still change; already reported as not stopped
        }
        Worker w = workers.get(i);
        acquisitions += w.acquisitions;
        decrements += w.decrements;
        failed += w.failedRounds;
        unavailable += w.unavailableRounds;
        longWaits += w.longWaits;
        expired += w.expiredBeforeWrite;
        soldOut |= w.counter.soldOut;
        perWorker.add(w.acquisitions);
        windows.addAll(w.windows);
        grants.addAll(w.grants);
        acquire.addAll(w.acquireLatency);
        wait.addAll(w.waitLatency);
        if (w.failure != null) {
          failures.add("worker " + i + " failed: " + w.failure);
        }
      }
      Handovers handovers = handovers(windows);
      FencingOrder fencing = fencingOrder(grants);
      long restarted = watch.restartedRounds();
      long expected = config.inventory() - decrements;
      if (acquisitions == 0) {
        failures.add(
            "no lease was granted"
                + (unavailable > 0
                    ? " (" + unavailable + " rounds: too few masters could vote)"
                    : "")
                + (restarted > 0 ? "; masters answered RESTARTED: see the hint above" : ""));
      }
      if (finalInventory != expected) {
        failures.add(
            "final inventory "
                + finalInventory
                + " but expected "
                + expected
                + ": "
                + Math.abs(expected - finalInventory)
                + " updates lost");
      }
      if (handovers.overlaps() > 0) {
        failures.add(handovers.overlaps() + " leases overlapped another");
      }
      if (!fencing.increasing()) {
        failures.add(
            fencing.notIncreasing()
                + " fencing tokens were not above the previous lease's (acquisition order)");
      }
      return new Result(
          acquisitions,
          decrements,
          failed,
          unavailable,
          longWaits,
          expired,
          List.copyOf(perWorker),
          config.inventory(),
          finalInventory,
          soldOut,
          windows.size(),
          handovers.overlaps(),
          handovers.closestNanos(),
          acquire.summary(),
          wait.summary(),
          elapsedNanos,
          fencing,
          restarted,
          watch.breakersOpened(),
          List.copyOf(failures));
    }
  }
}
