package dev.redlock.drill;

import static dev.redlock.drill.HtmlStyle.FAULT_COLORS;
import static dev.redlock.drill.HtmlStyle.OVERLAP;
import static dev.redlock.drill.HtmlStyle.STATUS_COLORS;
import static dev.redlock.drill.HtmlStyle.STATUS_LABELS;
import static java.util.Objects.requireNonNull;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.FaultPlan.Kind;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The drill's HTML report: one self-contained page (inline SVG and CSS; no script, font, image or
 * style sheet is fetched) with, on one time axis in seconds since the workers started:
 *
 * <ul>
 *   <li>the faults as they ran, one labelled bar each, and each fault's window shaded across every
 *       chart below (and outlined on the strip of each master it harmed); intervals in which more
 *       than a minority of masters was faulted are marked "quorum at risk";
 *   <li>a lane per worker showing when it held the lock: the plot is cut into one-pixel buckets and
 *       a bucket is drawn in the worker's colour, the darker the larger its share of the bucket
 *       (full colour at a fair share, 1 / workers); overlapping leases are marked in red;
 *   <li>a strip per master with its answers in the acquire rounds: each bucket a stacked column of
 *       the share of each answer (granted, taken, gone, restarted, failed, timed out, pending);
 *   <li>the latency of the successful tryAcquire calls (p50 and p99 per bucket, log scale) and the
 *       acquisitions per second;
 *   <li>the summary table, each worker's wait for the lock, the run's settings, the faults as they
 *       ran and each master's answers.
 * </ul>
 *
 * Each lane and strip begins with a marker in a colour used nowhere else ({@link
 * HtmlStyle#LANE_MARKER}, {@link HtmlStyle#STRIP_MARKER}), so a screenshot can be checked by
 * counting them. The last stage of the drill's pipeline (plan, run, result, reports), with {@link
 * TextReport}: the page is a function of the {@link DrillResult}. The page is put together here;
 * {@link HtmlChart} draws the SVG ({@link HtmlLanes} its lanes and strips), {@link HtmlTables} the
 * tables, with the look of {@link HtmlStyle}. Stateless.
 */
final class HtmlReport {

  private HtmlReport() {}

  /** Writes the page to {@code path}, creating its directory if needed. */
  static void write(Path path, DrillResult drill) throws IOException {
    Path parent = path.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(path, render(drill), StandardCharsets.UTF_8);
  }

  /** The page's title: {@code "RedLock drill: 8 workers, 5 masters"}. */
  static String title(DrillResult drill) {
    return "RedLock drill: "
        + drill.plan().workers()
        + " workers, "
        + drill.setup().uris().size()
        + " masters";
  }

  /** The page as HTML. */
  static String render(DrillResult drill) {
    requireNonNull(drill, "drill");
    Timeline timeline = drill.timeline();
    StringBuilder html = new StringBuilder(256 * 1024);
    Result r = drill.checks();
    String title = title(drill);
    String verdict = ResultRows.verdict(r);
    String verdictClass = !r.passed() ? "failed" : r.assumptionBroken() ? "broken" : "passed";
    html.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        .append("<title>")
        .append(escape(title))
        .append("</title>\n<style>\n")
        .append(CSS)
        .append("</style>\n</head>\n<body>\n");
    html.append("<h1>").append(escape(title)).append("</h1>\n");
    html.append("<p class=\"verdict ")
        .append(verdictClass)
        .append("\">")
        .append(escape(verdict))
        .append("</p>\n");
    html.append(new HtmlChart(timeline).svg());
    legend(html, timeline);
    HtmlTables.append(html, drill);
    html.append("</body>\n</html>\n");
    return html.toString();
  }

  private static void legend(StringBuilder html, Timeline timeline) {
    html.append("<div class=\"legend\"><span class=\"title\">Masters' answers:</span>");
    for (Status status : Status.values()) {
      swatch(html, STATUS_COLORS.get(status), STATUS_LABELS.get(status));
    }
    html.append("<br><span class=\"title\">Faults:</span>");
    for (Kind kind : Kind.values()) {
      swatch(html, FAULT_COLORS.get(kind), kind.word());
    }
    swatch(html, String.format(Locale.ROOT, "#%06x", OVERLAP), "overlapping leases");
    html.append("<span class=\"note\">Lanes: when each worker held the lock (darker: a larger")
        .append(" share of the moment; full colour at a fair share of 1/")
        .append(Math.max(1, timeline.workers()))
        .append(").</span></div>\n");
  }

  private static void swatch(StringBuilder html, String color, String label) {
    html.append("<span class=\"swatch\"><i style=\"background:")
        .append(color)
        .append("\"></i>")
        .append(escape(label))
        .append("</span>");
  }

  private static final String CSS =
      """
      body { font: 13px/1.45 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif;
             color: #1f2933; margin: 16px 20px; background: #ffffff; }
      h1 { font-size: 20px; margin: 0 0 4px 0; }
      h2 { font-size: 15px; margin: 18px 0 6px 0; }
      .verdict { display: inline-block; margin: 4px 0 10px 0; padding: 4px 10px; border-radius: 4px;
                 font-weight: 600; }
      .verdict.passed { background: #e3f4e8; color: #1b6e3a; }
      .verdict.failed { background: #fde2e1; color: #a11a16; }
      .verdict.broken { background: #fff1d6; color: #8a5a00; }
      svg { display: block; }
      svg text { font-family: inherit; fill: #1f2933; }
      svg .h { font-size: 13px; font-weight: 600; }
      svg .label { font-size: 12px; }
      svg .tick { font-size: 11px; fill: #52606d; }
      svg .fault { font-size: 11px; fill: #111111; }
      svg .grid { stroke: #e4e7eb; stroke-width: 1; }
      .legend { margin: 4px 0 0 170px; font-size: 12px; }
      .legend .title { font-weight: 600; margin-right: 6px; }
      .legend .note { display: block; color: #52606d; }
      .swatch { margin-right: 12px; white-space: nowrap; }
      .swatch i { display: inline-block; width: 11px; height: 11px; margin-right: 4px;
                  vertical-align: -1px; border: 1px solid #9aa5b1; }
      .tables { display: flex; gap: 32px; align-items: flex-start; flex-wrap: wrap; }
      table { border-collapse: collapse; }
      table.rows th { text-align: left; padding: 1px 14px 1px 0; font-weight: 600;
                      white-space: nowrap; vertical-align: top; }
      table.rows td { padding: 1px 0; }
      table.grid th, table.grid td { border: 1px solid #d9dee3; padding: 2px 8px; }
      table.grid th { background: #f4f5f7; }
      td.num { text-align: right; font-variant-numeric: tabular-nums; }
      """;

  /** Escapes text for HTML content and attribute values. */
  static String escape(String text) {
    StringBuilder out = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '<' -> out.append("&lt;");
        case '>' -> out.append("&gt;");
        case '&' -> out.append("&amp;");
        case '"' -> out.append("&quot;");
        case '\'' -> out.append("&#39;");
        default -> out.append(c);
      }
    }
    return out.toString();
  }
}
