package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.Harness.CannotRun;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
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
 * With a fault plan ({@code --plan FILE} or {@code --faults "...; ..."}, see {@link
 * FaultPlanParser}) the drill harms masters while the workers run: on its local masters it pauses
 * and kills the {@code redis-server} children and, for network faults, puts one fault proxy per
 * master between the workers and the masters; with {@code --toxiproxy} it drives the user's
 * Toxiproxy in front of the user's masters (network faults only). A plan that would leave more than
 * a minority of the masters faulted at once is refused unless {@code --allow-breaking}; then the
 * quorum assumption is broken on purpose, and overlaps, lost updates and falling tokens are
 * reported but do not fail the drill (exit code 0), while everything else still does.
 *
 * <p>Everything is recorded on one monotonic clock: each worker's lease windows, what each master
 * answered in each acquire round, the latency of each granted call and each fault as it ran. The
 * drill prints a progress line while it runs and, at the end, the text report and a self-contained
 * HTML report ({@code --report}, by default {@value #DEFAULT_REPORT} in the working directory; see
 * {@link HtmlReport}).
 *
 * <h2>How it is built</h2>
 *
 * A pipeline: {@link DrillCommand} parses the command line into a {@link DrillPlan} (the
 * configuration and the fault plan, checked once); {@link DrillRunner} runs the plan and gives a
 * {@link DrillResult} (the checked figures, the recording, each worker's waits), telling {@link
 * DrillProgress} as it goes; {@link TextReport} and {@link HtmlReport} are functions of the result.
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
   * The plan a command line gives, as {@link #run(String[], PrintStream)} reads it.
   *
   * @throws CommandLine.ParameterException for a bad command line or a refused plan
   */
  static DrillPlan plan(String... args) {
    CommandLine line = new CommandLine(new DrillCommand());
    line.parseArgs(args);
    return line.<DrillCommand>getCommand().plan();
  }

  /**
   * Runs {@code plan} and reports on it: prints the progress and the text report to {@code out}
   * (ending with the verdict), and writes the HTML report if the plan names a file.
   *
   * @throws IllegalStateException if local masters cannot be started, or the faults cannot be set
   *     up (Toxiproxy does not answer, a master has no proxy)
   */
  static Result run(DrillPlan plan, PrintStream out) {
    return runRecorded(plan, out).checks();
  }

  /**
   * Runs the drill as {@link #run(DrillPlan, PrintStream)} does, and returns the whole result.
   *
   * @throws IllegalStateException as {@link #run(DrillPlan, PrintStream)} does
   */
  static DrillResult runRecorded(DrillPlan plan, PrintStream out) {
    try {
      return drill(plan, out, false);
    } catch (CannotRun e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  /**
   * The pipeline, for {@link DrillCommand}: runs {@code plan} (with a live progress line if asked),
   * then the reports.
   */
  static DrillResult drill(DrillPlan plan, PrintStream out, boolean live) throws CannotRun {
    requireNonNull(plan, "plan");
    requireNonNull(out, "out");
    DrillProgress progress = new DrillProgress(out, live);
    DrillResult result = DrillRunner.run(plan, progress);
    Optional<Path> html = Optional.empty();
    if (plan.report().isPresent()) {
      Path path = plan.report().get();
      try {
        HtmlReport.write(path, result);
        html = Optional.of(path);
      } catch (IOException e) {
        result = result.withFailure("cannot write the HTML report " + path + ": " + e);
      }
    }
    progress.report(TextReport.results(result, html));
    return result;
  }
}
