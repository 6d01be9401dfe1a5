package dev.redlock.simulation;

import static java.nio.charset.StandardCharsets.ISO_8859_1;

import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Compares a real redis-server's reply with a simulated master's. Both clocks are this machine's
 * clock, read a moment apart, so a number that is a time or a duration may differ by that moment:
 * it is compared within a tolerance that fits its magnitude (microseconds since the epoch, at least
 * 10^14, within 2 s; milliseconds since the epoch, at least 10^11, within 2 s; seconds, at least
 * 10^9, within 2 s; a duration in milliseconds, at least 10^5 such as a PTTL, within 2 s). Any
 * other number must be equal, and so must everything else; errors by their code. A TIME reply's
 * microseconds within its second are not compared.
 */
final class Replies {

  private static final Pattern NUMBER = Pattern.compile("-?\\d{1,18}");

  private Replies() {}

  static boolean same(Object expected, Object actual) {
    if (expected == null || actual == null) {
      return expected == actual;
    }
    if (expected instanceof SimMaster.Error e) {
      return actual instanceof SimMaster.Error a && e.code().equals(a.code());
    }
    if (expected instanceof SimMaster.Status e) {
      return e.equals(actual);
    }
    if (expected instanceof Long e) {
      return actual instanceof Long a && close(e, a);
    }
    if (expected instanceof byte[] e) {
      return actual instanceof byte[] a && sameText(e, a);
    }
    if (!(expected instanceof List<?> e)
        || !(actual instanceof List<?> a)
        || e.size() != a.size()) {
      return false;
    }
    if (isTime(e) && isTime(a)) {
      return close(number(e.get(0)), number(a.get(0)));
    }
    for (int i = 0; i < e.size(); i++) {
      if (!same(e.get(i), a.get(i))) {
        return false;
      }
    }
    return true;
  }

  /** A TIME reply: seconds since the epoch, then microseconds. */
  private static boolean isTime(List<?> reply) {
    if (reply.size() != 2
        || !(reply.get(0) instanceof byte[])
        || !(reply.get(1) instanceof byte[])) {
      return false;
    }
    String seconds = new String((byte[]) reply.get(0), ISO_8859_1);
    return NUMBER.matcher(seconds).matches()
        && seconds.length() == 10
        && NUMBER.matcher(new String((byte[]) reply.get(1), ISO_8859_1)).matches();
  }

  private static long number(Object bytes) {
    return Long.parseLong(new String((byte[]) bytes, ISO_8859_1));
  }

  /** Equal, or equal word for word where each differing word is a number close to the other. */
  private static boolean sameText(byte[] expected, byte[] actual) {
    if (Arrays.equals(expected, actual)) {
      return true;
    }
    String[] e = new String(expected, ISO_8859_1).split(" ", -1);
    String[] a = new String(actual, ISO_8859_1).split(" ", -1);
    if (e.length != a.length) {
      return false;
    }
    for (int i = 0; i < e.length; i++) {
      if (!e[i].equals(a[i])
          && !(NUMBER.matcher(e[i]).matches()
              && NUMBER.matcher(a[i]).matches()
              && close(Long.parseLong(e[i]), Long.parseLong(a[i])))) {
        return false;
      }
    }
    return true;
  }

  private static boolean close(long expected, long actual) {
    if (expected == actual) {
      return true;
    }
    if (Long.signum(expected) != Long.signum(actual)) {
      return false;
    }
    long magnitude = Math.max(Math.abs(expected), Math.abs(actual));
    long tolerance =
        magnitude >= 100_000_000_000_000L
            ? 2_000_000 // microseconds since the epoch
            : magnitude >= 100_000_000_000L
                ? 2_000 // milliseconds since the epoch
                : magnitude >= 1_000_000_000L ? 2 : magnitude >= 100_000 ? 2_000 : 0;
    return Math.abs(expected - actual) <= tolerance;
  }

  /** A reply for a failure message. */
  static String show(Object reply) {
    if (reply instanceof byte[] b) {
      return "\"" + new String(b, ISO_8859_1) + "\"";
    }
    if (reply instanceof List<?> list) {
      StringBuilder out = new StringBuilder("[");
      for (Object item : list) {
        out.append(out.length() > 1 ? ", " : "").append(show(item));
      }
      return out.append("]").toString();
    }
    return String.valueOf(reply);
  }
}
