package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.Inspection;
import dev.redlock.drill.DrillResult.Setup;
import dev.redlock.drill.FaultPlan.Fault;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What the drill prints while it runs: the preflight table, the header, the progress lines and the
 * fault events; then the report it is handed. On a terminal ({@code live}) the progress line is
 * rewritten in place once a second; otherwise it is printed about ten times per run, a line each
 * time, as a CI log wants it.
 *
 * <p>Progress and fault events come from two threads (the runner's and the fault schedule's), so
 * every method that prints is synchronized.
 */
final class DrillProgress implements FaultSchedule.Events {

  private static final String CLEAR_LINE = "\r\u001b[K";

  /** Making or undoing a fault that takes this long is worth a mention on its line. */
  private static final Duration SLOW_FAULT = Duration.ofMillis(100);

  private final PrintStream out;
  private final boolean live;
  private boolean lineOpen; // a live progress line is on screen, without its newline
  private String planUnit = "line"; // what the plan numbers: "line" (a file) or "fault"
  private int workers;
  private Duration runLength = Duration.ofSeconds(1);

  /**
   * Progress on {@code out}; {@code live} when {@code out} is a terminal, so the progress line can
   * be rewritten in place.
   */
  DrillProgress(PrintStream out, boolean live) {
    this.out = requireNonNull(out, "out");
    this.live = live;
  }

  /**
   * The figures of one progress line.
   *
   * @param elapsed since the workers started
   * @param acquisitionsPerSecond leases granted per second since the last line
   * @param contention refused tryAcquire rounds per lease since the last line (infinite if some
   *     were refused and none granted)
   * @param mastersUp masters whose vote counted in some round within the last quarter second
   * @param masters all masters
   * @param sold decrements so far
   * @param left the counter now
   * @param faults the faults active now
   */
  record Progress(
      Duration elapsed,
      double acquisitionsPerSecond,
      double contention,
      int mastersUp,
      int masters,
      long sold,
      long left,
      List<Fault> faults) {
    Progress {
      requireNonNull(elapsed, "elapsed");
      faults = List.copyOf(faults);
    }
  }

  /** Where the drill prints (the local masters say there that they are starting). */
  PrintStream out() {
    return out;
  }

  /** Prints the deployment preflight ({@link dev.redlock.RedLock#inspect()}) as its table. */
  synchronized void preflight(Inspection inspection) {
    out.print(inspection);
    out.println();
  }

  /** Prints what the drill runs ({@link TextReport#header}) and keeps what the progress needs. */
  synchronized void header(DrillPlan plan, Setup setup) {
    planUnit = plan.faultPlan().unit();
    workers = plan.workers();
    runLength = plan.duration();
    out.print(TextReport.header(plan, setup));
  }

  /** Announces the run. */
  synchronized void running() {
    out.println();
    out.printf("Running %d workers for %s...%n", workers, TextReport.seconds(runLength));
  }

  /** How often to print progress: every second on a terminal, else about ten times a run. */
  synchronized Duration progressInterval() {
    if (live) {
      return Duration.ofSeconds(1);
    }
    Duration tenth = runLength.dividedBy(10);
    return tenth.compareTo(Duration.ofSeconds(1)) > 0 ? tenth : Duration.ofSeconds(1);
  }

  /** One progress line. */
  synchronized void progress(Progress p) {
    String contention =
        Double.isInfinite(p.contention())
            ? "-"
            : String.format(Locale.ROOT, "%.2f", p.contention());
    String line =
        String.format(
            Locale.ROOT,
            "  %6s  %,7.0f acq/s  contention %5s  masters up %d/%d  sold %,d  inventory %,d",
            TextReport.seconds(p.elapsed()),
            p.acquisitionsPerSecond(),
            contention,
            p.mastersUp(),
            p.masters(),
            p.sold(),
            p.left());
    if (!p.faults().isEmpty()) {
      List<String> names = new ArrayList<>();
      p.faults().forEach(f -> names.add(f.summary()));
      line += "  faults: " + String.join("; ", names);
    }
    if (live) {
      out.print(CLEAR_LINE + line);
      out.flush();
      lineOpen = true;
    } else {
      out.println(line);
    }
  }

  @Override
  public synchronized void began(Fault fault, long began, long applied, List<String> errors) {
    event(began, applied, "began", "made", fault, errors);
  }

  @Override
  public synchronized void ended(Fault fault, long healing, long ended, List<String> errors) {
    event(healing, ended, "ended", "undone", fault, errors);
  }

  /**
   * One line per begin and end, at the moment it was asked for; if making or undoing the fault took
   * a while (an API call on a busy machine), how long, since the fault held only after that.
   */
  private void event(
      long from, long to, String what, String done, Fault fault, List<String> errors) {
    if (lineOpen) {
      out.print(CLEAR_LINE);
      lineOpen = false;
    }
    long took = to - from;
    out.printf(
        Locale.ROOT,
        "  %6s  fault %s: %s (%s %d)%s%s%n",
        TextReport.seconds(Duration.ofNanos(from)),
        what,
        fault.summary(),
        planUnit,
        fault.line(),
        took >= SLOW_FAULT.toNanos()
            ? String.format(Locale.ROOT, ", %s in %.2f s", done, took / 1e9)
            : "",
        errors.isEmpty() ? "" : " FAILED: " + String.join("; ", errors));
  }

  /** Ends the live progress line, if one is on screen. */
  synchronized void stopped() {
    if (lineOpen) {
      out.println();
      lineOpen = false;
    }
  }

  /** Prints a report ({@link TextReport#results}) after the run. */
  synchronized void report(String text) {
    stopped();
    out.print(text);
    out.flush();
  }
}
