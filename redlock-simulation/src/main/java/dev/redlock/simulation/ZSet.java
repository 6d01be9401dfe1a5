package dev.redlock.simulation;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A simulated master's sorted set (member to score, ordered on demand by score, then member), and
 * how Redis reads and writes its scores: a score's text, a ZRANGEBYSCORE bound, and C's {@code
 * %.17g}, which Redis also uses for a number a script passes to a command. Not thread-safe.
 */
final class ZSet {

  final Map<String, Double> scores = new HashMap<>();

  List<Map.Entry<String, Double>> ordered() {
    List<Map.Entry<String, Double>> all = new ArrayList<>(scores.entrySet());
    all.sort(
        Comparator.<Map.Entry<String, Double>>comparingDouble(Map.Entry::getValue)
            .thenComparing(Map.Entry::getKey));
    return all;
  }

  static Double parse(String text) {
    String t = text.toLowerCase(Locale.ROOT);
    if (t.equals("inf") || t.equals("+inf")) {
      return Double.POSITIVE_INFINITY;
    }
    if (t.equals("-inf")) {
      return Double.NEGATIVE_INFINITY;
    }
    try {
      double d = Double.parseDouble(text);
      return Double.isNaN(d) || t.contains("x") || t.endsWith("d") || t.endsWith("f") ? null : d;
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /** A ZRANGEBYSCORE bound: a score, exclusive with a leading '('. */
  record Bound(double score, boolean exclusive) {
    static Bound parse(String text) {
      boolean open = text.startsWith("(");
      Double score = ZSet.parse(open ? text.substring(1) : text);
      return score == null ? null : new Bound(score, open);
    }

    boolean below(double s) {
      return exclusive ? score < s : score <= s;
    }

    boolean above(double s) {
      return exclusive ? score > s : score >= s;
    }
  }

  /** A score as Redis 7.0 writes one: an integer without a point, else 17 significant digits. */
  static String text(double d) {
    if (Double.isInfinite(d)) {
      return d > 0 ? "inf" : "-inf";
    }
    return g17(d);
  }

  /** C's {@code %.17g}: how Redis turns a Lua number into a command's argument and a score. */
  static String g17(double d) {
    if (d == Math.rint(d) && Math.abs(d) < 1e17) {
      return Long.toString((long) d);
    }
    if (d == 0) {
      return "0";
    }
    BigDecimal exact = new BigDecimal(d).round(new MathContext(17));
    int exponent = exact.precision() - exact.scale() - 1;
    if (exponent < -4 || exponent >= 17) {
      BigDecimal mantissa = exact.movePointLeft(exponent).stripTrailingZeros();
      return mantissa.toPlainString()
          + (exponent < 0 ? "e-" : "e+")
          + String.format(Locale.ROOT, "%02d", Math.abs(exponent));
    }
    return exact.stripTrailingZeros().toPlainString();
  }
}
