package dev.redlock.drill;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLock;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillResult.Setup;
import dev.redlock.drill.FaultPlan.Fault;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
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
 * The drill's text report, the last stage of its pipeline (plan, run, result, reports): the header
 * (what the drill runs, printed before the workers start) and the results, each a pure function of
 * what it reports on. {@link DrillProgress} prints them. Stateless.
 */
final class TextReport {

  private TextReport() {}

  /**
   * What the drill runs with: the masters (and, for local network faults, the fault proxy in front
   * of each, which the workers connect to), the workers, the lock, the worker loop, the RedLock
   * configuration, the masters' answers to the admission if they were admitted, and the fault plan.
   */
  static String header(DrillPlan plan, Setup setup) {
    Text text = new Text();
    PrintStream out = text.out;
    Rows rows = text.rows;
    List<String> uris = setup.uris();
    List<String> clientUris = setup.clientUris();
    Optional<Admission> admission = setup.admission();
    out.println();
    out.println("RedLock drill");
    List<String[]> run = run(plan, setup);
    rows.row(run.get(0)[0], run.get(0)[1]); // the masters, each on a line below
    for (int i = 0; i < uris.size(); i++) {
      String uri = Masters.redact(uris.get(i));
      String client = Masters.redact(clientUris.get(i));
      rows.row(
          "",
          (uris.size() > 1 ? (i + 1) + " " : "")
              + uri
              + (client.equals(uri) ? "" : "  (through its fault proxy, " + client + ")"));
    }
    for (String[] row : run.subList(1, run.size())) {
      rows.row(row[0], row[1]);
    }
    rows.row("worker loop", "tryAcquire; if refused, back off 1-5 ms and retry;");
    rows.row("", "holding the lease: read counter, yield, check validity, write counter - 1;");
    rows.row("", "release");
    rows.row("counter", String.format(Locale.ROOT, "%,d to start with", plan.inventory()));
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
    faults(rows, plan, setup);
    return text.toString();
  }

  /**
   * The rows both reports describe the run with, as label and value: the masters ({@code "5 (local
   * ..., started in 40 ms), quorum 3"}), the workers, the duration and the lock.
   */
  static List<String[]> run(DrillPlan plan, Setup setup) {
    int n = setup.uris().size();
    return List.of(
        new String[] {"masters", n + " (" + setup.origin() + "), quorum " + FaultPlan.quorum(n)},
        new String[] {
          "workers", plan.workers() + ", each with its own RedLock (as separate processes)"
        },
        new String[] {"duration", seconds(plan.duration())},
        new String[] {
          "lock",
          "'"
              + Drill.RESOURCE
              + "', ttl "
              + plan.ttl().toMillis()
              + " ms, node timeout "
              + plan.nodeTimeout().toMillis()
              + " ms"
        });
  }

