package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillRun.Admission;
import dev.redlock.drill.DrillRun.Watch;
import dev.redlock.drill.Flags.UsageException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

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
    DrillReport report = new DrillReport(out);
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
      Optional<Admission> admission =
          admit ? Optional.of(DrillRun.admit(clients)) : Optional.empty();
      report.header(config, uris, origin, admission);
      Result result = DrillRun.workers(config, clients, watch, report);
      report.result(result);
      return result;
    } finally {
      for (RedLock client : clients) {
        client.close();
      }
    }
  }

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
}
