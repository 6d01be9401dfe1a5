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
 * %.17g}, which Redis also uses for a number a script passes to a command; and the sorted-set
 * commands the library's scripts call. Not thread-safe.
 */
final class ZSet {

  /** What the sorted-set commands need of a master's keyspace. */
  interface Keyspace {
    /** The live value at {@code key} (a String or a ZSet), null if none or expired. */
    Object lookup(String key);

    /** Stores {@code set} at {@code key}, with no expiry. */
    void put(String key, ZSet set);

    /** Removes {@code key}. */
    void remove(String key);
  }

  final Map<String, Double> scores = new HashMap<>();

  /** A copy: its own members and scores. */
  ZSet copy() {
    ZSet copied = new ZSet();
    copied.scores.putAll(scores);
    return copied;
  }

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

  /** The sorted set at {@code key}, null if none; throws the WRONGTYPE reply for another type. */
  private static ZSet find(Keyspace keys, String key) {
    Object value = keys.lookup(key);
    if (value == null) {
      return null;
    }
    if (value instanceof ZSet set) {
      return set;
    }
    throw new SimMaster.WrongType();
  }

  static Object zadd(Keyspace keys, List<String> args) {
    boolean nx = false;
    boolean xx = false;
    boolean gt = false;
    boolean lt = false;
    boolean ch = false;
    int i = 2;
    for (; i < args.size(); i++) {
      String flag = args.get(i).toUpperCase(Locale.ROOT);
      if (flag.equals("NX")) {
        nx = true;
      } else if (flag.equals("XX")) {
        xx = true;
      } else if (flag.equals("GT")) {
        gt = true;
      } else if (flag.equals("LT")) {
        lt = true;
      } else if (flag.equals("CH")) {
        ch = true;
      } else {
        break;
      }
    }
    int pairs = args.size() - i;
    if (pairs == 0 || pairs % 2 != 0) {
      return SimMaster.SYNTAX;
    }
    if (nx && xx) {
      return new SimMaster.Error("ERR XX and NX options at the same time are not compatible");
    }
    if ((gt && nx) || (lt && nx) || (gt && lt)) {
      return new SimMaster.Error(
          "ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    double[] scores = new double[pairs / 2];
    for (int p = 0; p < scores.length; p++) {
      Double score = parse(args.get(i + 2 * p));
      if (score == null) {
        return new SimMaster.Error("ERR value is not a valid float");
      }
      scores[p] = score;
    }
    String key = args.get(1);
    ZSet set = find(keys, key);
    if (set == null) {
      if (xx) {
        return 0L;
      }
      set = new ZSet();
    }
    long added = 0;
    long changed = 0;
    for (int p = 0; p < scores.length; p++) {
      String member = args.get(i + 2 * p + 1);
      Double current = set.scores.get(member);
      if (current == null) {
        if (!xx) {
          set.scores.put(member, scores[p]);
          added++;
        }
      } else if (!nx
          && (!gt || scores[p] > current)
          && (!lt || scores[p] < current)
          && scores[p] != current) {
        set.scores.put(member, scores[p]);
        changed++;
      }
    }
    if (!set.scores.isEmpty() && keys.lookup(key) == null) {
      keys.put(key, set);
    }
    return ch ? added + changed : added;
  }

  static Object zrange(Keyspace keys, List<String> args) {
    boolean withScores = false;
    for (int i = 4; i < args.size(); i++) {
      if (args.get(i).equalsIgnoreCase("WITHSCORES")) {
        withScores = true;
      } else {
        return SimMaster.SYNTAX;
      }
    }
    long start = Long.parseLong(args.get(2));
    long stop = Long.parseLong(args.get(3));
    ZSet set = find(keys, args.get(1));
    if (set == null) {
      return List.of();
    }
    List<Map.Entry<String, Double>> all = set.ordered();
    int n = all.size();
    if (start < 0) {
      start = Math.max(0, n + start);
    }
    if (stop < 0) {
      stop = n + stop;
    }
    stop = Math.min(stop, n - 1);
    List<Object> out = new ArrayList<>();
    for (long r = start; r <= stop; r++) {
      reply(out, all.get((int) r), withScores);
    }
    return out;
  }

  static Object zrangeByScore(Keyspace keys, List<String> args) {
    boolean withScores = false;
    long offset = 0;
    long count = -1;
    for (int i = 4; i < args.size(); i++) {
      if (args.get(i).equalsIgnoreCase("WITHSCORES")) {
        withScores = true;
      } else if (args.get(i).equalsIgnoreCase("LIMIT") && i + 2 < args.size()) {
        offset = Long.parseLong(args.get(++i));
        count = Long.parseLong(args.get(++i));
      } else {
        return SimMaster.SYNTAX;
      }
    }
    Bound min = Bound.parse(args.get(2));
    Bound max = Bound.parse(args.get(3));
    if (min == null || max == null) {
      return new SimMaster.Error("ERR min or max is not a float");
    }
    ZSet set = find(keys, args.get(1));
    List<Object> out = new ArrayList<>();
    if (set == null || offset < 0) {
      return out;
    }
    long skipped = 0;
    long taken = 0;
    for (Map.Entry<String, Double> e : set.ordered()) {
      if (min.below(e.getValue()) && max.above(e.getValue())) {
        if (skipped++ < offset) {
          continue;
        }
        if (count >= 0 && taken >= count) {
          break;
        }
        taken++;
        reply(out, e, withScores);
      }
    }
    return out;
  }

  private static void reply(List<Object> out, Map.Entry<String, Double> e, boolean withScores) {
    out.add(SimMaster.bytes(e.getKey()));
    if (withScores) {
      out.add(SimMaster.bytes(text(e.getValue())));
    }
  }

  static Object zrem(Keyspace keys, List<String> args) {
    ZSet set = find(keys, args.get(1));
    if (set == null) {
      return 0L;
    }
    long n = 0;
    for (int i = 2; i < args.size(); i++) {
      if (set.scores.remove(args.get(i)) != null) {
        n++;
      }
    }
    if (set.scores.isEmpty()) {
      keys.remove(args.get(1));
    }
    return n;
  }

  static Object zcard(Keyspace keys, String key) {
    ZSet set = find(keys, key);
    return set == null ? 0L : (long) set.scores.size();
  }
}