  /**
   * The fault plan and how its faults are made: each line of the plan, the most masters faulted at
   * once, and whether the quorum assumption holds. Nothing without a plan.
   */
  private static void faults(Rows rows, DrillPlan drill, Setup setup) {
    FaultPlan plan = drill.faultPlan();
    int masters = setup.uris().size();
    if (plan.isEmpty()) {
      return;
    }
    int quorum = FaultPlan.quorum(masters);
    int most = drill.mostFaultedAtOnce();
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
    List<String> how = setup.injection();
    for (int i = 0; i < how.size(); i++) {
      rows.row(i == 0 ? "fault injection" : "", how.get(i));
    }
    for (String note : setup.injectionNotes()) {
      rows.row("", note);
    }
    List<FaultPlan.Interval> breaking = drill.breaking();
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

  /**
   * The figures, each worker's wait for the lock, the faults as they ran, each master's answers,
   * where the HTML report is ({@code html}, if it was written), the fencing line and the verdict,
   * which is the last line.
   */
  static String results(DrillResult drill, Optional<Path> html) {
    Text text = new Text();
    PrintStream out = text.out;
    Rows rows = text.rows;
    Result r = drill.checks();
    FaultPlan plan = drill.plan().faultPlan();
    Timeline timeline = drill.timeline();
    out.println();
    out.println("Results");
    for (String[] row : ResultRows.summary(r)) {
      rows.row(row[0], row[1]);
    }
    waits(out, drill);
    faultsAsRun(out, plan, timeline);
    masterAnswers(out, timeline);
    if (r.restartedRounds() > 0) {
      Set<Integer> restarted = restartedMasters(timeline);
      out.println();
      if (!restarted.isEmpty() && plan.killedMasters().containsAll(restarted)) {
        out.println(guardNote(restarted));
      } else {
        out.println(Harness.restartedHint(r.restartedRounds()));
      }
    }
    html.ifPresent(
        path -> {
          out.println();
          out.println("HTML report: " + path.toAbsolutePath().normalize());
        });
    out.println();
    out.println(ResultRows.fencingLine(r.fencing()));
    out.println(ResultRows.verdict(r));
    return text.toString();
  }

  /** Each worker's wait for the lock: grants, then p50, p99 and max wait before a grant. */
  private static void waits(PrintStream out, DrillResult drill) {
    out.println();
    out.println("Wait for the lock per worker (first try to lease, with backoff)");
    String format = "  %6s %10s %11s %11s %11s%n";
    out.printf(Locale.ROOT, format, ResultRows.WAIT_COLUMNS.toArray());
    for (List<String> row : ResultRows.waits(drill.waits())) {
      out.printf(Locale.ROOT, format, row.toArray());
    }
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

  private static void faultsAsRun(PrintStream out, FaultPlan plan, Timeline timeline) {
    List<FaultWindow> windows = timeline.faults();
    if (plan.isEmpty()) {
      return;
    }
    out.println();
    out.println("Faults as they ran (seconds since the workers started)");
    for (FaultWindow w : windows) {
      out.printf(
          Locale.ROOT,
          "  %-8s %-40s %8.3f -> %8.3f%s%n",
          plan.unit() + " " + w.fault().line(),
          w.fault().summary(),
          w.began() / 1e9,
          w.ended() / 1e9,
          w.errors().isEmpty() ? "" : "  FAILED: " + String.join("; ", w.errors()));
    }
    if (windows.size() < plan.faults().size()) {
      out.printf(
          Locale.ROOT,
          "  (%d of %d faults did not begin: the run ended first)%n",
          plan.faults().size() - windows.size(),
          plan.faults().size());
    }
  }

  private static void masterAnswers(PrintStream out, Timeline timeline) {
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

  /** Lines for the header about the masters' answers to the admission. */
  private static List<String> describe(Admission admission) {
    Map<String, Status> statuses = admission.statuses();
    long admittedNow = statuses.values().stream().filter(s -> s == Status.GRANTED).count();
    long trusted = statuses.values().stream().filter(Admission::answered).count();
    List<String> lines = new ArrayList<>();
    lines.add(
        String.format(
            Locale.ROOT,
            "admitFreshNodes() from one RedLock (%d call%s): %d of %d masters trusted",
            admission.calls(),
            admission.calls() == 1 ? "" : "s",
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
            lines.add(node + " not admitted: " + (detail.isEmpty() ? status : detail));
          }
        });
    return lines;
  }

  /** Formats a duration as whole seconds ({@code "10 s"}) or with one decimal ({@code "0.5 s"}). */
  static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0
        ? d.toSeconds() + " s"
        : String.format(Locale.ROOT, "%.1f s", d.toNanos() / 1e9);
  }

  /** Text printed into a buffer, with the report's label-and-value rows. */
  private static final class Text {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    private final Rows rows = new Rows(out, 20);

    @Override
    public String toString() {
      out.flush();
      return bytes.toString(StandardCharsets.UTF_8);
    }
  }
}
