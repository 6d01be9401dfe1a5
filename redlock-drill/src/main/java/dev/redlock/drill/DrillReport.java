package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLock;
import dev.redlock.drill.Drill.Config;
import dev.redlock.drill.DrillChecks.FencingOrder;
import dev.redlock.drill.DrillChecks.Grant;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillRun.Admission;
import dev.redlock.drill.FaultPlan.Fault;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import dev.redlock.drill.Percentiles.Summary;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Everything the drill prints: the header, the progress lines and fault events, the results and the
 * verdict. On a terminal ({@code live}) the progress line is rewritten in place once a second;
 * otherwise it is printed about ten times per run, a line each time, as a CI log wants it.
 *
 * <p>Progress and fault events come from two threads (the drill's and the fault schedule's), so
 * every method is synchronized.
 */
final class DrillReport implements FaultSchedule.Events {

  private static final String CLEAR_LINE = "\r\u001b[K";

  /** Making or undoing a fault that takes this long is worth a mention on its line. */
  private static final Duration SLOW_FAULT = Duration.ofMillis(100);

  private final PrintStream out;
  private final Rows rows;
  private final boolean live;
  private boolean lineOpen; // a live progress line is on screen, without its newline
  private String planUnit = "line"; // what the plan numbers: "line" (a file) or "fault"

