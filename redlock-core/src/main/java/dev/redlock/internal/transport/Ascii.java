package dev.redlock.internal.transport;

import java.nio.charset.StandardCharsets;

/**
 * Numbers and words in ASCII, as the masters read and write them: the numbers of an acquire's reply
 * (the master's clock, fence counters, the dataset's birth) read from their digits, and a command's
 * numbers written as digits, without a String for each (several per acquire, on every master).
 */
final class Ascii {

  private Ascii() {}

  /**
   * A number of a reply: its digits (a bulk string), or an integer reply.
   *
   * @throws NumberFormatException if it is neither, or not a number Lua could have stored
   */
  static long parse(Object word) {
    if (word instanceof byte[] bytes) {
      long digits = digits(bytes);
      if (digits >= 0) {
        return digits; // the usual case, read without a String: several per acquire
      }
      String text = new String(bytes, StandardCharsets.US_ASCII);
      try {
        return Long.parseLong(text);
      } catch (NumberFormatException e) {
        return (long) Double.parseDouble(text); // a number Lua stored, e.g. 1.7e+12
      }
    }
    if (word instanceof Long value) {
      return value;
    }
    throw new NumberFormatException("not a number");
  }

  /** The value of 1 to 18 ASCII digits, or -1 for anything else (parsed the slow way). */
  private static long digits(byte[] bytes) {
    if (bytes.length == 0 || bytes.length > 18) {
      return -1;
    }
    long value = 0;
    for (byte b : bytes) {
      if (b < '0' || b > '9') {
        return -1;
      }
      value = value * 10 + (b - '0');
    }
    return value;
  }

  /** {@code value} in ASCII decimal, written straight into its array: several per acquire. */
  static byte[] number(long value) {
    if (value < 0) {
      return bytes(Long.toString(value)); // never on the hot path
    }
    int length = 1;
    for (long rest = value / 10; rest > 0; rest /= 10) {
      length++;
    }
    byte[] digits = new byte[length];
    long rest = value;
    for (int i = length - 1; i >= 0; i--) {
      digits[i] = (byte) ('0' + rest % 10);
      rest /= 10;
    }
    return digits;
  }

  /** The ASCII bytes of {@code text}. */
  static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }
}
