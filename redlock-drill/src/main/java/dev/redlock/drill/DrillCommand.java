package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.drill.DrillPlan.FaultOptions;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The drill's command line, parsed by picocli: {@code redlock drill} in the operator CLI, and the
 * drill's own {@code main} ({@code java -jar redlock-drill.jar}, {@code -Pdrill}). See {@link
 * Drill} for what the drill does.
 */
@Command(
    name = "drill",
    sortOptions = false,
    header = "Run the contention and failover drill: fault plans, live progress, HTML report.",
    description =
        "Workers, each with its own RedLock, fight over one lock and decrement a shared counter"
            + " under it, while a fault plan (if any) pauses, kills, partitions or slows masters."
            + " Passes if no update was lost, no two leases overlapped and the fencing tokens rose"
            + " in acquisition order. Prints a progress line while it runs, then the report;"
            + " writes an HTML report.",
    footer = {
      "",
      "Fault plan: one fault per line, '#' starts a comment; masters are numbered from 1 in the"
          + " order of --nodes (or of the local masters); times count from the start of the"
          + " workers and take a unit (ms, s or m). Without 'for', a fault lasts until the end of"
          + " the run.",
      "  at 10s pause master 2 for 5s                  SIGSTOP, SIGCONT 5 s later",
      "  at 20s partition masters 1 and 2 for 10s      connections refused",
      "  at 25s blackhole master 4 for 3s              accepted, nothing gets through",
      "  at 30s latency 80ms on master 5 for 5s        each reply delayed",
      "  at 40s kill master 3 and restart it after 2s  SIGKILL, restarted empty",
      "Pause and kill need the local masters. A plan is refused before anything runs, with the"
          + " line and the reason, for: a syntax error, an unknown master, a negative time, a"
          + " fault that begins after the run, two faults on one master at once, a process fault"
          + " with --toxiproxy, or (without --allow-breaking) more than a minority of the masters"
          + " faulted at once (every kind counts).",
      "",
      "Progress line: acquisitions per second and contention (refused rounds per acquisition)"
          + " since the last line, masters up (whose votes counted in the last quarter second),"
          + " the active faults.",
      "",
      "Exit codes:",
      "  0  DRILL PASSED",
      "  1  DRILL FAILED: an overlap, a lost update, a token that did not rise, no",
      "     lease at all, or a fault that could not be made",
      "  2  bad command line or refused fault plan"
    })
