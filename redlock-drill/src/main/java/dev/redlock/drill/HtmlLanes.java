package dev.redlock.drill;

import static dev.redlock.drill.HtmlStyle.FAULT_COLORS;
import static dev.redlock.drill.HtmlStyle.GUTTER;
import static dev.redlock.drill.HtmlStyle.LANE_MARKER;
import static dev.redlock.drill.HtmlStyle.MARKER_WIDTH;
import static dev.redlock.drill.HtmlStyle.OVERLAP;
import static dev.redlock.drill.HtmlStyle.PLOT_WIDTH;
import static dev.redlock.drill.HtmlStyle.ROW_GAP;
import static dev.redlock.drill.HtmlStyle.ROW_HEIGHT;
import static dev.redlock.drill.HtmlStyle.STATUS_COLORS;
import static dev.redlock.drill.HtmlStyle.STRIP_MARKER;
import static dev.redlock.drill.HtmlStyle.WORKER_COLORS;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.DrillChecks.Window;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import dev.redlock.drill.RoundLog.Rounds;
import dev.redlock.drill.Timeline.Overlap;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The lanes and strips of the HTML report's chart: a lane per worker showing when it held the lock
 * (the plot cut into one-pixel buckets, a bucket the darker the larger its share of the bucket,
 * full colour at a fair share; overlapping leases in red), and a strip per master with its answers
 * in the acquire rounds (each bucket a stacked column of the share of each answer). Each row begins
 * with its marker. Draws into the chart's SVG; one per chart.
 */
final class HtmlLanes {

  private final Timeline t;
  private final ChartScale scale;
  private final StringBuilder svg;

  HtmlLanes(Timeline timeline, ChartScale scale, StringBuilder svg) {
    this.t = timeline;
    this.scale = scale;
    this.svg = svg;
  }

  /** How tall {@code rows} lanes or strips are, gaps included. */
  static int height(int rows) {
    return rows * (ROW_HEIGHT + ROW_GAP);
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
            HtmlReport.escape(label)));
    svg.append(
        String.format(
            Locale.ROOT,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f5f7\"/>%n",
            GUTTER,
            top,
            PLOT_WIDTH,
            ROW_HEIGHT));
  }

  /** A lane per worker, from {@code top}. */
  void lanes(int top) {
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
      String color = WORKER_COLORS.get(w % WORKER_COLORS.size());
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
      double x0 = scale.x(o.from());
      double width = Math.max(3, scale.x(o.to()) - x0);
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
    int first = scale.bucketOf(start);
    int last = scale.bucketOf(Math.min(to, scale.span()) - 1);
    for (int b = first; b <= last && b >= 0; b++) {
      long bFrom = scale.bucketStart(b);
      long bTo = scale.bucketStart(b + 1);
      long covered = Math.min(to, bTo) - Math.max(start, bFrom);
      if (covered > 0 && bTo > bFrom) {
        share[b] += (double) covered / (bTo - bFrom);
      }
    }
  }

  /** A strip per master, from {@code top}. */
  void strips(int top) {
    int masters = t.masters().size();
    Status[] statuses = Status.values();
    long[][][] counts = new long[masters][PLOT_WIDTH][statuses.length];
    for (Rounds rounds : t.rounds()) {
      for (int i = 0; i < rounds.size(); i++) {
        int b = scale.bucketOf(rounds.time(i));
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
          double x0 = scale.x(w.began());
          double x1 = Math.max(x0 + 2, scale.x(w.ended()));
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
}
