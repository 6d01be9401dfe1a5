package dev.redlock.benchmark;

import static dev.redlock.benchmark.HandOffRun.FAIRNESS_GOAL;
import static dev.redlock.benchmark.HandOffRun.FLOOR_SHARE_GOAL;
import static dev.redlock.benchmark.HandOffRun.FLOOR_TWO_ROUNDS;
import static dev.redlock.benchmark.HandOffRun.MAX_GOAL_MILLIS;
import static dev.redlock.benchmark.HandOffRun.P99_GOAL_MILLIS;
import static dev.redlock.benchmark.HandOffRun.PUBSUB_KILL_EVERY;
import static dev.redlock.benchmark.HandOffRun.RESET_P99_FACTOR;
import static dev.redlock.benchmark.HandOffRun.RESET_P99_SLACK_MILLIS;
import static dev.redlock.benchmark.HandOffRun.UTILIZATION_GOAL_PAUSED;

import dev.redlock.benchmark.HandOffRun.Kind;
import dev.redlock.benchmark.HandOffRun.Result;
import dev.redlock.benchmark.HandOffRun.Row;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;

/**
 * The hand-off section's goals (issues 18, 30 and 32), printed below its two tables against the
 * default RedLock's figures: what {@link HandOffRun} measured, judged.
 */
final class HandOffGoals {

  private HandOffGoals() {}

  /** Prints the goals from both tables' results, one result per row of {@code rows}. */
  static void print(List<Row> rows, Result[] paused, Result[] unpaused, PrintStream out) {
    Result ours = null;
    Result oursFlat = null;
    Result rlock = null;
    Result resets = null;
    Result resetsFlat = null;
    Result floor = null;
    Result floorFlat = null;
    StringBuilder floors = new StringBuilder();
    for (int r = 0; r < rows.size(); r++) {
      if (rows.get(r).kind() == Kind.DEFAULT) {
        ours = paused[r];
        oursFlat = unpaused[r];
      } else if (rows.get(r).kind() == Kind.RESETS) {
        resets = paused[r];
        resetsFlat = unpaused[r];
      } else if (rows.get(r).kind() == Kind.RLOCK) {
        rlock = paused[r];
      } else if (rows.get(r).kind() == Kind.FLOOR && unpaused[r] != null) {
        if (rows.get(r).name().equals(FLOOR_TWO_ROUNDS)) {
          floor = paused[r];
          floorFlat = unpaused[r];
        }
        floors
            .append(floors.length() == 0 ? "" : "; ")
            .append(rows.get(r).name().substring("floor: ".length()))
            .append(String.format(Locale.ROOT, " %.2f", unpaused[r].utilization()));
      }
    }
    out.printf(Locale.ROOT, "%nHand-off goals (issue 18), the default RedLock:%n");
    if (ours == null || oursFlat == null) {
      out.println("  not measured");
      return;
    }
    double p99 = ours.percentileMillis(0.99);
    goal(out, "p99 wait (pause 5 ms) <= 30 ms", p99 <= P99_GOAL_MILLIS, "%.1f ms", p99);
    if (rlock != null) {
      double theirs = rlock.percentileMillis(0.99);
      goal(
          out,
          "p99 wait (pause 5 ms) <= Redisson RLock's",
          p99 <= theirs,
          "%.1f ms vs %.1f ms",
          p99,
          theirs);
    }
    goal(
        out,
        "max wait (pause 5 ms) <= 100 ms",
        ours.maxMillis() <= MAX_GOAL_MILLIS,
        "%.1f ms",
        ours.maxMillis());
    goal(
        out,
        "utilization (pause 5 ms) >= 0.6",
        ours.utilization() >= UTILIZATION_GOAL_PAUSED,
        "%.2f",
        ours.utilization());
    Result[][] againstFloor = {{ours, floor}, {oursFlat, floorFlat}};
    for (Result[] pair : againstFloor) {
      if (pair[1] == null) {
        continue;
      }
      String which = pair[0] == ours ? "pause 5 ms" : "no pause";
      goal(
          out,
          "utilization (" + which + ") >= 0.9 x the two-round floor's",
          pair[0].utilization() >= FLOOR_SHARE_GOAL * pair[1].utilization(),
          "%.2f vs %.2f",
          pair[0].utilization(),
          pair[1].utilization());
    }
    if (floors.length() > 0) {
      out.printf(Locale.ROOT, "    the hand-written floors' utilization (no pause): %s%n", floors);
    }
    for (Result result : new Result[] {ours, oursFlat}) {
      String which = result == ours ? "pause 5 ms" : "no pause";
      goal(
          out,
          "fewest grants >= 0.6 x most (" + which + ")",
          result.fewest() >= FAIRNESS_GOAL * result.most(),
          "%d / %d",
          result.fewest(),
          result.most());
    }
    for (Result result : new Result[] {ours, oursFlat}) {
      String which = result == ours ? "pause 5 ms" : "no pause";
      goal(
          out,
          "overlapping holds = 0 (" + which + ")",
          result.overlaps() == 0,
          "%d",
          result.overlaps());
    }
    if (resets == null) {
      return;
    }
    out.printf(
        Locale.ROOT,
        "Reset goal (issue 30), every pub/sub connection killed every %d ms:%n",
        PUBSUB_KILL_EVERY.toMillis());
    double healthy = ours.percentileMillis(0.99);
    double reset = resets.percentileMillis(0.99);
    goal(
        out,
        "p99 wait (pause 5 ms) <= 2 x healthy + 10 ms",
        reset <= RESET_P99_FACTOR * healthy + RESET_P99_SLACK_MILLIS,
        "%.1f ms vs %.1f ms",
        reset,
        healthy);
    for (Result result : new Result[] {resets, resetsFlat}) {
      if (result != null) {
        String which = result == resets ? "pause 5 ms" : "no pause";
        goal(
            out,
            "overlapping holds = 0, resets (" + which + ")",
            result.overlaps() == 0,
            "%d",
            result.overlaps());
      }
    }
  }

  private static void goal(
      PrintStream out, String what, boolean met, String format, Object... figures) {
    out.printf(
        Locale.ROOT,
        "  %-46s %-24s %s%n",
        what,
        String.format(Locale.ROOT, format, figures),
        met ? "met" : "NOT met");
  }
}
