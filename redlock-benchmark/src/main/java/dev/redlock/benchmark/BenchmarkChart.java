package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.benchmark.BenchmarkRun.Lineup;
import dev.redlock.benchmark.ThroughputRun.Throughput;
import dev.redlock.drill.Percentiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The benchmark's chart, an SVG file written by hand: on the left, each row's one-thread
 * acquire+release latency by percentile (x: 0 to 99.9 on a "nines" scale, so the tail gets room; y:
 * microseconds, logarithmic); on the right, each row's throughput with 8 and 32 threads. Rows that
 * were skipped are named under the legend with the reason. Stateless.
 */
final class BenchmarkChart {

  static final int WIDTH = 1160;
  static final int HEIGHT = 600;

  /** The x axis runs from p0 to this percentile. */
  static final double LAST_PERCENTILE = 99.9;

  private static final Map<String, String> COLORS =
      Map.of(
          "floor", "#4d4d4d",
          "plain", "#1f77b4",
          "dflt", "#2ca02c",
          "token", "#17becf",
          "tls", "#8c564b",
          "redisson", "#d62728",
          "node", "#ff7f0e");

  // The latency panel and the throughput panel, in pixels.
  private static final int TOP = 130;
  private static final int BOTTOM = HEIGHT - 60;
  private static final int LEFT_X0 = 80;
  private static final int LEFT_X1 = 600;
  private static final int RIGHT_X0 = 700;
  private static final int RIGHT_X1 = WIDTH - 30;

  private BenchmarkChart() {}

  /**
   * One row of the chart.
   *
   * @param name the row's name, for the legend
   * @param column its short name, which picks its colour
   * @param sortedNanos its one-thread acquire+release durations, ascending; empty when skipped
   * @param opsPerSecond its throughput by thread count; empty when skipped
   * @param skipped why it was not measured; null when it was
   */
  record Series(
      String name,
      String column,
      long[] sortedNanos,
      Map<Integer, Double> opsPerSecond,
      String skipped) {
    Series {
      requireNonNull(name, "name");
      requireNonNull(column, "column");
      requireNonNull(sortedNanos, "sortedNanos");
      opsPerSecond = Map.copyOf(opsPerSecond);
    }

    boolean measured() {
      return skipped == null && sortedNanos.length > 0;
    }
  }

