package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillChecks.Window;
import dev.redlock.drill.FaultPlan.Interval;
import dev.redlock.drill.FaultPlan.Kind;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import dev.redlock.drill.RoundLog.Rounds;
import dev.redlock.drill.Timeline.Overlap;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

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
 *   <li>the summary table, the faults as they ran and each master's answers.
 * </ul>
 *
 * Each lane and strip begins with a marker in a colour used nowhere else ({@link #LANE_MARKER},
 * {@link #STRIP_MARKER}), so a screenshot can be checked by counting them. Stateless.
 */
final class HtmlReport {

  /** The marker at the left of each worker's lane; no other pixel of the page has this colour. */
  static final int LANE_MARKER = 0x1a237e;

  /** The marker at the left of each master's strip; no other pixel has this colour. */
  static final int STRIP_MARKER = 0x880e4f;

  /** Overlapping leases: pure red, drawn over both lanes; no other pixel has this colour. */
  static final int OVERLAP = 0xff0000;

  /** Lane and strip height, in pixels; the markers are as tall. */
  static final int ROW_HEIGHT = 18;

  static final int PAGE_WIDTH = 1340;
  private static final int GUTTER = 170;
  private static final int RIGHT = 24;
  static final int PLOT_WIDTH = PAGE_WIDTH - GUTTER - RIGHT;
  private static final int ROW_GAP = 5;
  private static final int MARKER_WIDTH = 6;
  private static final int FAULT_ROW = 16;
  private static final int LATENCY_HEIGHT = 150;
  private static final int RATE_HEIGHT = 80;

  /** Worker colours, in turn; none is near a marker, red (overlaps) or the status colours' red. */
  private static final String[] WORKER_COLORS = {
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f",
    "#8cd17d", "#a0cbe8"
  };

  private static final Map<Status, String> STATUS_COLORS = new EnumMap<>(Status.class);
  private static final Map<Status, String> STATUS_LABELS = new EnumMap<>(Status.class);
  private static final Map<Kind, String> FAULT_COLORS = new EnumMap<>(Kind.class);

  static {
    STATUS_COLORS.put(Status.GRANTED, "#2e9e5b");
    STATUS_COLORS.put(Status.TAKEN, "#8fbfe0");
    STATUS_COLORS.put(Status.GONE, "#c7c7c7");
    STATUS_COLORS.put(Status.RESTARTED, "#9467bd");
    STATUS_COLORS.put(Status.FAILED, "#d62728");
    STATUS_COLORS.put(Status.TIMED_OUT, "#ff9f1c");
    STATUS_COLORS.put(Status.PENDING, "#e9ecef");
    STATUS_LABELS.put(Status.GRANTED, "granted");
    STATUS_LABELS.put(Status.TAKEN, "taken (held by another)");
    STATUS_LABELS.put(Status.GONE, "gone");
    STATUS_LABELS.put(Status.RESTARTED, "restarted (not voting)");
    STATUS_LABELS.put(Status.FAILED, "failed / refused");
    STATUS_LABELS.put(Status.TIMED_OUT, "timed out");
    STATUS_LABELS.put(Status.PENDING, "pending (round decided first)");
    FAULT_COLORS.put(Kind.PAUSE, "#f4b400");
    FAULT_COLORS.put(Kind.PARTITION, "#e8452c");
    FAULT_COLORS.put(Kind.BLACKHOLE, "#5f6b7a");
    FAULT_COLORS.put(Kind.LATENCY, "#2a7de1");
    FAULT_COLORS.put(Kind.KILL, "#7b3fb5");
  }

  private HtmlReport() {}

  /**
   * What the page says besides the recording.
   *
   * @param title the page's title
   * @param settings label and value rows describing the run (masters, workers, lock, plan)
   * @param plan the plan that ran
   * @param result the figures and the verdict
   */
  record Page(String title, List<String[]> settings, FaultPlan plan, Result result) {
    Page {
      requireNonNull(title, "title");
      settings = List.copyOf(settings);
      requireNonNull(plan, "plan");
      requireNonNull(result, "result");
    }
  }

  /** Writes the page to {@code path}, creating its directory if needed. */
  static void write(Path path, Page page, Timeline timeline) throws IOException {
    Path parent = path.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(path, render(page, timeline), StandardCharsets.UTF_8);
  }

  /** The page as HTML. */
  static String render(Page page, Timeline timeline) {
    requireNonNull(page, "page");
    requireNonNull(timeline, "timeline");
    StringBuilder html = new StringBuilder(256 * 1024);
    Result r = page.result();
    String verdict = DrillReport.verdict(r);
    String verdictClass = !r.passed() ? "failed" : r.assumptionBroken() ? "broken" : "passed";
    html.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        .append("<title>")
        .append(escape(page.title()))
        .append("</title>\n<style>\n")
        .append(CSS)
        .append("</style>\n</head>\n<body>\n");
    html.append("<h1>").append(escape(page.title())).append("</h1>\n");
    html.append("<p class=\"verdict ")
        .append(verdictClass)
        .append("\">")
        .append(escape(verdict))
        .append("</p>\n");
    html.append(new Chart(timeline).svg());
    legend(html, timeline);
    html.append("<div class=\"tables\">\n<div>\n<h2>Summary</h2>\n<table class=\"rows\">\n");
    for (String[] row : DrillReport.resultRows(r)) {
      tableRow(html, row[0], row[1]);
    }
    tableRow(html, "fencing", DrillReport.fencingLine(r.fencing()));
    tableRow(html, "verdict", verdict);
    html.append("</table>\n</div>\n<div>\n<h2>Run</h2>\n<table class=\"rows\">\n");
    for (String[] row : page.settings()) {
      tableRow(html, row[0], row[1]);
    }
    html.append("</table>\n");
    faultTable(html, page.plan(), timeline);
    masterTable(html, timeline);
    html.append("</div>\n</div>\n</body>\n</html>\n");
    return html.toString();
  }

  private static void tableRow(StringBuilder html, String label, String value) {
    html.append("<tr><th>")
        .append(escape(label))
        .append("</th><td>")
        .append(escape(value))
        .append("</td></tr>\n");
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

  /** The one SVG: every chart on one time axis. */
  private static final class Chart {
    private final Timeline t;
    private final long span; // nanoseconds the x axis covers
    private final StringBuilder svg = new StringBuilder(128 * 1024);
    private final List<List<FaultWindow>> faultRows;
    private int y;

    Chart(Timeline timeline) {
      this.t = timeline;
      long end = Math.max(1, timeline.elapsedNanos());
      for (FaultWindow w : timeline.faults()) {
        end = Math.max(end, w.ended());
      }
      this.span = end;
      this.faultRows = faultRows(timeline.faults());
    }

    String svg() {
      // Geometry first: every section's top, then the height of the whole.
      int axisTop = 18;
      int faultTop = axisTop + 8;
      int faultHeight =
          Math.max(1, faultRows.size()) * FAULT_ROW + (t.breaking().isEmpty() ? 0 : FAULT_ROW);
      int lanesTitle = faultTop + faultHeight + 22;
      int lanesTop = lanesTitle + 8;
      int lanesHeight = t.workers() * (ROW_HEIGHT + ROW_GAP);
      int stripsTitle = lanesTop + lanesHeight + 22;
      int stripsTop = stripsTitle + 8;
      int stripsHeight = t.masters().size() * (ROW_HEIGHT + ROW_GAP);
      int latencyTitle = stripsTop + stripsHeight + 22;
      int latencyTop = latencyTitle + 10;
      int rateTitle = latencyTop + LATENCY_HEIGHT + 26;
      int rateTop = rateTitle + 10;
      int height = rateTop + RATE_HEIGHT + 24;

      svg.append("<svg width=\"")
          .append(PAGE_WIDTH)
          .append("\" height=\"")
          .append(height)
          .append("\" viewBox=\"0 0 ")
          .append(PAGE_WIDTH)
          .append(' ')
          .append(height)
          .append("\" shape-rendering=\"crispEdges\">\n");
      axis(axisTop, height - 20);
      faultBars(faultTop);
      title(lanesTitle, "Leases: when each worker held the lock");
      lanes(lanesTop);
      title(stripsTitle, "Masters: answers in the acquire rounds");
      strips(stripsTop);
      title(latencyTitle, "tryAcquire latency of granted calls (p50 dark, p99 light; log scale)");
      latency(latencyTop);
      title(rateTitle, "Acquisitions per second");
      rate(rateTop);
      shading(faultTop, height - 20);
      svg.append("</svg>\n");
      return svg.toString();
    }

    private double x(long nanos) {
      return GUTTER + (double) PLOT_WIDTH * Math.max(0, Math.min(span, nanos)) / span;
    }

    /** The buckets: one per pixel column of the plot. */
    private long bucketStart(int b) {
      return span * b / PLOT_WIDTH;
    }

    private int bucketOf(long nanos) {
      if (nanos < 0) {
        return -1;
      }
      long b = nanos * PLOT_WIDTH / span;
      return (int) Math.min(PLOT_WIDTH - 1, b);
    }

    private void title(int top, String text) {
      svg.append("<text class=\"h\" x=\"")
          .append(GUTTER)
          .append("\" y=\"")
          .append(top)
          .append("\">")
          .append(escape(text))
          .append("</text>\n");
    }

    private void axis(int top, int bottom) {
      double seconds = span / 1e9;
      double step = niceStep(seconds / 12);
      for (double s = 0; s <= seconds + 1e-9; s += step) {
        double x = x((long) (s * 1e9));
        svg.append(
            String.format(
                Locale.ROOT,
                "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>%n",
                x,
                top + 4,
                x,
                bottom));
        svg.append(
            String.format(
                Locale.ROOT,
                "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s s</text>%n",
                x,
                top,
                trim(s)));
      }
      svg.append("<text class=\"tick\" x=\"")
          .append(GUTTER - 28)
          .append("\" y=\"")
          .append(top)
          .append("\" text-anchor=\"end\">since the workers started</text>\n");
    }

    private void shading(int top, int bottom) {
      for (FaultWindow w : t.faults()) {
        double x0 = x(w.began());
        double x1 = Math.max(x0 + 1, x(w.ended()));
        svg.append(
            String.format(
                Locale.ROOT,
                "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.12\"/>%n",
                x0,
                top,
                x1 - x0,
                bottom - top,
                FAULT_COLORS.get(w.fault().kind())));
      }
    }

    private void faultBars(int top) {
      int row = 0;
      svg.append("<text class=\"label\" x=\"")
          .append(MARKER_WIDTH + 6)
          .append("\" y=\"")
          .append(top + 12)
          .append("\">faults</text>\n");
      for (List<FaultWindow> windows : faultRows) {
        int ry = top + row * FAULT_ROW;
        for (FaultWindow w : windows) {
          double x0 = x(w.began());
          double x1 = Math.max(x0 + 2, x(w.ended()));
          String color = FAULT_COLORS.get(w.fault().kind());
          svg.append(
              String.format(
                  Locale.ROOT,
                  "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.85\"/>%n",
                  x0,
                  ry + 1,
                  x1 - x0,
                  FAULT_ROW - 3,
                  color));
          svg.append(
              String.format(
                  Locale.ROOT,
                  "<text class=\"fault\" x=\"%.1f\" y=\"%d\">%s</text>%n",
                  x0 + 3,
                  ry + 11,
                  escape(faultLabel(w))));
        }
        row++;
      }
      if (!t.breaking().isEmpty()) {
        int ry = top + Math.max(1, faultRows.size()) * FAULT_ROW;
        for (Interval interval : t.breaking()) {
          double x0 = x(interval.from().toNanos());
          double x1 = Math.max(x0 + 2, x(interval.to().toNanos()));
          svg.append(
              String.format(
                  Locale.ROOT,
                  "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#d62728\" fill-opacity=\"0.25\" stroke=\"#d62728\"/>%n",
                  x0,
                  ry + 1,
                  x1 - x0,
                  FAULT_ROW - 3));
          svg.append(
              String.format(
                  Locale.ROOT,
                  "<text class=\"fault\" x=\"%.1f\" y=\"%d\" fill=\"#8b0000\">quorum at risk (planned)</text>%n",
                  x0 + 3,
                  ry + 11));
        }
      }
    }

    private static String faultLabel(FaultWindow w) {
      return w.fault().summary() + (w.errors().isEmpty() ? "" : " (FAILED)");
    }

    /** Faults in rows, so that no two bars or labels of a row overlap. */
    private List<List<FaultWindow>> faultRows(List<FaultWindow> windows) {
      List<List<FaultWindow>> rows = new ArrayList<>();
      List<Double> rowEnds = new ArrayList<>();
      for (FaultWindow w : windows) {
        double x0 = x(w.began());
        double end = Math.max(x(w.ended()), x0 + 6.2 * faultLabel(w).length() + 8);
        int row = 0;
        while (row < rows.size() && rowEnds.get(row) > x0) {
          row++;
        }
        if (row == rows.size()) {
          rows.add(new ArrayList<>());
          rowEnds.add(end);
        } else {
          rowEnds.set(row, end);
        }
        rows.get(row).add(w);
      }
      return rows;
    }

    private void marker(int top, int color, String label) {
      svg.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%06x\"/>%n",
              top,
              MARKER_WIDTH,
              ROW_HEIGHT,
              color));
      svg.append(
          String.format(
              Locale.ROOT,
              "<text class=\"label\" x=\"%d\" y=\"%d\">%s</text>%n",
              MARKER_WIDTH + 6,
              top + 13,
              escape(label)));
      svg.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f5f7\"/>%n",
              GUTTER,
              top,
              PLOT_WIDTH,
              ROW_HEIGHT));
    }

    private void lanes(int top) {
      double fair = 1.0 / Math.max(1, t.workers());
      for (int w = 0; w < t.workers(); w++) {
        int ly = top + w * (ROW_HEIGHT + ROW_GAP);
        List<Window> leases = t.leases().get(w);
        marker(
            ly,
            LANE_MARKER,
            "worker " + (w + 1) + "  (" + String.format(Locale.ROOT, "%,d", leases.size()) + ")");
        double[] held = new double[PLOT_WIDTH];
        for (Window lease : leases) {
          addShare(held, lease.from(), lease.to());
        }
        String color = WORKER_COLORS[w % WORKER_COLORS.length];
        // Run-length: neighbouring buckets of the same (rounded) shade are one rectangle.
        int runStart = -1;
        int runLevel = 0;
        for (int b = 0; b <= PLOT_WIDTH; b++) {
          int level = 0;
          if (b < PLOT_WIDTH && held[b] > 0) {
            level = (int) Math.ceil(Math.min(1.0, held[b] / fair) * 5); // 1..5
          }
          if (b == PLOT_WIDTH || level != runLevel) {
            if (runLevel > 0) {
              svg.append(
                  String.format(
                      Locale.ROOT,
                      "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" fill-opacity=\"%.2f\"/>%n",
                      GUTTER + runStart,
                      ly,
                      b - runStart,
                      ROW_HEIGHT,
                      color,
                      0.4 + 0.12 * runLevel));
            }
            runStart = b;
            runLevel = level;
          }
        }
      }
      for (Overlap o : t.overlaps()) {
        double x0 = x(o.from());
        double width = Math.max(3, x(o.to()) - x0);
        for (int w : new int[] {o.earlierWorker(), o.laterWorker()}) {
          int ly = top + w * (ROW_HEIGHT + ROW_GAP);
          svg.append(
              String.format(
                  Locale.ROOT,
                  "<rect class=\"overlap\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\""
                      + " fill=\"#%06x\"/>%n",
                  x0,
                  ly - 2,
                  width,
                  ROW_HEIGHT + 4,
                  OVERLAP));
        }
      }
    }

    /** Adds the share of each bucket that {@code [from, to)} covers. */
    private void addShare(double[] share, long from, long to) {
      if (to <= from || to <= 0) {
        return;
      }
      long start = Math.max(0, from);
      int first = bucketOf(start);
      int last = bucketOf(Math.min(to, span) - 1);
      for (int b = first; b <= last && b >= 0; b++) {
        long bFrom = bucketStart(b);
        long bTo = bucketStart(b + 1);
        long covered = Math.min(to, bTo) - Math.max(start, bFrom);
        if (covered > 0 && bTo > bFrom) {
          share[b] += (double) covered / (bTo - bFrom);
        }
      }
    }

    private void strips(int top) {
      int masters = t.masters().size();
      Status[] statuses = Status.values();
      long[][][] counts = new long[masters][PLOT_WIDTH][statuses.length];
      for (Rounds rounds : t.rounds()) {
        for (int i = 0; i < rounds.size(); i++) {
          int b = bucketOf(rounds.time(i));
          if (b < 0) {
            continue;
          }
          for (int m = 0; m < masters; m++) {
            counts[m][b][rounds.status(i, m).ordinal()]++;
          }
        }
      }
      for (int m = 0; m < masters; m++) {
        int sy = top + m * (ROW_HEIGHT + ROW_GAP);
        marker(sy, STRIP_MARKER, "master " + (m + 1) + "  " + t.masters().get(m));
        // Each bucket a stacked column of pixel heights per status, rounded so they sum to the
        // row; neighbouring columns with equal stacks are drawn as one.
        int[] previous = null;
        int runStart = 0;
        for (int b = 0; b <= PLOT_WIDTH; b++) {
          int[] stack = b < PLOT_WIDTH ? stack(counts[m][b]) : null;
          if (b == PLOT_WIDTH || !Arrays.equals(stack, previous)) {
            if (previous != null) {
              column(GUTTER + runStart, sy, b - runStart, previous);
            }
            previous = stack;
            runStart = b;
          }
        }
        for (FaultWindow w : t.faults()) {
          if (w.fault().masters().contains(m + 1)) {
            double x0 = x(w.began());
            double x1 = Math.max(x0 + 2, x(w.ended()));
            svg.append(
                String.format(
                    Locale.ROOT,
                    "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>%n",
                    x0,
                    sy - 1,
                    x1 - x0,
                    ROW_HEIGHT + 2,
                    FAULT_COLORS.get(w.fault().kind())));
          }
        }
      }
    }

    /** Pixel heights per status for one bucket (largest remainder); null if no round. */
    private static int[] stack(long[] counts) {
      long total = 0;
      for (long c : counts) {
        total += c;
      }
      if (total == 0) {
        return null;
      }
      int[] heights = new int[counts.length];
      double[] remainders = new double[counts.length];
      int used = 0;
      for (int s = 0; s < counts.length; s++) {
        double exact = (double) ROW_HEIGHT * counts[s] / total;
        heights[s] = (int) exact;
        remainders[s] = exact - heights[s];
        used += heights[s];
      }
      while (used < ROW_HEIGHT) {
        int best = 0;
        for (int s = 1; s < counts.length; s++) {
          if (remainders[s] > remainders[best]) {
            best = s;
          }
        }
        heights[best]++;
        remainders[best] = -1;
        used++;
      }
      return heights;
    }

    private void column(int x, int top, int width, int[] heights) {
      int yy = top;
      Status[] statuses = Status.values();
      for (int s = 0; s < heights.length; s++) {
        if (heights[s] > 0) {
          svg.append(
              String.format(
                  Locale.ROOT,
                  "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>%n",
                  x,
                  yy,
                  width,
                  heights[s],
                  STATUS_COLORS.get(statuses[s])));
          yy += heights[s];
        }
      }
    }

    private void latency(int top) {
      long[][] perBucket = collectLatencies();
      long max = 1;
      for (long[] bucket : perBucket) {
        if (bucket.length > 0) {
          max = Math.max(max, bucket[bucket.length - 1]);
        }
      }
      double lowMs = 0.05;
      double highMs = Math.pow(10, Math.ceil(Math.log10(Math.max(1.0, max / 1e6))));
      svg.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fbfbfc\" stroke=\"#d0d4da\"/>%n",
              GUTTER,
              top,
              PLOT_WIDTH,
              LATENCY_HEIGHT));
      for (double ms = 0.1; ms <= highMs * 1.0001; ms *= 10) {
        double yy = latencyY(ms, lowMs, highMs, top);
        svg.append(
            String.format(
                Locale.ROOT,
                "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>%n",
                GUTTER,
                yy,
                GUTTER + PLOT_WIDTH,
                yy));
        svg.append(
            String.format(
                Locale.ROOT,
                "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s ms</text>%n",
                GUTTER - 6,
                yy + 4,
                trim(ms)));
      }
      polyline(perBucket, 99, "#6baed6", lowMs, highMs, top);
      polyline(perBucket, 50, "#08519c", lowMs, highMs, top);
    }

    private long[][] collectLatencies() {
      int[] sizes = new int[PLOT_WIDTH];
      for (long[] times : t.grantTimes()) {
        for (long time : times) {
          int b = bucketOf(time);
          if (b >= 0) {
            sizes[b]++;
          }
        }
      }
      long[][] perBucket = new long[PLOT_WIDTH][];
      for (int b = 0; b < PLOT_WIDTH; b++) {
        perBucket[b] = new long[sizes[b]];
      }
      int[] filled = new int[PLOT_WIDTH];
      for (int w = 0; w < t.workers(); w++) {
        long[] times = t.grantTimes().get(w);
        long[] latencies = t.grantLatencies().get(w);
        for (int g = 0; g < times.length; g++) {
          int b = bucketOf(times[g]);
          if (b >= 0) {
            perBucket[b][filled[b]++] = latencies[g];
          }
        }
      }
      for (long[] bucket : perBucket) {
        Arrays.sort(bucket);
      }
      return perBucket;
    }

    private static double latencyY(double ms, double lowMs, double highMs, int top) {
      double clamped = Math.max(lowMs, Math.min(highMs, ms));
      double f = Math.log(clamped / lowMs) / Math.log(highMs / lowMs);
      return top + LATENCY_HEIGHT - f * LATENCY_HEIGHT;
    }

    private void polyline(
        long[][] perBucket, double percent, String color, double lowMs, double highMs, int top) {
      StringBuilder points = new StringBuilder();
      for (int b = 0; b <= PLOT_WIDTH; b++) {
        if (b < PLOT_WIDTH && perBucket[b].length > 0) {
          double ms = Percentiles.nearestRank(perBucket[b], percent) / 1e6;
          points.append(
              String.format(Locale.ROOT, "%d,%.1f ", GUTTER + b, latencyY(ms, lowMs, highMs, top)));
        } else if (points.length() > 0) {
          svg.append("<polyline fill=\"none\" stroke=\"")
              .append(color)
              .append("\" stroke-width=\"1.5\" shape-rendering=\"geometricPrecision\" points=\"")
              .append(points.toString().strip())
              .append("\"/>\n");
          points.setLength(0);
        }
      }
    }

    private void rate(int top) {
      double bucketSeconds = span / 1e9 / PLOT_WIDTH;
      // Smooth over about a tenth of a second so a few grants per pixel do not look like noise.
      int window = (int) Math.max(1, Math.round(0.1 / bucketSeconds));
      double[] perSecond = new double[PLOT_WIDTH];
      long[] grants = new long[PLOT_WIDTH];
      for (long[] times : t.grantTimes()) {
        for (long time : times) {
          int b = bucketOf(time);
          if (b >= 0) {
            grants[b]++;
          }
        }
      }
      double max = 1;
      for (int b = 0; b < PLOT_WIDTH; b++) {
        long sum = 0;
        int n = 0;
        for (int k = Math.max(0, b - window / 2);
            k <= Math.min(PLOT_WIDTH - 1, b + window / 2);
            k++) {
          sum += grants[k];
          n++;
        }
        perSecond[b] = sum / (n * bucketSeconds);
        max = Math.max(max, perSecond[b]);
      }
      double step = niceStep(max / 4);
      double high = Math.ceil(max / step) * step;
      svg.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fbfbfc\" stroke=\"#d0d4da\"/>%n",
              GUTTER,
              top,
              PLOT_WIDTH,
              RATE_HEIGHT));
      for (double v : new double[] {0, high / 2, high}) {
        double yy = top + RATE_HEIGHT - v / high * RATE_HEIGHT;
        svg.append(
            String.format(
                Locale.ROOT,
                "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%,.0f/s</text>%n",
                GUTTER - 6,
                yy + 4,
                v));
      }
      StringBuilder points = new StringBuilder();
      points.append(GUTTER).append(',').append(top + RATE_HEIGHT).append(' ');
      for (int b = 0; b < PLOT_WIDTH; b++) {
        points.append(
            String.format(
                Locale.ROOT,
                "%d,%.1f ",
                GUTTER + b,
                top + RATE_HEIGHT - perSecond[b] / high * RATE_HEIGHT));
      }
      points.append(GUTTER + PLOT_WIDTH - 1).append(',').append(top + RATE_HEIGHT);
      svg.append(
              "<polygon fill=\"#4e79a7\" fill-opacity=\"0.35\" stroke=\"#4e79a7\" stroke-width=\"1\" shape-rendering=\"geometricPrecision\" points=\"")
          .append(points)
          .append("\"/>\n");
    }

    /** A step of 1, 2 or 5 times a power of ten, at least {@code rough}. */
    private static double niceStep(double rough) {
      if (rough <= 0) {
        return 1;
      }
      double power = Math.pow(10, Math.floor(Math.log10(rough)));
      for (double m : new double[] {1, 2, 5, 10}) {
        if (m * power >= rough) {
          return m * power;
        }
      }
      return 10 * power;
    }

    private static String trim(double value) {
      String s = String.format(Locale.ROOT, "%.3f", value);
      s = s.replaceAll("0+$", "");
      return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
    }
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