public final class DrillCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Option(
      names = {"-h", "--help"},
      usageHelp = true,
      description = "Show this help message and exit.")
  private boolean help;

  @Option(
      names = "--nodes",
      paramLabel = "URI,URI,...",
      description =
          "Redis masters to use, e.g. redis://10.0.0.1:6379,redis://10.0.0.2:6379 (default: start "
              + Masters.LOCAL_COUNT
              + " local redis-server processes for the run, which are admitted as a brand-new"
              + " cluster)")
  private String nodes;

  @Option(
      names = "--admit-fresh-nodes",
      description =
          "call admitFreshNodes() on the --nodes masters first: only for a brand-new cluster, or when no master lost a lock it held within the last maxLeaseTime (the restart guard otherwise keeps young masters from voting)")
  private boolean admitFreshNodes;

  @Option(
      names = "--workers",
      paramLabel = "K",
      description = "workers, each with its own RedLock (default 8)")
  private String workers;

  @Option(
      names = "--duration",
      paramLabel = "SECONDS",
      description =
          "how long to run; fractions allowed (default 10, or with a plan 5 s after its last fault ends, if that is later)")
  private String duration;

  @Option(
      names = "--inventory",
      paramLabel = "N",
      description =
          "initial value of the counter; the run ends early if it sells out (default 1,000,000)")
  private String inventory;

  @Option(
      names = "--ttl",
      paramLabel = "MS",
      description = "lease time to live in milliseconds (default 2000)")
  private String ttl;

  @Option(
      names = "--node-timeout",
      paramLabel = "MS",
      description = "per-master timeout in milliseconds (default 50)")
  private String nodeTimeout;

  @Option(
      names = "--plan",
      paramLabel = "FILE",
      description = "a fault plan, one fault per line (see below)")
  private String plan;

  @Option(
      names = "--faults",
      paramLabel = "\"F; F; ...\"",
      description = "the same on the command line, faults separated by ';'")
  private String faults;

  @Option(
      names = "--toxiproxy",
      paramLabel = "HOST:PORT",
      description =
          "make the plan's faults through this Toxiproxy (network faults only); --nodes are then the addresses of its proxies in front of the masters")
  private String toxiproxy;

  @Option(
      names = "--proxies",
      paramLabel = "NAME,...",
      description =
          "the Toxiproxy proxy of each --nodes master, in order (default: the proxy that listens on the node's port)")
  private String proxies;

  @Option(
      names = "--allow-breaking",
      description =
          "run a plan that faults more than a minority of the masters at once; overlaps, lost updates and falling tokens are then reported, not failed")
  private boolean allowBreaking;

  @Option(
      names = "--report",
      paramLabel = "FILE.html",
      description = "where to write the HTML report (default " + Drill.DEFAULT_REPORT + ")")
  private String report;

  private final PrintStream out;

  /** A drill command that prints to standard output (with a live progress line on a terminal). */
  public DrillCommand() {
    this(System.out);
  }

  /**
   * A drill command that prints its progress and report to {@code out}.
   *
   * @param out where the drill prints; a live progress line only if it is {@link System#out} on a
   *     terminal
   */
  public DrillCommand(PrintStream out) {
    this.out = requireNonNull(out, "out");
  }

  /**
   * The drill's own command line ({@code java -jar redlock-drill.jar}): picocli, with the output
   * and errors going to {@code out}, and a bad command line printed as {@code drill: <why>}.
   *
   * @param out where the drill prints, usage errors included
   * @return a command line to {@link CommandLine#execute execute}
   */
  public static CommandLine commandLine(PrintStream out) {
    CommandLine line = new CommandLine(new DrillCommand(out));
    PrintWriter writer = new PrintWriter(out, true, StandardCharsets.UTF_8);
    line.setOut(writer);
    line.setErr(writer);
    line.setParameterExceptionHandler(DrillCommand::usageError);
    return line;
  }

  /**
   * Prints a bad command line as one line saying why and a pointer to {@code --help}.
   *
   * @param e what was wrong
   * @param args the command line
   * @return exit code 2
   */
  public static int usageError(ParameterException e, String[] args) {
    CommandLine line = e.getCommandLine();
    PrintWriter err = line.getErr();
    String name = line.getCommandSpec().qualifiedName(" ");
    err.println(name + ": " + e.getMessage());
    err.println("Run '" + name + " --help' to see the options.");
    err.flush();
    return line.getCommandSpec().exitCodeOnInvalidInput();
  }

  /**
   * Runs the drill with the options given and returns the exit code: 0 if it passed, 1 if it failed
   * or could not run.
   *
   * @throws ParameterException for a bad option or a refused fault plan (exit code 2)
   */
  @Override
  public Integer call() {
    DrillPlan plan = plan();
    boolean live = out == System.out && System.console() != null;
    try {
      return Drill.drill(plan, out, live).passed() ? Harness.EXIT_OK : Harness.EXIT_FAILED;
    } catch (Harness.CannotRun e) {
      out.println("DRILL FAILED: " + e.getMessage());
      return Harness.EXIT_FAILED;
    } catch (RuntimeException e) {
      // Startup problems (no redis-server, unreachable masters) end here, after cleanup.
      out.println("DRILL FAILED: " + e);
      return Harness.EXIT_FAILED;
    }
  }

  /**
   * The plan the options give, checked.
   *
   * @throws ParameterException for a bad option or a refused fault plan
   */
  DrillPlan plan() {
    List<String> nodeList = list("nodes", nodes);
    try {
      RedLock.builder().nodes(nodeList);
    } catch (IllegalArgumentException e) {
      throw usage("--nodes: " + e.getMessage());
    }
    int workerCount = (int) whole("workers", workers, Drill.DEFAULT_WORKERS, 1, 1024);
    Duration runFor =
        seconds(duration, Drill.DEFAULT_DURATION, Duration.ofMillis(100), Duration.ofDays(1));
    long stock = whole("inventory", inventory, Drill.DEFAULT_INVENTORY, 1, Long.MAX_VALUE / 2);
    Duration leaseTtl =
        Duration.ofMillis(whole("ttl", ttl, Drill.DEFAULT_TTL.toMillis(), 10, 3_600_000));
    Duration timeout =
        Duration.ofMillis(
            whole("node-timeout", nodeTimeout, Drill.DEFAULT_NODE_TIMEOUT.toMillis(), 1, 60_000));
    if (leaseTtl.compareTo(timeout) <= 0) {
      throw usage(
          "--ttl ("
              + leaseTtl.toMillis()
              + " ms) must be greater than --node-timeout ("
              + timeout.toMillis()
              + " ms)");
    }
    List<FaultPlan.Problem> unreadable = new ArrayList<>();
    FaultPlan faultPlan = readFaultPlan(unreadable);
    Optional<String> toxi = Optional.ofNullable(toxiproxy).map(String::strip);
    List<String> proxyNames = list("proxies", proxies);
    if (toxi.isPresent()) {
      try {
        FaultTargets.HostPort.parse(toxi.get());
      } catch (IllegalArgumentException e) {
        throw usage("--toxiproxy: " + e.getMessage());
      }
      if (nodeList.isEmpty()) {
        throw usage(
            "--toxiproxy needs --nodes: the addresses of its proxies in front of your masters");
      }
    } else if (!proxyNames.isEmpty()) {
      throw usage("--proxies names Toxiproxy proxies: give --toxiproxy too");
    }
    if (!faultPlan.isEmpty() && !nodeList.isEmpty() && toxi.isEmpty()) {
      throw usage(
          "a fault plan on --nodes masters needs --toxiproxy HOST:PORT: the drill faults your"
              + " masters only through Toxiproxy proxies in front of them");
    }
    if (duration == null && !faultPlan.isEmpty()) {
      Duration planned = faultPlan.lastEnd().plus(Drill.AFTER_LAST_FAULT);
      if (planned.compareTo(runFor) > 0) {
        runFor = planned;
      }
    }
    List<FaultPlan.Problem> problems = new ArrayList<>(unreadable);
    DrillPlan checked = null;
    try {
      checked =
          new DrillPlan(
              nodeList,
              workerCount,
              runFor,
              stock,
              leaseTtl,
              timeout,
              admitFreshNodes,
              new FaultOptions(faultPlan, toxi, proxyNames, allowBreaking),
              Optional.of(Path.of(report == null ? Drill.DEFAULT_REPORT : report.strip())));
    } catch (DrillPlan.Refused e) {
      problems.addAll(e.problems());
    }
    if (!problems.isEmpty()) {
      throw usage(
          "the fault plan is refused, nothing was run:\n  "
              + String.join("\n  ", FaultPlan.messages(problems)));
    }
    return checked;
  }

  /** The plan of --plan or --faults; lines that cannot be read go to {@code unreadable}. */
  private FaultPlan readFaultPlan(List<FaultPlan.Problem> unreadable) {
    if (plan != null && faults != null) {
      throw usage("give --plan FILE or --faults \"...\", not both");
    }
    try {
      if (plan != null) {
        Path path = Path.of(plan.strip());
        String text;
        try {
          text = Files.readString(path, StandardCharsets.UTF_8);
        } catch (IOException e) {
          throw usage("cannot read --plan " + path + ": " + e);
        }
        return FaultPlanParser.parse(text, path.toString());
      }
      if (faults != null) {
        return FaultPlanParser.parseList(faults.strip(), "--faults");
      }
    } catch (FaultPlanParser.PlanException e) {
      unreadable.addAll(e.problems());
      return e.readable();
    }
    return FaultPlan.NONE;
  }

  private ParameterException usage(String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  /** {@code text} split at commas, without blanks; empty if absent. */
  private List<String> list(String name, String text) {
    List<String> items = new ArrayList<>();
    if (text == null) {
      return items;
    }
    for (String item : text.split(",")) {
      if (!item.isBlank()) {
        items.add(item.strip());
      }
    }
    if (items.isEmpty()) {
      throw usage("--" + name + " lists nothing");
    }
    return items;
  }

  /** A whole number in [min, max] (underscores allowed: 1_000_000), or {@code fallback}. */
  private long whole(String name, String text, long fallback, long min, long max) {
    if (text == null) {
      return fallback;
    }
    long value;
    try {
      value = Long.parseLong(text.strip().replace("_", ""));
    } catch (NumberFormatException e) {
      throw usage("--" + name + " must be a whole number, was '" + text + "'");
    }
    if (value < min || value > max) {
      throw usage("--" + name + " must be between " + min + " and " + max + ", was " + value);
    }
    return value;
  }

  /** A number of seconds with an optional fraction, in [min, max], or {@code fallback}. */
  private Duration seconds(String text, Duration fallback, Duration min, Duration max) {
    if (text == null) {
      return fallback;
    }
    Duration value;
    try {
      value = Duration.ofNanos(new BigDecimal(text.strip()).movePointRight(9).longValueExact());
    } catch (NumberFormatException | ArithmeticException e) {
      throw usage("--duration must be a number of seconds, was '" + text + "'");
    }
    if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw usage(
          "--duration must be between "
              + plain(min)
              + " and "
              + plain(max)
              + " seconds, was "
              + text);
    }
    return value;
  }

  private static String plain(Duration d) {
    return BigDecimal.valueOf(d.toNanos()).movePointLeft(9).stripTrailingZeros().toPlainString();
  }
}
