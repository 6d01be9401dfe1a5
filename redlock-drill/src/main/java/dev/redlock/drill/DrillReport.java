package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLock;
import dev.redlock.drill.Drill.Config;
import dev.redlock.drill.DrillChecks.FencingOrder;
import dev.redlock.drill.DrillChecks.Grant;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillRun.Admission;
import dev.redlock.drill.Percentiles.Summary;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/** Everything the drill prints: the header, the progress lines, the results and the verdict. */
final class DrillReport {

  private final PrintStream out;
  private final Rows rows;

  DrillReport(PrintStream out) {
    this.out = requireNonNull(out, "out");
    this.rows = new Rows(out, 20);
  }

  /**
   * Prints what the drill runs with: the masters, the workers, the lock, the worker loop, the
   * RedLock configuration and, if the masters were admitted, their answers.
   */
  void header(Config config, List<String> uris, String origin, Optional<Admission> admission) {
    int quorum = uris.size() / 2 + 1;
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

  /** Announces the run. */
  void running(int workers, Duration duration) {
    out.println();
    out.printf("Running %d workers for %s...%n", workers, seconds(duration));
  }

  /** One progress line: how much was sold {@code elapsed} into the run, and what is left. */
  void progress(Duration elapsed, long sold, long left) {
    out.printf(Locale.ROOT, "  %6s  %,9d sold   inventory %,d%n", seconds(elapsed), sold, left);
  }

  /** Prints the figures, the fencing line and the verdict, which is the last line. */
  void result(Result r) {
    double seconds = r.elapsedNanos() / 1e9;
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
        "waits over " + Drill.MAX_WAIT.toSeconds() + " s",
        String.format(
            Locale.ROOT,
            "%,d (acquire with maxWait %d s would have thrown LockTakenException)",
            r.longWaits(),
            Drill.MAX_WAIT.toSeconds()));
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

  /** Formats a duration as whole seconds ({@code "10 s"}) or with one decimal ({@code "0.5 s"}). */
  static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0
        ? d.toSeconds() + " s"
        : String.format(Locale.ROOT, "%.1f s", d.toNanos() / 1e9);
  }
}
