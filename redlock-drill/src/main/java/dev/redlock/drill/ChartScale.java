package dev.redlock.drill;

import static dev.redlock.drill.HtmlStyle.GUTTER;
import static dev.redlock.drill.HtmlStyle.PLOT_WIDTH;

import java.util.Locale;

/**
 * The HTML report's time axis: nanoseconds since the workers started mapped to pixels, and the plot
 * cut into buckets, one per pixel column. Immutable.
 */
final class ChartScale {

  private final long span; // nanoseconds the x axis covers

  /** A scale that covers {@code span} nanoseconds (at least one). */
  ChartScale(long span) {
    this.span = Math.max(1, span);
  }

  /** The nanoseconds the axis covers. */
  long span() {
    return span;
  }

  /** The x coordinate of an instant, clamped to the plot. */
  double x(long nanos) {
    return GUTTER + (double) PLOT_WIDTH * Math.max(0, Math.min(span, nanos)) / span;
  }

  /** Where bucket {@code b} begins, in nanoseconds. */
  long bucketStart(int b) {
    return span * b / PLOT_WIDTH;
  }

  /** The bucket of an instant; -1 before the start, the last one after the end. */
  int bucketOf(long nanos) {
    if (nanos < 0) {
      return -1;
    }
    long b = nanos * PLOT_WIDTH / span;
    return (int) Math.min(PLOT_WIDTH - 1, b);
  }

  /** A step of 1, 2 or 5 times a power of ten, at least {@code rough}. */
  static double niceStep(double rough) {
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

  /** A number with at most three decimals and no trailing zeros: {@code "2.5"}, {@code "10"}. */
  static String trim(double value) {
    String s = String.format(Locale.ROOT, "%.3f", value);
    s = s.replaceAll("0+$", "");
    return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
  }
}
