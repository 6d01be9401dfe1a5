package dev.redlock.drill;

import static dev.redlock.drill.HtmlStyle.FAULT_COLORS;
import static dev.redlock.drill.HtmlStyle.FAULT_ROW;
import static dev.redlock.drill.HtmlStyle.GUTTER;
import static dev.redlock.drill.HtmlStyle.LATENCY_HEIGHT;
import static dev.redlock.drill.HtmlStyle.MARKER_WIDTH;
import static dev.redlock.drill.HtmlStyle.PAGE_WIDTH;
import static dev.redlock.drill.HtmlStyle.PLOT_WIDTH;
import static dev.redlock.drill.HtmlStyle.RATE_HEIGHT;

import dev.redlock.drill.FaultPlan.Interval;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The HTML report's one SVG: every chart on one time axis in seconds since the workers started. The
 * faults as they ran, one labelled bar each (intervals in which more than a minority of masters was
 * faulted marked "quorum at risk") and each fault's window shaded across every chart below; the
 * workers' lanes and the masters' strips ({@link HtmlLanes}); the latency of the successful
 * tryAcquire calls (p50 and p99 per bucket, log scale) and the acquisitions per second. One per
 * page.
 */
final class HtmlChart {
  private final Timeline t;
  private final ChartScale scale;
  private final StringBuilder svg = new StringBuilder(128 * 1024);
  private final List<List<FaultWindow>> faultRows;

  HtmlChart(Timeline timeline) {
    this.t = timeline;
    long end = Math.max(1, timeline.elapsedNanos());
    for (FaultWindow w : timeline.faults()) {
      end = Math.max(end, w.ended());
    }
    this.scale = new ChartScale(end);
    this.faultRows = faultRows(timeline.faults());
  }

  /** The SVG element. */
  String svg() {
    // Geometry first: every section's top, then the height of the whole.
    int axisTop = 18;
    int faultTop = axisTop + 8;
    int faultHeight =
        Math.max(1, faultRows.size()) * FAULT_ROW + (t.breaking().isEmpty() ? 0 : FAULT_ROW);
    int lanesTitle = faultTop + faultHeight + 22;
    int lanesTop = lanesTitle + 8;
    int lanesHeight = HtmlLanes.height(t.workers());
    int stripsTitle = lanesTop + lanesHeight + 22;
    int stripsTop = stripsTitle + 8;
    int stripsHeight = HtmlLanes.height(t.masters().size());
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
    HtmlLanes rows = new HtmlLanes(t, scale, svg);
    rows.lanes(lanesTop);
    title(stripsTitle, "Masters: answers in the acquire rounds");
    rows.strips(stripsTop);
    title(latencyTitle, "tryAcquire latency of granted calls (p50 dark, p99 light; log scale)");
    latency(latencyTop);
    title(rateTitle, "Acquisitions per second");
    rate(rateTop);
    shading(faultTop, height - 20);
    svg.append("</svg>\n");
    return svg.toString();
  }

  private void title(int top, String text) {
    svg.append("<text class=\"h\" x=\"")
        .append(GUTTER)
        .append("\" y=\"")
        .append(top)
        .append("\">")
        .append(HtmlReport.escape(text))
        .append("</text>\n");
  }

  private void axis(int top, int bottom) {
    double seconds = scale.span() / 1e9;
    double step = ChartScale.niceStep(seconds / 12);
    for (double s = 0; s <= seconds + 1e-9; s += step) {
      double x = scale.x((long) (s * 1e9));
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
              ChartScale.trim(s)));
    }
    svg.append("<text class=\"tick\" x=\"")
        .append(GUTTER - 28)
        .append("\" y=\"")
        .append(top)
        .append("\" text-anchor=\"end\">since the workers started</text>\n");
  }

  private void shading(int top, int bottom) {
    for (FaultWindow w : t.faults()) {
      double x0 = scale.x(w.began());
      double x1 = Math.max(x0 + 1, scale.x(w.ended()));
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
        double x0 = scale.x(w.began());
        double x1 = Math.max(x0 + 2, scale.x(w.ended()));
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
                HtmlReport.escape(faultLabel(w))));
      }
      row++;
    }
    if (!t.breaking().isEmpty()) {
      int ry = top + Math.max(1, faultRows.size()) * FAULT_ROW;
      for (Interval interval : t.breaking()) {
        double x0 = scale.x(interval.from().toNanos());
        double x1 = Math.max(x0 + 2, scale.x(interval.to().toNanos()));
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
      double x0 = scale.x(w.began());
      double end = Math.max(scale.x(w.ended()), x0 + 6.2 * faultLabel(w).length() + 8);
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
    plotBackground(top, LATENCY_HEIGHT);
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
              ChartScale.trim(ms)));
    }
    polyline(perBucket, 99, "#6baed6", lowMs, highMs, top);
    polyline(perBucket, 50, "#08519c", lowMs, highMs, top);
  }

  private long[][] collectLatencies() {
    int[] sizes = new int[PLOT_WIDTH];
    for (long[] times : t.grantTimes()) {
      for (long time : times) {
        int b = scale.bucketOf(time);
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
        int b = scale.bucketOf(times[g]);
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
    double bucketSeconds = scale.span() / 1e9 / PLOT_WIDTH;
    // Smooth over about a tenth of a second so a few grants per pixel do not look like noise.
    int window = (int) Math.max(1, Math.round(0.1 / bucketSeconds));
    double[] perSecond = new double[PLOT_WIDTH];
    long[] grants = new long[PLOT_WIDTH];
    for (long[] times : t.grantTimes()) {
      for (long time : times) {
        int b = scale.bucketOf(time);
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
    double step = ChartScale.niceStep(max / 4);
    double high = Math.ceil(max / step) * step;
    plotBackground(top, RATE_HEIGHT);
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

  /** The background of a plot of {@code height} pixels from {@code top}. */
  private void plotBackground(int top, int height) {
    svg.append(
        String.format(
            Locale.ROOT,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fbfbfc\" stroke=\"#d0d4da\"/>%n",
            GUTTER,
            top,
            PLOT_WIDTH,
            height));
  }
}
