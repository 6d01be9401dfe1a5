package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillRun.Admission;
import dev.redlock.drill.DrillRun.Crew;
import dev.redlock.drill.DrillRun.Outcome;
import dev.redlock.drill.DrillRun.Watch;
import dev.redlock.drill.Flags.UsageException;
import dev.redlock.drill.Harness.CannotRun;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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

  static final String ALLOW_BREAKING = "allow-breaking";

  private static final String USAGE_FORMAT =
      """
      Usage: java -jar redlock-drill.jar [options]
         or: ./mvnw -q -Pdrill package -DskipTests -Ddrill.args="[options]"

      Workers, each with its own RedLock, fight over one lock and decrement a shared counter
      under it, while a fault plan (if any) pauses, kills, partitions or slows masters. Passes if
      no update was lost, no two leases overlapped and the fencing tokens rose in acquisition
      order. Prints a progress line while it runs, then the report; writes an HTML report.

      Options:
        --nodes URI,URI,...   Redis masters to use, e.g. redis://10.0.0.1:6379,redis://10.0.0.2:6379
                              (default: start %d local redis-server processes for the run, which
                              are admitted as a brand-new cluster)
        --admit-fresh-nodes   call admitFreshNodes() on the --nodes masters first: only for a
                              brand-new cluster, or when no master lost a lock it held within the
                              last %d s (the restart guard otherwise keeps young masters from voting)
        --workers K           workers, each with its own RedLock (default %d)
        --duration SECONDS    how long to run; fractions allowed (default %d, or with a plan
                              %d s after its last fault ends, if that is later)
        --inventory N         initial value of the counter; the run ends early if it sells out
                              (default %,d)
        --ttl MS              lease time to live in milliseconds (default %d)
        --node-timeout MS     per-master timeout in milliseconds (default %d)
        --plan FILE           a fault plan, one fault per line (see below)
        --faults "F; F; ..."  the same on the command line, faults separated by ';'
        --toxiproxy HOST:PORT make the plan's faults through this Toxiproxy (network faults only);
                              --nodes are then the addresses of its proxies in front of the masters
        --proxies NAME,...    the Toxiproxy proxy of each --nodes master, in order (default: the
                              proxy that listens on the node's port)
        --allow-breaking      run a plan that faults more than a minority of the masters at once;
                              overlaps, lost updates and falling tokens are then reported, not
                              failed
        --report FILE.html    where to write the HTML report (default %s)
        -h, --help            show this help

      Fault plan: one fault per line, '#' starts a comment; masters are numbered from 1 in the
      order of --nodes (or of the local masters); times count from the start of the workers and
      take a unit (ms, s or m). Without 'for', a fault lasts until the end of the run.
        at 10s pause master 2 for 5s                  SIGSTOP, SIGCONT after 5 s (local only)
        at 20s partition masters 1 and 2 for 10s      proxy disabled: connections refused
        at 25s blackhole master 4 for 3s              connections accepted, nothing gets through
        at 30s latency 80ms on master 5 for 5s        each reply delayed (latency toxic)
        at 40s kill master 3 and restart it after 2s  SIGKILL, restarted empty (local only)
      A plan is refused before anything runs, with the line and the reason, for: a syntax error,
      an unknown master, a negative time, a fault that begins after the run, two faults on one
      master at once, a process fault with --toxiproxy, or (without --allow-breaking) more than a
      minority of the masters faulted at once (every kind counts).

      Progress line: acquisitions per second and contention (refused rounds per acquisition)
      since the last line, masters up (whose votes counted in the last quarter second), the
      active faults.

      Exit code: 0 DRILL PASSED, 1 DRILL FAILED (an overlap, a lost update, a token that did not
      rise, no lease at all, or a fault that could not be made), 2 bad command line or plan.
      """;

  private static final String USAGE =
      String.format(
          Locale.ROOT,
          USAGE_FORMAT,
          Masters.LOCAL_COUNT,
          RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds(),
          DEFAULT_WORKERS,
          DEFAULT_DURATION.toSeconds(),
          AFTER_LAST_FAULT.toSeconds(),
          DEFAULT_INVENTORY,
          DEFAULT_TTL.toMillis(),
          DEFAULT_NODE_TIMEOUT.toMillis(),
          DEFAULT_REPORT);

  private static final Set<String> OPTIONS =
      Set.of(
          "nodes",
          "workers",
          "duration",
          "inventory",
          "ttl",
          "node-timeout",
          "plan",
          "faults",
          "toxiproxy",
          "proxies",
          "report");

  private static final Set<String> SWITCHES = Set.of(Harness.ADMIT_FRESH_NODES, ALLOW_BREAKING);

  private static final Harness HARNESS =
      new Harness("drill", "DRILL FAILED: ", USAGE, OPTIONS, SWITCHES);

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
    boolean live = out == System.out && System.console() != null;
    return HARNESS.run(
        args,
        out,
        Config::from,
        config ->
            drill(config, out, live).result().passed() ? Harness.EXIT_OK : Harness.EXIT_FAILED);
  }

  /**
   * The configuration a command line gives, as {@link #run(String[], PrintStream)} reads it.
   *
   * @throws UsageException for a bad command line or a refused plan
   */
  static Config config(String... args) throws UsageException {
    return Config.from(Flags.parse(args, OPTIONS, SWITCHES));
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

  private static Outcome drill(Config config, PrintStream out, boolean live) throws CannotRun {
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
      List<FaultPlan.Problem> unreadable = new ArrayList<>();
      FaultPlan plan = plan(flags, unreadable);
      Optional<String> toxiproxy =
          flags.has("toxiproxy") ? Optional.of(flags.value("toxiproxy")) : Optional.empty();
      List<String> proxies = flags.list("proxies");
      if (toxiproxy.isPresent()) {
        try {
          FaultTargets.HostPort.parse(toxiproxy.get());
        } catch (IllegalArgumentException e) {
          throw new UsageException("--toxiproxy: " + e.getMessage());
        }
        if (nodes.isEmpty()) {
          throw new UsageException(
              "--toxiproxy needs --nodes: the addresses of its proxies in front of your masters");
        }
      } else if (!proxies.isEmpty()) {
        throw new UsageException("--proxies names Toxiproxy proxies: give --toxiproxy too");
      }
      if (!plan.isEmpty() && !nodes.isEmpty() && toxiproxy.isEmpty()) {
        throw new UsageException(
            "a fault plan on --nodes masters needs --toxiproxy HOST:PORT: the drill faults your"
                + " masters only through Toxiproxy proxies in front of them");
      }
      if (!flags.has("duration") && !plan.isEmpty()) {
        Duration planned = plan.lastEnd().plus(AFTER_LAST_FAULT);
        if (planned.compareTo(duration) > 0) {
          duration = planned;
        }
      }
      boolean allowBreaking = flags.isSet(ALLOW_BREAKING);
      int masters = nodes.isEmpty() ? Masters.LOCAL_COUNT : nodes.size();
      List<FaultPlan.Problem> problems = new ArrayList<>(unreadable);
      problems.addAll(plan.check(masters, duration, nodes.isEmpty(), allowBreaking));
      if (!problems.isEmpty()) {
        throw new UsageException(
            "the fault plan is refused, nothing was run:\n  "
                + String.join("\n  ", FaultPlan.messages(problems)));
      }
      Optional<Path> report =
          Optional.of(Path.of(flags.has("report") ? flags.value("report") : DEFAULT_REPORT));
      return new Config(
          nodes,
          workers,
          duration,
          inventory,
          ttl,
          nodeTimeout,
          flags.isSet(Harness.ADMIT_FRESH_NODES),
          new FaultOptions(plan, toxiproxy, proxies, allowBreaking),
          report);
    }

    /** The plan of --plan or --faults; lines that cannot be read go to {@code unreadable}. */
    private static FaultPlan plan(Flags flags, List<FaultPlan.Problem> unreadable)
        throws UsageException {
      boolean file = flags.has("plan");
      boolean inline = flags.has("faults");
      if (file && inline) {
        throw new UsageException("give --plan FILE or --faults \"...\", not both");
      }
      try {
        if (file) {
          Path path = Path.of(flags.value("plan"));
          String text;
          try {
            text = Files.readString(path, StandardCharsets.UTF_8);
          } catch (IOException e) {
            throw new UsageException("cannot read --plan " + path + ": " + e);
          }
          return FaultPlan.parse(text, path.toString());
        }
        if (inline) {
          return FaultPlan.parseList(flags.value("faults"), "--faults");
        }
      } catch (FaultPlan.PlanException e) {
        unreadable.addAll(e.problems());
        return e.readable();
      }
      return FaultPlan.NONE;
    }
  }
}
