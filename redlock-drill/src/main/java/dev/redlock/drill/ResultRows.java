package dev.redlock.drill;

import dev.redlock.drill.DrillChecks.FencingOrder;
import dev.redlock.drill.DrillChecks.Grant;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.Percentiles.Summary;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A drill's figures as text, the same in both reports ({@link TextReport}, {@link HtmlReport}): the
 * summary rows, the fencing line, the verdict, and each worker's wait for the lock. Pure functions
 * of the result; stateless.
 */
final class ResultRows {

  /** The columns of {@link #waits}. */
  static final List<String> WAIT_COLUMNS =
      List.of("worker", "grants", "p50 us", "p99 us", "max us");

  private ResultRows() {}

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

  /** The result's figures as label and value, for the text report and the HTML summary. */
  static List<String[]> summary(Result r) {
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

  /**
   * Each worker's wait for the lock, a row per worker in the order of {@link #WAIT_COLUMNS}: its
   * number (from 1), its grants, then the p50, p99 and max wait before a grant in microseconds
   * ({@code "-"} for a worker with no grant).
   *
   * @param waits per worker, its waits in nanoseconds
   */
  static List<List<String>> waits(List<Summary> waits) {
    List<List<String>> rows = new ArrayList<>();
    for (int w = 0; w < waits.size(); w++) {
      Summary s = waits.get(w);
      boolean none = s.count() == 0;
      rows.add(
          List.of(
              Integer.toString(w + 1),
              String.format(Locale.ROOT, "%,d", s.count()),
              none ? "-" : Percentiles.micros(s.p50()),
              none ? "-" : Percentiles.micros(s.p99()),
              none ? "-" : Percentiles.micros(s.max())));
    }
    return rows;
  }

  /** The fencing line: how many leases, and whether their tokens rose. */
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
}