  /**
   * Writes the chart of {@code lineup}'s rows to {@code file} (its directory made if missing).
   *
   * @param caption a line under the title: where and how it was measured
   * @throws IOException if the file cannot be written
   */
  static void write(
      Path file, Lineup lineup, List<Throughput> throughput, int masters, String caption)
      throws IOException {
    List<Series> series = new ArrayList<>();
    for (Contender c : lineup.all()) {
      if (!c.runs()) {
        series.add(new Series(c.name(), c.column(), new long[0], Map.of(), c.skipped()));
        continue;
      }
      Map<Integer, Double> rates = new LinkedHashMap<>();
      for (int threads : ThroughputRun.THREAD_COUNTS) {
        BenchmarkChecks.find(throughput, c.name(), threads)
            .ifPresent(t -> rates.put(threads, t.opsPerSecond()));
      }
      series.add(new Series(c.name(), c.column(), c.latency().samples.sorted(), rates, null));
    }
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, svg(series, masters, caption), StandardCharsets.UTF_8);
  }

  /** The chart as SVG text. */
  static String svg(List<Series> series, int masters, String caption) {
    requireNonNull(series, "series");
    requireNonNull(caption, "caption");
    StringBuilder svg = new StringBuilder();
    svg.append(
        String.format(
            Locale.ROOT,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d"
                + " %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""
                + " font-size=\"12\">%n",
            WIDTH,
            HEIGHT,
            WIDTH,
            HEIGHT));
    svg.append(
        String.format(
            Locale.ROOT,
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>%n",
            WIDTH,
            HEIGHT));
    text(
        svg,
        20,
        28,
        "start",
        "font-size=\"18\" font-weight=\"bold\"",
        "RedLock benchmark: acquire+release of a new key on " + masters + " masters");
    text(svg, 20, 48, "start", "fill=\"#555\"", caption);
    legend(svg, series);
    List<Series> measured = series.stream().filter(Series::measured).toList();
    latencyPanel(svg, measured);
    throughputPanel(svg, measured);
    svg.append("</svg>\n");
    return svg.toString();
  }

  private static void legend(StringBuilder svg, List<Series> series) {
    int x = 20;
    int y = 74;
    List<String> skipped = new ArrayList<>();
    for (Series s : series) {
      if (!s.measured()) {
        skipped.add(s.name() + ": " + (s.skipped() == null ? "no samples" : s.skipped()));
        continue;
      }
      int width = 34 + (int) (s.name().length() * 6.6);
      if (x > 20 && x + width - 14 > WIDTH - 20) {
        x = 20; // the next legend line
        y += 20;
      }
      svg.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>%n",
              x,
              y - 11,
              color(s)));
      text(svg, x + 20, y, "start", "", s.name());
      x += width;
    }
    for (int i = 0; i < skipped.size(); i++) {
      text(
          svg, 20, y + 20 + 16 * i, "start", "fill=\"#888\" font-style=\"italic\"", skipped.get(i));
    }
  }

  private static void latencyPanel(StringBuilder svg, List<Series> measured) {
    text(
        svg,
        (LEFT_X0 + LEFT_X1) / 2,
        TOP - 12,
        "middle",
        "font-weight=\"bold\"",
        "Latency by percentile, one thread (us, log scale)");
    frame(svg, LEFT_X0, LEFT_X1);
    if (measured.isEmpty()) {
      return;
    }
    long low = Long.MAX_VALUE;
    long high = 1;
    for (Series s : measured) {
      low = Math.min(low, Math.max(1_000, s.sortedNanos()[0]));
      high = Math.max(high, Percentiles.nearestRank(s.sortedNanos(), LAST_PERCENTILE));
    }
    double yLow = Math.floor(Math.log10(low / 1_000.0) * 4) / 4;
    double yHigh = Math.ceil(Math.log10(Math.max(high, low + 1) / 1_000.0) * 4) / 4;
    if (yHigh <= yLow) {
      yHigh = yLow + 0.25;
    }
    double xMax = nines(LAST_PERCENTILE);
    // Percentile grid lines and labels.
    for (double p : new double[] {0, 50, 90, 99, 99.9}) {
      double x = LEFT_X0 + (LEFT_X1 - LEFT_X0) * nines(p) / xMax;
      line(svg, x, TOP, x, BOTTOM, "#e0e0e0");
      text(svg, (int) x, BOTTOM + 18, "middle", "", "p" + trim(p));
    }
    text(svg, (LEFT_X0 + LEFT_X1) / 2, BOTTOM + 38, "middle", "fill=\"#555\"", "percentile");
    // Microsecond grid: 1, 2, 5 of each decade in range.
    for (int decade = (int) Math.floor(yLow); decade <= Math.ceil(yHigh); decade++) {
      for (int m : new int[] {1, 2, 5}) {
        double value = m * Math.pow(10, decade);
        double log = Math.log10(value);
        if (log < yLow - 1e-9 || log > yHigh + 1e-9) {
          continue;
        }
        double y = BOTTOM - (BOTTOM - TOP) * (log - yLow) / (yHigh - yLow);
        line(svg, LEFT_X0, y, LEFT_X1, y, "#e0e0e0");
        text(svg, LEFT_X0 - 6, (int) y + 4, "end", "", format(value));
      }
    }
    for (Series s : measured) {
      StringBuilder points = new StringBuilder();
      for (int i = 0; i <= 300; i++) {
        double nines = xMax * i / 300;
        double percent = 100 * (1 - Math.pow(10, -nines));
        long nanos =
            percent <= 0 ? s.sortedNanos()[0] : Percentiles.nearestRank(s.sortedNanos(), percent);
        double log = Math.log10(Math.max(1, nanos) / 1_000.0);
        double x = LEFT_X0 + (LEFT_X1 - LEFT_X0) * nines / xMax;
        double y = BOTTOM - (BOTTOM - TOP) * (log - yLow) / (yHigh - yLow);
        y = Math.max(TOP, Math.min(BOTTOM, y));
        points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
      }
      svg.append(
          String.format(
              Locale.ROOT,
              "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\">"
                  + "<title>%s</title></polyline>%n",
              color(s),
              points.toString().strip(),
              escape(s.name())));
    }
  }

  private static void throughputPanel(StringBuilder svg, List<Series> measured) {
    text(
        svg,
        (RIGHT_X0 + RIGHT_X1) / 2,
        TOP - 12,
        "middle",
        "font-weight=\"bold\"",
        "Throughput (acquire+release per second)");
    frame(svg, RIGHT_X0, RIGHT_X1);
    double max = 0;
    for (Series s : measured) {
      for (double rate : s.opsPerSecond().values()) {
        max = Math.max(max, rate);
      }
    }
    if (measured.isEmpty() || max <= 0) {
      return;
    }
    double top = niceCeiling(max * 1.1);
    for (int i = 0; i <= 4; i++) {
      double value = top * i / 4;
      double y = BOTTOM - (BOTTOM - TOP) * value / top;
      line(svg, RIGHT_X0, y, RIGHT_X1, y, "#e0e0e0");
      text(svg, RIGHT_X0 - 6, (int) y + 4, "end", "", thousands(value));
    }
    List<Integer> counts = ThroughputRun.THREAD_COUNTS;
    double groupWidth = (double) (RIGHT_X1 - RIGHT_X0) / counts.size();
    double barWidth = (groupWidth - 30) / measured.size();
    for (int g = 0; g < counts.size(); g++) {
      int threads = counts.get(g);
      double groupX = RIGHT_X0 + g * groupWidth + 15;
      text(
          svg,
          (int) (groupX + (groupWidth - 30) / 2),
          BOTTOM + 18,
          "middle",
          "",
          threads + " threads");
      for (int i = 0; i < measured.size(); i++) {
        Series s = measured.get(i);
        Double rate = s.opsPerSecond().get(threads);
        if (rate == null) {
          continue;
        }
        double height = (BOTTOM - TOP) * rate / top;
        double x = groupX + i * barWidth;
        svg.append(
            String.format(
                Locale.ROOT,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                    + "<title>%s, %d threads: %s ops/s</title></rect>%n",
                x + 2,
                BOTTOM - height,
                barWidth - 4,
                height,
                color(s),
                escape(s.name()),
                threads,
                thousands(rate)));
        text(
            svg,
            (int) (x + barWidth / 2),
            (int) (BOTTOM - height - 4),
            "middle",
            "font-size=\"10\"",
            compact(rate));
      }
    }
    text(
        svg,
        (RIGHT_X0 + RIGHT_X1) / 2,
        BOTTOM + 38,
        "middle",
        "fill=\"#555\"",
        "node-redlock: concurrent async loops in one process");
  }

  private static void frame(StringBuilder svg, int x0, int x1) {
    svg.append(
        String.format(
            Locale.ROOT,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>%n",
            x0,
            TOP,
            x1 - x0,
            BOTTOM - TOP));
  }

  /** How many nines a percentile has: 0 for p0, 1 for p90, 2 for p99, 3 for p99.9. */
  static double nines(double percent) {
    return -Math.log10(1 - percent / 100);
  }

  private static String color(Series s) {
    return COLORS.getOrDefault(s.column(), "#9467bd");
  }

  private static void line(
      StringBuilder svg, double x0, double y0, double x1, double y1, String c) {
    svg.append(
        String.format(
            Locale.ROOT,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>%n",
            x0,
            y0,
            x1,
            y1,
            c));
  }

  private static void text(
      StringBuilder svg, int x, int y, String anchor, String attributes, String content) {
    svg.append(
        String.format(
            Locale.ROOT,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\"%s>%s</text>%n",
            x,
            y,
            anchor,
            attributes.isEmpty() ? "" : " " + attributes,
            escape(content)));
  }

  /**
   * The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten) >= value.
   */
  static double niceCeiling(double value) {
    double power = Math.pow(10, Math.floor(Math.log10(value)));
    for (double m : new double[] {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}) {
      if (m * power >= value) {
        return m * power;
      }
    }
    return 10 * power;
  }

  private static String format(double micros) {
    return micros >= 1_000
        ? trim(micros / 1_000) + " ms"
        : String.format(Locale.ROOT, "%s", trim(micros));
  }

  /**
   * A bar's label, short enough not to run into its neighbour's: 924, 6.9k, 19.3k (the exact figure
   * is the bar's tooltip).
   */
  static String compact(double value) {
    return value < 1_000
        ? String.format(Locale.ROOT, "%.0f", value)
        : String.format(Locale.ROOT, "%.1fk", value / 1_000);
  }

  private static String thousands(double value) {
    return String.format(Locale.ROOT, "%,.0f", value);
  }

  private static String trim(double value) {
    return value == Math.rint(value)
        ? Long.toString((long) value)
        : String.format(Locale.ROOT, "%s", value);
  }

  static String escape(String text) {
    return text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\"", "&quot;");
  }
}
