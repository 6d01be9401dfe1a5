package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The numbers of an acquire's reply (the master's clock, fence counters, the dataset's birth) as
 * {@link Ascii#parse} reads them: plain digits without a String, anything else the slow way, which
 * still reads what Lua stores (a negative number, a float such as 1.7e+12) and refuses junk; and
 * the numbers of a command ({@link Ascii#number}), written without a String.
 */
class AsciiTest {

  private static long parse(String word) {
    return Ascii.parse(word.getBytes(StandardCharsets.US_ASCII));
  }

  @Test
  void readsDigitsAndEverythingLuaStores() {
    assertEquals(0, parse("0"));
    assertEquals(7, parse("7"));
    assertEquals(1_764_201_234_567_890L, parse("1764201234567890"));
    assertEquals(999_999_999_999_999_999L, parse("999999999999999999")); // 18 digits: the fast way
    assertEquals(Long.MAX_VALUE, parse("9223372036854775807")); // 19: the slow way
    assertEquals(-5, parse("-5"));
    assertEquals(1_700_000_000_000L, parse("1.7e+12"));
    assertEquals(42, Ascii.parse(42L));
  }

  @Test
  void writesNumbersAsTheirDecimalDigits() {
    for (long value : new long[] {0, 7, 10, 99, 100, 30_000, Long.MAX_VALUE, -1, Long.MIN_VALUE}) {
      assertEquals(
          Long.toString(value),
          new String(Ascii.number(value), StandardCharsets.US_ASCII),
          "the digits of " + value);
      assertEquals(value, Ascii.parse(Ascii.number(value)), "read back: " + value);
    }
  }

  @Test
  void refusesWhatIsNotANumber() {
    assertThrows(NumberFormatException.class, () -> parse(""));
    assertThrows(NumberFormatException.class, () -> parse("12a"));
    assertThrows(NumberFormatException.class, () -> parse("abc"));
    assertThrows(NumberFormatException.class, () -> Ascii.parse("12"));
  }

  @Test
  void aNumberBeyondALongReadsAsTheLargestNeverWrapped() {
    // 2^64 and more: the fast way would wrap to 0 or below, a fence counter gone back.
    assertEquals(Long.MAX_VALUE, parse("18446744073709551616"));
    assertEquals(Long.MAX_VALUE, parse("99999999999999999999"));
  }
}
