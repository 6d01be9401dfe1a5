package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillRun.Admission;
import dev.redlock.drill.DrillRun.Crew;
import dev.redlock.drill.DrillRun.Outcome;
import dev.redlock.drill.DrillRun.Watch;
import dev.redlock.drill.Harness.CannotRun;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine;

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
 * overlapping holder would interleave), checks {@link dev.redlock.Lease#isValid()}, writes the
 * counter minus one, and releases. It records the lease's validity window: from the moment {@code
 * tryAcquire} returned to the earlier of the start of the release and the lease's deadline; and the
 * lease's fencing token with the moment it was acquired.
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
 * 1); a bad command line (or a refused fault plan) exits with 2. The counter lives in this JVM
 * rather than in Redis so that the check depends on nothing but the lock.
 *
 * <h2>Failover drills</h2>
 *
 * With a fault plan ({@code --plan FILE} or {@code --faults "...; ..."}, see {@link FaultPlan}) the
 * drill harms masters while the workers run: on its local masters it pauses and kills the {@code
 * redis-server} children and, for network faults, puts one fault proxy per master between the
 * workers and the masters; with {@code --toxiproxy} it drives the user's Toxiproxy in front of the
 * user's masters (network faults only). A plan that would leave more than a minority of the masters
 * faulted at once is refused unless {@code --allow-breaking}; then the quorum assumption is broken
 * on purpose, and overlaps, lost updates and falling tokens are reported but do not fail the drill
 * (exit code 0), while everything else still does.
 *
 * <p>Everything is recorded on one monotonic clock: each worker's lease windows, what each master
 * answered in each acquire round, the latency of each granted call and each fault as it ran. The
 * drill prints a progress line while it runs and, at the end, the text report and a self-contained
 * HTML report ({@code --report}, by default {@value #DEFAULT_REPORT} in the working directory; see
 * {@link HtmlReport}).
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

  /** Where the HTML report goes without {@code --report}, relative to the working directory. */
  static final String DEFAULT_REPORT = "drill-report.html";

  /** Without {@code --duration}, the workers run this long after the plan's last fault ends. */
  static final Duration AFTER_LAST_FAULT = Duration.ofSeconds(5);

  private Drill() {}

  /**
   * Runs the drill with the command-line options shown by {@code --help} (see {@link
   * DrillCommand}), prints the report to standard output and exits: 0 if the drill passed, 1 if it
   * failed, 2 for a bad command line.
   *
   * @param args the command-line options
   */
  public static void main(String[] args) {
    Harness.exit(run(args, System.out));
  }

  /** Parses {@code args}, runs the drill, prints to {@code out} and returns the exit code. */
  static int run(String[] args, PrintStream out) {
    return DrillCommand.commandLine(out).execute(args);
  }

  /**
   * The configuration a command line gives, as {@link #run(String[], PrintStream)} reads it.
   *
   * @throws CommandLine.ParameterException for a bad command line or a refused plan
   */
  static Config config(String... args) {
    CommandLine line = new CommandLine(new DrillCommand());
    line.parseArgs(args);
    return line.<DrillCommand>getCommand().config();
  }

  /**
   * Runs the drill: starts local masters unless {@code config} names some, admits the masters when
   * they are the local ones or {@code config} says so, runs the workers and the fault plan, prints
   * the report to {@code out} (ending with the verdict), writes the HTML report if {@code config}
   * names a file, and shuts everything down.
   *
   * @throws IllegalStateException if local masters cannot be started, or the faults cannot be set
   *     up (Toxiproxy does not answer, a master has no proxy)
   */
  static Result run(Config config, PrintStream out) {
    return runRecorded(config, out).result();
  }

  /**
   * Runs the drill as {@link #run(Config, PrintStream)} does, and returns the recording too.
   *
   * @throws IllegalStateException as {@link #run(Config, PrintStream)} does
   */
  static Outcome runRecorded(Config config, PrintStream out) {
    try {
      return drill(config, out, false);
    } catch (CannotRun e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  /**
   * Runs the drill for {@link DrillCommand}: as {@link #runRecorded}, with a live line if asked.
   */
  static Outcome drill(Config config, PrintStream out, boolean live) throws CannotRun {
    requireNonNull(config, "config");
    requireNonNull(out, "out");
    try (Masters masters = Masters.open(config.nodes(), false, out);
        FaultTargets targets = targets(config, masters)) {
      String origin = masters.origin();
      if (masters.local()) {
        origin += ", started in " + masters.startTime().toMillis() + " ms";
      }
      boolean admit = masters.local() || config.admitFreshNodes();
      return drill(config, masters, targets, origin, admit, new DrillReport(out, live));
    }
  }

  /** What makes the plan's faults: the local processes (and proxies), or the user's Toxiproxy. */
  private static FaultTargets targets(Config config, Masters masters) throws CannotRun {
    FaultOptions faults = config.faults();
    try {
      if (faults.toxiproxy().isPresent()) {
        return FaultTargets.remote(faults.toxiproxy().get(), masters.uris(), faults.proxies());
      }
      if (masters.local() && !faults.plan().isEmpty()) {
        return FaultTargets.local(masters.processes(), faults.plan().hasNetworkFaults());
      }
      return FaultTargets.none(masters.uris());
    } catch (IOException e) {
      throw new CannotRun(
          faults.toxiproxy().isPresent()
              ? "Toxiproxy at " + faults.toxiproxy().get() + " did not answer: " + e.getMessage()
              : "cannot start the fault proxy: " + e);
    } catch (IllegalArgumentException e) {
      throw new CannotRun("cannot fault the masters: " + e.getMessage());
    }
  }

  private static Outcome drill(
      Config config,
      Masters masters,
      FaultTargets targets,
      String origin,
      boolean admit,
      DrillReport report) {
    List<String> uris = targets.clientUris();
    int n = uris.size();
    FaultPlan plan = config.faults().plan();
    boolean breaking = !plan.breakingIntervals(n, config.duration()).isEmpty();
    Watch watch = new Watch();
    RoundLog.Live live = new RoundLog.Live(n);
    List<RedLock> clients = new ArrayList<>();
    List<RoundLog> logs = new ArrayList<>();
    try {
      for (int i = 0; i < config.workers(); i++) {
        RoundLog log = new RoundLog(n, watch, live);
        logs.add(log);
        clients.add(
            RedLock.builder().nodes(uris).nodeTimeout(config.nodeTimeout()).listener(log).build());
      }
      // The deployment preflight first: whether each master is fit for Redlock, and why.
      report.preflight(clients.get(0).inspect());
      Optional<Admission> admission =
          admit ? Optional.of(DrillRun.admit(clients)) : Optional.empty();
      report.header(config, masters.uris(), uris, origin, admission);
      report.faults(plan, targets, n, config.duration());
      FaultSchedule schedule = new FaultSchedule(plan, targets, config.duration(), report);
      // Ctrl-C: undo the faults on the user's proxies, which outlive the drill. Local masters die
      // with it (the testkit kills them), so nothing is healed, let alone restarted, for them.
      Optional<Thread> heal = Optional.empty();
      if (config.faults().toxiproxy().isPresent() && !plan.isEmpty()) {
        heal = Optional.of(new Thread(schedule::stop, "drill-heal-on-exit"));
        Runtime.getRuntime().addShutdownHook(heal.get());
      }
      Outcome outcome;
      try {
        outcome =
            DrillRun.workers(
                config,
                new Crew(clients, logs, live, watch),
                schedule,
                masterNames(masters),
                breaking && config.faults().allowBreaking(),
                report);
      } finally {
        schedule.stop();
        heal.ifPresent(Drill::removeHook);
      }
      Result result = outcome.result();
      Optional<Path> html = Optional.empty();
      if (config.report().isPresent()) {
        Path path = config.report().get();
        try {
          HtmlReport.write(
              path,
              new HtmlReport.Page(
                  "RedLock drill: " + config.workers() + " workers, " + n + " masters",
                  settings(config, masters, targets, origin),
                  plan,
                  result),
              outcome.timeline());
          html = Optional.of(path);
        } catch (IOException e) {
          result = result.withFailure("cannot write the HTML report " + path + ": " + e);
        }
      }
      report.result(result, new DrillReport.Details(plan, outcome.timeline(), html));
      return new Outcome(result, outcome.timeline());
    } finally {
      for (RedLock client : clients) {
        client.close();
      }
    }
  }

  private static void removeHook(Thread hook) {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // The JVM is shutting down: the hook runs, and stop() is idempotent.
    }
  }

  /** The masters as {@code host:port}, without credentials, in configuration order. */
  private static List<String> masterNames(Masters masters) {
    List<String> names = new ArrayList<>();
    for (String uri : masters.uris()) {
      URI parsed = URI.create(uri);
      names.add(parsed.getHost() + ":" + (parsed.getPort() < 0 ? 6379 : parsed.getPort()));
    }
    return names;
  }

  /** The run's settings for the HTML page. */
  private static List<String[]> settings(
      Config config, Masters masters, FaultTargets targets, String origin) {
    List<String[]> rows = new ArrayList<>();
    int n = masters.uris().size();
    rows.add(new String[] {"masters", n + " (" + origin + "), quorum " + FaultPlan.quorum(n)});
    rows.add(
        new String[] {
          "workers", config.workers() + ", each with its own RedLock (as separate processes)"
        });
    rows.add(new String[] {"duration", DrillReport.seconds(config.duration())});
    rows.add(
        new String[] {
          "lock",
          "'"
              + RESOURCE
              + "', ttl "
              + config.ttl().toMillis()
              + " ms, node timeout "
              + config.nodeTimeout().toMillis()
              + " ms; the library's defaults otherwise"
        });
    FaultPlan plan = config.faults().plan();
    if (!plan.isEmpty()) {
      rows.add(new String[] {"fault plan", plan.source()});
      for (FaultPlan.Fault fault : plan.faults()) {
        rows.add(new String[] {"", plan.unit() + " " + fault.line() + ": " + fault.text()});
      }
      rows.add(new String[] {"fault injection", String.join(" ", targets.description())});
    }
    return rows;
  }

  /**
   * The fault side of a drill.
   *
   * @param plan the faults ({@link FaultPlan#NONE} for none)
   * @param toxiproxy the address of the user's Toxiproxy API, if the faults go through it
   * @param proxies the proxy name of each master (empty: found by port)
   * @param allowBreaking whether the plan may fault more than a minority at once
   */
  record FaultOptions(
      FaultPlan plan, Optional<String> toxiproxy, List<String> proxies, boolean allowBreaking) {

    static final FaultOptions NONE =
        new FaultOptions(FaultPlan.NONE, Optional.empty(), List.of(), false);

    FaultOptions {
      requireNonNull(plan, "plan");
      requireNonNull(toxiproxy, "toxiproxy");
      proxies = List.copyOf(proxies);
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
   * @param faults the fault plan and how to make its faults
   * @param report where to write the HTML report; empty for none
   */
  record Config(
      List<String> nodes,
      int workers,
      Duration duration,
      long inventory,
      Duration ttl,
      Duration nodeTimeout,
      boolean admitFreshNodes,
      FaultOptions faults,
      Optional<Path> report) {

    Config {
      nodes = List.copyOf(nodes);
      requireNonNull(duration, "duration");
      requireNonNull(ttl, "ttl");
      requireNonNull(nodeTimeout, "nodeTimeout");
      requireNonNull(faults, "faults");
      requireNonNull(report, "report");
      if (workers < 1) {
        throw new IllegalArgumentException("workers must be at least 1: " + workers);
      }
      if (inventory < 1) {
        throw new IllegalArgumentException("inventory must be at least 1: " + inventory);
      }
    }

    /** The defaults, with the given masters (none: start local ones), no plan and no HTML. */
    static Config defaults(List<String> nodes) {
      return new Config(
          nodes,
          DEFAULT_WORKERS,
          DEFAULT_DURATION,
          DEFAULT_INVENTORY,
          DEFAULT_TTL,
          DEFAULT_NODE_TIMEOUT,
          false,
          FaultOptions.NONE,
          Optional.empty());
    }

    /** Returns a copy with another number of workers. */
    Config withWorkers(int workers) {
      return new Config(
          nodes, workers, duration, inventory, ttl, nodeTimeout, admitFreshNodes, faults, report);
    }

    /** Returns a copy with another duration. */
    Config withDuration(Duration duration) {
      return new Config(
          nodes, workers, duration, inventory, ttl, nodeTimeout, admitFreshNodes, faults, report);
    }

    /** Returns a copy with another initial inventory. */
    Config withInventory(long inventory) {
      return new Config(
          nodes, workers, duration, inventory, ttl, nodeTimeout, admitFreshNodes, faults, report);
    }

    /** Returns a copy that does or does not admit the {@code nodes} as a brand-new cluster. */
    Config withAdmitFreshNodes(boolean admit) {
      return new Config(
          nodes, workers, duration, inventory, ttl, nodeTimeout, admit, faults, report);
    }
  }
}
