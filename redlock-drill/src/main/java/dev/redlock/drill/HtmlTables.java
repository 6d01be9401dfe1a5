package dev.redlock.drill;

import static dev.redlock.drill.HtmlReport.escape;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The tables of the drill's HTML report: the summary (the figures, the fencing line, the verdict),
 * each worker's wait for the lock, the run's settings, the faults as they ran and each master's
 * answers. Pure functions of the result, appended to the page; stateless.
 */
final class HtmlTables {

  private HtmlTables() {}

  /** The summary and the waits (left), the run, the faults and the masters' answers (right). */
  static void append(StringBuilder html, DrillResult drill) {
    Result r = drill.checks();
    html.append("<div class=\"tables\">\n<div>\n<h2>Summary</h2>\n<table class=\"rows\">\n");
    for (String[] row : ResultRows.summary(r)) {
      tableRow(html, row[0], row[1]);
    }
    tableRow(html, "fencing", ResultRows.fencingLine(r.fencing()));
    tableRow(html, "verdict", ResultRows.verdict(r));
    html.append("</table>\n");
    waitTable(html, drill);
    html.append("</div>\n<div>\n<h2>Run</h2>\n<table class=\"rows\">\n");
    for (String[] row : settings(drill)) {
      tableRow(html, row[0], row[1]);
    }
    html.append("</table>\n");
    faultTable(html, drill.plan().faultPlan(), drill.timeline());
    masterTable(html, drill.timeline());
    html.append("</div>\n</div>\n");
  }

  /** The run's settings: masters, workers, duration, lock and the fault plan. */
  static List<String[]> settings(DrillResult drill) {
    DrillPlan plan = drill.plan();
    List<String[]> rows = new ArrayList<>();
    for (String[] row : TextReport.run(plan, drill.setup())) {
      boolean lock = row[0].equals("lock");
      rows.add(lock ? new String[] {"lock", row[1] + "; the library's defaults otherwise"} : row);
    }
    FaultPlan faults = plan.faultPlan();
    if (!faults.isEmpty()) {
      rows.add(new String[] {"fault plan", faults.source()});
      for (FaultPlan.Fault fault : faults.faults()) {
        rows.add(new String[] {"", faults.unit() + " " + fault.line() + ": " + fault.text()});
      }
      rows.add(new String[] {"fault injection", String.join(" ", drill.setup().injection())});
    }
    return rows;
  }

  /** Each worker's grants and p50, p99 and max wait before a grant. */
  private static void waitTable(StringBuilder html, DrillResult drill) {
    html.append("<h2>Wait for the lock per worker</h2>\n<table class=\"grid waits\">\n<tr>");
    for (String column : ResultRows.WAIT_COLUMNS) {
      html.append("<th>").append(escape(column)).append("</th>");
    }
    html.append("</tr>\n");
    for (List<String> row : ResultRows.waits(drill.waits())) {
      html.append("<tr>");
      for (String cell : row) {
        html.append("<td class=\"num\">").append(escape(cell)).append("</td>");
      }
      html.append("</tr>\n");
    }
    html.append("</table>\n");
  }

  private static void tableRow(StringBuilder html, String label, String value) {
    html.append("<tr><th>")
        .append(escape(label))
        .append("</th><td>")
        .append(escape(value))
        .append("</td></tr>\n");
  }

  private static void faultTable(StringBuilder html, FaultPlan plan, Timeline timeline) {
    if (plan.isEmpty()) {
      return;
    }
    html.append("<h2>Faults as they ran</h2>\n<table class=\"grid\">\n")
        .append("<tr><th>")
        .append(escape(plan.unit()))
        .append("</th><th>fault</th><th>began (s)</th><th>ended (s)</th><th></th></tr>\n");
    for (FaultWindow w : timeline.faults()) {
      html.append("<tr><td>")
          .append(w.fault().line())
          .append("</td><td>")
          .append(escape(w.fault().summary()))
          .append("</td><td class=\"num\">")
          .append(String.format(Locale.ROOT, "%.3f", w.began() / 1e9))
          .append("</td><td class=\"num\">")
          .append(String.format(Locale.ROOT, "%.3f", w.ended() / 1e9))
          .append("</td><td>")
          .append(escape(w.errors().isEmpty() ? "" : "FAILED: " + String.join("; ", w.errors())))
          .append("</td></tr>\n");
    }
    html.append("</table>\n");
  }

  private static void masterTable(StringBuilder html, Timeline timeline) {
    List<Map<Status, Long>> counts = timeline.outcomeCounts();
    if (counts.isEmpty()) {
      return;
    }
    html.append("<h2>Masters' answers (share of acquire rounds)</h2>\n<table class=\"grid\">\n")
        .append("<tr><th>master</th>");
    for (Status status : Status.values()) {
      html.append("<th>").append(status.name().toLowerCase(Locale.ROOT)).append("</th>");
    }
    html.append("</tr>\n");
    for (int m = 0; m < counts.size(); m++) {
      long total = counts.get(m).values().stream().mapToLong(Long::longValue).sum();
      html.append("<tr><td>")
          .append(m + 1)
          .append(" ")
          .append(escape(timeline.masters().get(m)))
          .append("</td>");
      for (Status status : Status.values()) {
        html.append("<td class=\"num\">")
            .append(
                String.format(
                    Locale.ROOT,
                    "%.1f%%",
                    total == 0 ? 0.0 : 100.0 * counts.get(m).get(status) / total))
            .append("</td>");
      }
      html.append("</tr>\n");
    }
    html.append("</table>\n");
  }
}