  /**
   * A report on {@code out}; {@code live} when {@code out} is a terminal, so the progress line can
   * be rewritten in place.
   */
  DrillReport(PrintStream out, boolean live) {
    this.out = requireNonNull(out, "out");
    this.rows = new Rows(out, 20);
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

  /**
   * What the results need besides the figures: the plan, what was recorded over time, and where the
   * HTML report went.
   *
   * @param plan the fault plan that ran ({@link FaultPlan#NONE} without one)
   * @param timeline the recording
   * @param html where the HTML report was written, if it was
   */
  record Details(FaultPlan plan, Timeline timeline, Optional<Path> html) {
    Details {
      requireNonNull(plan, "plan");
      requireNonNull(timeline, "timeline");
      requireNonNull(html, "html");
    }
  }

  /** Prints the deployment preflight ({@link dev.redlock.RedLock#inspect()}) as its table. */
  synchronized void preflight(dev.redlock.Inspection inspection) {
    out.print(inspection);
    out.println();
  }

  /**
   * Prints what the drill runs with: the masters, the workers, the lock, the worker loop, the
   * RedLock configuration and, if the masters were admitted, their answers. {@code clientUris} are
   * what the workers connect to: the masters' own URIs or, for local network faults, a fault proxy
   * in front of each.
   */
  synchronized void header(
      Config config,
      List<String> uris,
      List<String> clientUris,
      String origin,
      Optional<Admission> admission) {
    int quorum = uris.size() / 2 + 1;
    out.println();
    out.println("RedLock drill");
    rows.row("masters", uris.size() + " (" + origin + "), quorum " + quorum);
    for (int i = 0; i < uris.size(); i++) {
      String uri = Masters.redact(uris.get(i));
      String client = Masters.redact(clientUris.get(i));
      rows.row(
          "",
          (uris.size() > 1 ? (i + 1) + " " : "")
              + uri
              + (client.equals(uri) ? "" : "  (through its fault proxy, " + client + ")"));
    }
    rows.row("workers", config.workers() + ", each with its own RedLock (as separate processes)");
    rows.row("duration", seconds(config.duration()));
    rows.row(
        "lock",
        "'"
            + Drill.RESOURCE
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
    if (admission.isEmpty()) {
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
      for (String line : describe(admission.get())) {
        rows.row("", line);
      }
    }
  }

  /**
   * Prints the fault plan and how its faults are made: each line of the plan, the most masters
   * faulted at once, and whether the quorum assumption holds. Nothing without a plan.
   */
  synchronized void faults(FaultPlan plan, FaultTargets targets, int masters, Duration runLength) {
    if (plan.isEmpty()) {
      return;
    }
    planUnit = plan.unit();
    int quorum = FaultPlan.quorum(masters);
    int most = plan.mostFaultedAtOnce(runLength);
    rows.row(
        "fault plan",
        plan.source()
            + ": "
            + plan.faults().size()
            + (plan.faults().size() == 1 ? " fault" : " faults")
            + ", at most "
            + most
            + " of "
            + masters
            + " masters faulted at once");
    for (Fault fault : plan.faults()) {
      rows.row(
          "",
          String.format(Locale.ROOT, "%-8s %s", plan.unit() + " " + fault.line(), fault.text()));
    }
    List<String> how = targets.description();
    for (int i = 0; i < how.size(); i++) {
      rows.row(i == 0 ? "fault injection" : "", how.get(i));
    }
    for (String note : targets.notes()) {
      rows.row("", note);
    }
    List<FaultPlan.Interval> breaking = plan.breakingIntervals(masters, runLength);
    if (breaking.isEmpty()) {
      rows.row(
          "quorum",
          "never needs a faulted master (at most "
              + (masters - quorum)
              + " of "
              + masters
              + " may be faulted; quorum "
              + quorum
              + ")");
    } else {
      List<String> spans = new ArrayList<>();
      for (FaultPlan.Interval interval : breaking) {
        spans.add(FaultPlan.format(interval.from()) + " to " + FaultPlan.format(interval.to()));
      }
      rows.row(
          "quorum",
          "BROKEN ON PURPOSE (--allow-breaking): more than "
              + (masters - quorum)
              + " of "
              + masters
              + " masters faulted from "
              + String.join(", ", spans));
      rows.row("", "overlaps, lost updates and falling tokens are reported, not failed");
    }
    if (!plan.killedMasters().isEmpty()) {
      rows.row(
          "killed masters",
          "restart empty: the restart guard keeps them from voting for "
              + RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds()
              + " s (maxLeaseTime)");
    }
  }

  /** Announces the run. */
  synchronized void running(int workers, Duration duration) {
    out.println();
    out.printf("Running %d workers for %s...%n", workers, seconds(duration));
  }

  /** How often to print progress: every second on a terminal, else about ten times a run. */
  Duration progressInterval(Duration runLength) {
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
            seconds(p.elapsed()),
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
        seconds(Duration.ofNanos(from)),
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

  /**
   * Prints the figures, the faults as they ran, each master's answers, where the HTML report is,
   * the fencing line and the verdict, which is the last line.
   */
  synchronized void result(Result r, Details details) {
    out.println();
    out.println("Results");
    for (String[] row : resultRows(r)) {
      rows.row(row[0], row[1]);
    }
    faultsAsRun(details);
    masterAnswers(details.timeline());
    if (r.restartedRounds() > 0) {
      Set<Integer> restarted = restartedMasters(details.timeline());
      out.println();
      if (!restarted.isEmpty() && details.plan().killedMasters().containsAll(restarted)) {
        out.println(guardNote(restarted));
      } else {
        out.println(Harness.restartedHint(r.restartedRounds()));
      }
    }
    details
        .html()
        .ifPresent(
            path -> {
              out.println();
              out.println("HTML report: " + path.toAbsolutePath().normalize());
            });
    out.println();
    out.println(fencingLine(r.fencing()));
    out.println(verdict(r));
  }

  /** The verdict line: {@code DRILL PASSED} or {@code DRILL FAILED: <reasons>}. */
  static String verdict(Result r) {
    if (!r.passed()) {
      return "DRILL FAILED: " + String.join("; ", r.failures());
    }
    if (!r.assumptionBroken()) {
      return "DRILL PASSED";
    }
    return r.tolerated().isEmpty()
        ? "DRILL PASSED (quorum assumption broken on purpose; no violation seen)"
        : "DRILL PASSED (quorum assumption broken on purpose; violations reported, not failed): "
            + String.join("; ", r.tolerated());
  }

  /** The masters (from 1) that answered RESTARTED in some round after the start. */
  static Set<Integer> restartedMasters(Timeline timeline) {
    Set<Integer> restarted = new TreeSet<>();
    List<Map<Status, Long>> counts = timeline.outcomeCounts();
    for (int m = 0; m < counts.size(); m++) {
      if (counts.get(m).get(Status.RESTARTED) > 0) {
        restarted.add(m + 1);
      }
    }
    return restarted;
  }

  private static String guardNote(Set<Integer> masters) {
    return String.format(
        Locale.ROOT,
        """
        Note: %s %s killed by the plan and restarted empty; the restart guard kept %s from
          voting (RESTARTED) for the rest of the run, up to maxLeaseTime (%d s). That is the guard
          at work: a master that lost its data must not vote while a lease it granted may live.""",
        masters.size() == 1 ? "master" : "masters",
        FaultPlan.joinAnd(masters) + (masters.size() == 1 ? " was" : " were"),
        masters.size() == 1 ? "it" : "them",
        RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds());
  }

  private void faultsAsRun(Details details) {
    List<FaultWindow> windows = details.timeline().faults();
    if (details.plan().isEmpty()) {
      return;
    }
    out.println();
    out.println("Faults as they ran (seconds since the workers started)");
    for (FaultWindow w : windows) {
      out.printf(
          Locale.ROOT,
          "  %-8s %-40s %8.3f -> %8.3f%s%n",
          details.plan().unit() + " " + w.fault().line(),
          w.fault().summary(),
          w.began() / 1e9,
          w.ended() / 1e9,
          w.errors().isEmpty() ? "" : "  FAILED: " + String.join("; ", w.errors()));
    }
    if (windows.size() < details.plan().faults().size()) {
      out.printf(
          Locale.ROOT,
          "  (%d of %d faults did not begin: the run ended first)%n",
          details.plan().faults().size() - windows.size(),
          details.plan().faults().size());
    }
  }

  private void masterAnswers(Timeline timeline) {
    List<Map<Status, Long>> counts = timeline.outcomeCounts();
    if (counts.isEmpty()) {
      return;
    }
    out.println();
    out.println("Masters' answers in the acquire rounds (share of rounds)");
    StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "  %-24s", "master"));
    for (Status status : Status.values()) {
      head.append(String.format(Locale.ROOT, " %10s", status.name().toLowerCase(Locale.ROOT)));
    }
    out.println(head);
    for (int m = 0; m < counts.size(); m++) {
      Map<Status, Long> perStatus = counts.get(m);
      long total = perStatus.values().stream().mapToLong(Long::longValue).sum();
      StringBuilder line =
          new StringBuilder(
              String.format(Locale.ROOT, "  %-24s", (m + 1) + " " + timeline.masters().get(m)));
      for (Status status : Status.values()) {
        line.append(
            String.format(
                Locale.ROOT, " %9.1f%%", total == 0 ? 0.0 : 100.0 * perStatus.get(status) / total));
      }
      out.println(line);
    }
  }

  /** The result's figures as label and value, for the text report and the HTML summary. */
  static List<String[]> resultRows(Result r) {
    double seconds = r.elapsedNanos() / 1e9;
    List<String[]> rows = new ArrayList<>();
    row(
        rows,
        "acquisitions",
        String.format(
            Locale.ROOT,
            "%,d  (%,.0f/s; per worker %,d to %,d)",
            r.acquisitions(),
            r.acquisitions() / seconds,
            r.fewestPerWorker(),
            r.mostPerWorker()));
    row(
        rows,
        "contention",
        String.format(
            Locale.ROOT,
            "%,d failed tryAcquire rounds (%.2f per acquisition)",
            r.failedRounds(),
            r.acquisitions() == 0 ? 0.0 : (double) r.failedRounds() / r.acquisitions()));
    row(
        rows,
        "unavailable rounds",
        String.format(
            Locale.ROOT,
            "%,d (too few masters could vote: failed, timed out or RESTARTED)",
            r.unavailableRounds()));
    if (r.restartedRounds() > 0) {
      row(
          rows,
          "RESTARTED",
          String.format(
              Locale.ROOT,
              "%,d rounds in which a master answered RESTARTED (did not vote)",
              r.restartedRounds()));
    }
    row(
        rows,
        "circuit breakers",
        r.breakersOpened().isEmpty()
            ? "none opened"
            : "opened for " + String.join(", ", r.breakersOpened()));
    row(
        rows,
        "waits over " + Drill.MAX_WAIT.toSeconds() + " s",
        String.format(
            Locale.ROOT,
            "%,d (acquire with maxWait %d s would have thrown LockTakenException)",
            r.longWaits(),
            Drill.MAX_WAIT.toSeconds()));
    if (r.expiredBeforeWrite() > 0) {
      row(
          rows,
          "expired leases",
          String.format(
              Locale.ROOT,
              "%,d (found invalid before the write, which was skipped)",
              r.expiredBeforeWrite()));
    }
    row(
        rows,
        "final inventory",
        String.format(Locale.ROOT, "%,d%s", r.finalInventory(), r.soldOut() ? " (sold out)" : ""));
    row(
        rows,
        "expected inventory",
        String.format(
            Locale.ROOT,
            "%,d  (%,d - %,d decrements)",
            r.expectedInventory(),
            r.initialInventory(),
            r.decrements()));
    row(
        rows,
        "overlap violations",
        String.format(
            Locale.ROOT,
            "%,d among %,d validity windows (closest hand-over %s us)",
            r.violations(),
            r.windows(),
            Percentiles.micros(r.closestHandoverNanos())));
    row(rows, "tryAcquire latency", latency(r.acquireLatency()) + "  (the successful call)");
    row(
        rows,
        "wait for the lock",
        latency(r.waitLatency()) + "  (first try to lease, with backoff)");
    return rows;
  }

  private static void row(List<String[]> rows, String label, String value) {
    rows.add(new String[] {label, value});
  }

  /** Lines for the header about the masters' answers to the admission. */
  private static List<String> describe(Admission admission) {
    Map<String, Status> statuses = admission.statuses();
    long admittedNow = statuses.values().stream().filter(s -> s == Status.GRANTED).count();
    long trusted = statuses.values().stream().filter(Admission::answered).count();
    List<String> lines = new ArrayList<>();
    lines.add(
        String.format(
            Locale.ROOT,
            "admitFreshNodes() on each of the %d RedLocks: %d of %d masters trusted",
            admission.calls(),
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
          if (!Admission.answered(status)) {
            String detail = admission.details().getOrDefault(node, "");
            lines.add(
                "NOT admitted: " + node + " " + status + (detail.isEmpty() ? "" : ": " + detail));
          }
        });
    return lines;
  }

  static String fencingLine(FencingOrder f) {
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

  /** Formats a duration as whole seconds ({@code "10 s"}) or with one decimal ({@code "0.5 s"}). */
  static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0
        ? d.toSeconds() + " s"
        : String.format(Locale.ROOT, "%.1f s", d.toNanos() / 1e9);
  }
}
