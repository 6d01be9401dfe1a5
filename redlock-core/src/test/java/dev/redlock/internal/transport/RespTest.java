package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The RESP2 codec: commands out, replies in, whole or in pieces, each byte looked at once, and
 * every limit enforced as soon as the bytes that break it arrive.
 */
class RespTest {

  /** Each reply as a server sends it, and what it decodes to (compared by {@link #plain}). */
  static Stream<Arguments> replies() {
    return Stream.of(
        Arguments.of("+OK\r\n", "OK"),
        Arguments.of("+\r\n", ""),
        Arguments.of(
            "-NOSCRIPT No matching script. Please use EVAL.\r\n",
            new ServerError("NOSCRIPT No matching script. Please use EVAL.")),
        Arguments.of(
            "-ERR wrong number of arguments\r\n", new ServerError("ERR wrong number of arguments")),
        Arguments.of(":0\r\n", 0L),
        Arguments.of(":1\r\n", 1L),
        Arguments.of(":-1\r\n", -1L),
        Arguments.of(":9223372036854775807\r\n", Long.MAX_VALUE),
        Arguments.of("$5\r\nhello\r\n", "hello"),
        Arguments.of("$0\r\n\r\n", ""),
        Arguments.of("$4\r\na\r\nb\r\n", "a\r\nb"), // CRLF inside a bulk string is data
        Arguments.of("$-1\r\n", null),
        Arguments.of("*0\r\n", List.of()),
        Arguments.of("*-1\r\n", null),
        Arguments.of(
            "*3\r\n:1\r\n:42\r\n:1700000000000000\r\n", List.of(1L, 42L, 1700000000000000L)),
        Arguments.of(
            "*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n", List.of("1700000000", "123456")),
        Arguments.of(
            "*3\r\n$3\r\none\r\n$-1\r\n*2\r\n:2\r\n*1\r\n+deep\r\n",
            Arrays.asList("one", null, List.of(2L, List.of("deep")))),
        Arguments.of(
            "*2\r\n-ERR inside\r\n*-1\r\n", Arrays.asList(new ServerError("ERR inside"), null)));
  }

  @ParameterizedTest
  @MethodSource("replies")
  void eachReplyTypeDecodesToWhatNodeCommandTakes(String wire, Object expected) {
    ByteBuffer in = buffer(wire);
    assertEquals(expected, plain(new Resp.Decoder().next(in)));
    assertFalse(in.hasRemaining(), "consumed exactly the reply");
  }

  @ParameterizedTest
  @MethodSource("replies")
  void aReplySplitAtEveryByteIsIncompleteUntilItsLastByteArrives(String wire, Object expected) {
    byte[] bytes = wire.getBytes(StandardCharsets.UTF_8);
    for (int split = 0; split < bytes.length; split++) {
      Resp.Decoder decoder = new Resp.Decoder();
      ByteBuffer first = ByteBuffer.wrap(bytes, 0, split);
      assertSame(Resp.INCOMPLETE, decoder.next(first), "after " + split + " bytes");
      assertFalse(first.hasRemaining(), "the decoder keeps what it read of the reply");
      // The rest arrives in a buffer of its own, as the next read of the link.
      ByteBuffer rest = ByteBuffer.wrap(bytes, split, bytes.length - split);
      assertEquals(expected, plain(decoder.next(rest)), "split after " + split + " bytes");
      assertFalse(rest.hasRemaining());
      assertEquals(bytes.length, decoder.examined(), "each byte looked at once");
    }
  }

  @Test
  void manyRepliesInOneReadDecodeInOrderAndLeaveAPartialOneForLater() {
    StringBuilder wire = new StringBuilder();
    List<Object> expected = new ArrayList<>();
    replies()
        .forEach(
            reply -> {
              wire.append(reply.get()[0]);
              expected.add(reply.get()[1]);
            });
    ByteBuffer in = buffer(wire + "*2\r\n:1\r\n$3\r\nab"); // and the start of one more
    Resp.Decoder decoder = new Resp.Decoder();
    List<Object> decoded = new ArrayList<>();
    for (Object reply = decoder.next(in); reply != Resp.INCOMPLETE; reply = decoder.next(in)) {
      decoded.add(plain(reply));
    }
    assertEquals(expected, decoded);
    assertFalse(in.hasRemaining(), "the partial reply is kept by the decoder");
    assertEquals(List.of(1L, "abc"), plain(decoder.next(buffer("c\r\n"))));
  }

  @Test
  void bytesSplitAtEveryBoundaryIntoManyReadsDecodeToTheSameReplies() {
    StringBuilder wire = new StringBuilder();
    List<Object> expected = new ArrayList<>();
    replies()
        .forEach(
            reply -> {
              wire.append(reply.get()[0]);
              expected.add(reply.get()[1]);
            });
    byte[] bytes = wire.toString().getBytes(StandardCharsets.UTF_8);
    for (int chunk = 1; chunk <= 7; chunk++) {
      Resp.Decoder decoder = new Resp.Decoder();
      List<Object> decoded = new ArrayList<>();
      for (int from = 0; from < bytes.length; from += chunk) {
        ByteBuffer in = ByteBuffer.wrap(bytes, from, Math.min(chunk, bytes.length - from));
        for (Object reply = decoder.next(in); reply != Resp.INCOMPLETE; reply = decoder.next(in)) {
          decoded.add(plain(reply));
        }
      }
      assertEquals(expected, decoded, "reads of " + chunk + " bytes");
      assertEquals(bytes.length, decoder.examined(), "reads of " + chunk + ": each byte once");
    }
  }

  @Test
  void noscriptIsAServerErrorThatSaysSo() {
    Object reply = decode("-NOSCRIPT No matching script. Please use EVAL.\r\n");
    ServerError error = assertInstanceOf(ServerError.class, reply);
    assertTrue(error.noScript());
    assertFalse(assertInstanceOf(ServerError.class, decode("-ERR x\r\n")).noScript());
  }

  @Test
  void aBulkStringIsDecodedByItsLengthWhateverItHolds() {
    byte[] data = new byte[256];
    for (int i = 0; i < data.length; i++) {
      data[i] = (byte) i; // CR, LF, '$', '*', high bytes
    }
    ByteBuffer in = ByteBuffer.allocate(300);
    in.put("$256\r\n".getBytes(StandardCharsets.US_ASCII)).put(data).put(new byte[] {'\r', '\n'});
    in.flip();
    assertArrayEquals(data, (byte[]) new Resp.Decoder().next(in));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "!3\r\nabc\r\n", // a type byte RESP2 does not have
        ":12a\r\n",
        ":\r\n",
        ":99999999999999999999\r\n",
        "$-2\r\n",
        "$3\r\nabcd\r\n", // longer than it said
        "*-2\r\n",
        "+OK\rX\n", // CR without LF
        "$536870912\r\n", // Redis's proto-max-bulk-len, far over ours
        "$1048577\r\n", // one byte over ours
        "*1025\r\n", // one element over the limit
        ":123456789012345678901", // a 21st digit, before any CRLF
        "$0000000000000000000001\r\n",
        "\r\n" // no type
      })
  void malformedRepliesAreProtocolErrors(String wire) {
    assertThrows(Resp.ProtocolException.class, () -> new Resp.Decoder().next(buffer(wire)));
  }

  @Test
  void arraysNestedTooDeeplyAreRefusedAtTheHeaderOneTooDeep() {
    String tooDeep = "*1\r\n".repeat(Resp.MAX_DEPTH + 1); // no element yet
    assertThrows(Resp.ProtocolException.class, () -> new Resp.Decoder().next(buffer(tooDeep)));
    String deepest = "*1\r\n".repeat(Resp.MAX_DEPTH) + ":1\r\n";
    Object reply = decode(deepest);
    for (int i = 0; i < Resp.MAX_DEPTH; i++) {
      reply = ((List<?>) reply).get(0);
    }
    assertEquals(1L, reply);
  }

  /**
   * Headers come from a table made once below 128 and digit by digit from there: both sides of the
   * boundary, a long word, and an array of 128 words, each exact to the byte.
   */
  @ParameterizedTest
  @ValueSource(ints = {0, 9, 10, 99, 100, 127, 128, 129, 999, 1000, 65_536})
  void aHeaderIsItsLengthInDigitsWhicheverSideOfTheTable(int n) {
    byte[] word = new byte[n];
    java.util.Arrays.fill(word, (byte) 'x');
    byte[][] words = new byte[n % 200][];
    java.util.Arrays.fill(words, word);
    ByteBuffer out = ByteBuffer.allocate(Resp.length(ascii("V"), words));
    Resp.write(out, ascii("V"), words);
    assertFalse(out.hasRemaining(), "length() is exact");
    StringBuilder expected = new StringBuilder("*" + (1 + words.length) + "\r\n$1\r\nV\r\n");
    for (int i = 0; i < words.length; i++) {
      expected.append('$').append(n).append("\r\n").append("x".repeat(n)).append("\r\n");
    }
    assertEquals(expected.toString(), new String(out.array(), StandardCharsets.US_ASCII));
  }

  @Test
  void aCommandIsAnArrayOfBulkStrings() {
    byte[][] words = {ascii("key"), ascii(""), new byte[] {'\r', '\n', 0, (byte) 0xff}};
    int length = Resp.length(ascii("SET"), words);
    ByteBuffer out = ByteBuffer.allocate(length);
    Resp.write(out, ascii("SET"), words);
    assertFalse(out.hasRemaining(), "length() is exact");
    byte[] expected =
        concat(
            ascii("*4\r\n$3\r\nSET\r\n$3\r\nkey\r\n$0\r\n\r\n$4\r\n"),
            new byte[] {'\r', '\n', 0, (byte) 0xff},
            ascii("\r\n"));
    assertArrayEquals(expected, out.array());
  }

  @Test
  void everyCommandTheLibrarySendsEncodesToItsExactLength() {
    byte[] key = ascii("k".repeat(12_345)); // multi-digit lengths
    List<NodeCommand> commands =
        List.of(
            NodeCommand.set(key, ascii("token"), 10_000),
            NodeCommand.of(
                new Command.Acquire(LockKey.of(key), ascii("token"), 10_000, true, 60_000)),
            NodeCommand.of(Command.release(LockKey.of(key), ascii("token"))),
            NodeCommand.load(LuaScript.FENCE),
            NodeCommand.query(NodeCommand.Verb.CONFIG, "GET", "maxmemory"),
            NodeCommand.query(NodeCommand.Verb.TIME));
    int parts = 0;
    for (NodeCommand command : commands) {
      for (int part = 0; part < command.parts(); part++, parts++) {
        byte[] verb = ascii(command.verb(part).name());
        byte[][] words = command.arguments(part);
        ByteBuffer out = ByteBuffer.allocate(Resp.length(verb, words));
        Resp.write(out, verb, words);
        assertFalse(out.hasRemaining(), command.verb(part) + " fills exactly length() bytes");
        // And it reads back as an array of its words: the decoder takes the encoder's output.
        List<?> decoded = (List<?>) new Resp.Decoder().next(out.flip());
        assertEquals(words.length + 1, decoded.size());
        assertArrayEquals(verb, (byte[]) decoded.get(0));
        for (int i = 0; i < words.length; i++) {
          assertArrayEquals(words[i], (byte[]) decoded.get(i + 1));
        }
      }
    }
    assertEquals(8, parts, "the acquire is written as TIME, SET and MGET");
  }

  @Test
  void aNullBulkStringIsNullNotEmpty() {
    assertNull(decode("$-1\r\n"));
    assertArrayEquals(new byte[0], (byte[]) decode("$0\r\n\r\n"));
  }

  // ---- limits: each refused as soon as the bytes that break it arrive

  @Test
  void aBulkStringLongerThanTheLimitIsRefusedAtItsHeaderWithoutWaitingForItsData() {
    Resp.Decoder decoder = new Resp.Decoder();
    Resp.ProtocolException refused =
        assertThrows(Resp.ProtocolException.class, () -> decoder.next(buffer("$2000000\r\n")));
    assertEquals("bulk string length 2000000", refused.getMessage());
    // At the limit, the header waits for its data, which decodes.
    byte[] data = new byte[Resp.MAX_BULK_BYTES];
    Arrays.fill(data, (byte) 'd');
    Resp.Decoder atLimit = new Resp.Decoder();
    assertSame(Resp.INCOMPLETE, atLimit.next(buffer("$" + Resp.MAX_BULK_BYTES + "\r\n")));
    assertSame(Resp.INCOMPLETE, atLimit.next(ByteBuffer.wrap(data)));
    assertArrayEquals(data, (byte[]) atLimit.next(buffer("\r\n")));
  }

  @Test
  void anArrayLongerThanTheLimitIsRefusedAtItsHeader() {
    assertThrows(
        Resp.ProtocolException.class,
        () -> new Resp.Decoder().next(buffer("*" + (Resp.MAX_ARRAY_LENGTH + 1) + "\r\n")));
    Resp.Decoder decoder = new Resp.Decoder();
    String longest = "*" + Resp.MAX_ARRAY_LENGTH + "\r\n";
    assertSame(Resp.INCOMPLETE, decoder.next(buffer(longest)));
    assertEquals(
        Resp.MAX_ARRAY_LENGTH,
        ((List<?>) decoder.next(buffer(":7\r\n".repeat(Resp.MAX_ARRAY_LENGTH)))).size());
  }

  @ParameterizedTest
  @ValueSource(strings = {"+", "-"})
  void aLineLongerThanTheLimitIsRefusedOnceItsLastAllowedByteIsPassed(String type) {
    byte[] longest = new byte[Resp.MAX_LINE_BYTES];
    Arrays.fill(longest, (byte) 'x');
    Resp.Decoder decoder = new Resp.Decoder();
    assertSame(Resp.INCOMPLETE, decoder.next(buffer(type)));
    for (int from = 0; from < longest.length; from += 4096) {
      assertSame(Resp.INCOMPLETE, decoder.next(ByteBuffer.wrap(longest, from, 4096)));
    }
    // One more byte and no CRLF: refused now, not when (if ever) the line ends.
    assertThrows(Resp.ProtocolException.class, () -> decoder.next(buffer("x")));

    Resp.Decoder ended = new Resp.Decoder();
    assertSame(Resp.INCOMPLETE, ended.next(buffer(type)));
    assertSame(Resp.INCOMPLETE, ended.next(ByteBuffer.wrap(longest)));
    assertEquals(
        Resp.MAX_LINE_BYTES,
        type.equals("+")
            ? ((byte[]) ended.next(buffer("\r\n"))).length
            : ((ServerError) ended.next(buffer("\r\n"))).message().length());
  }

  @Test
  void aWholeReplyLongerThanTheLimitIsRefusedWhateverItsPartsAre() {
    // A bulk string at the limit, then a header whose data would pass the reply's bound.
    byte[] data = new byte[Resp.MAX_BULK_BYTES];
    Resp.Decoder decoder = new Resp.Decoder();
    assertSame(Resp.INCOMPLETE, decoder.next(buffer("*2\r\n$" + data.length + "\r\n")));
    assertSame(Resp.INCOMPLETE, decoder.next(ByteBuffer.wrap(data)));
    assertSame(Resp.INCOMPLETE, decoder.next(buffer("\r\n")));
    assertThrows(
        Resp.ProtocolException.class,
        () -> decoder.next(buffer("$" + Resp.MAX_LINE_BYTES + "\r\n")));

    // Small elements, each within every limit, that add up to more than the bound.
    String element = "+" + "e".repeat(2000) + "\r\n";
    Resp.Decoder many = new Resp.Decoder();
    assertSame(Resp.INCOMPLETE, many.next(buffer("*" + Resp.MAX_ARRAY_LENGTH + "\r\n")));
    Resp.ProtocolException refused =
        assertThrows(
            Resp.ProtocolException.class,
            () -> {
              for (int i = 0; i < Resp.MAX_ARRAY_LENGTH; i++) {
                many.next(buffer(element));
              }
            });
    assertEquals("reply longer than " + Resp.MAX_REPLY_BYTES + " bytes", refused.getMessage());
    assertTrue(many.examined() <= Resp.MAX_REPLY_BYTES + element.length(), "refused in time");
  }

  @Test
  void theLimitsCountOneReplyAtATime() {
    // Many replies, together far beyond the reply bound, each within it.
    byte[] data = new byte[Resp.MAX_BULK_BYTES];
    Resp.Decoder decoder = new Resp.Decoder();
    for (int i = 0; i < 4; i++) {
      assertSame(Resp.INCOMPLETE, decoder.next(buffer("$" + data.length + "\r\n")));
      assertSame(Resp.INCOMPLETE, decoder.next(ByteBuffer.wrap(data)));
      assertArrayEquals(data, (byte[]) decoder.next(buffer("\r\n")));
    }
  }

  // ---- each byte looked at once

  @ParameterizedTest
  @ValueSource(ints = {1, 4096})
  void anEndlessLineIsScannedOnceWhateverPiecesItArrivesIn(int piece) {
    // The old decoder started again at the line's start on every read: 64 KiB arriving a byte at
    // a time cost it 2 billion looks; this costs 64 Ki. (The line is refused one byte later.)
    byte[] bytes = new byte[Resp.MAX_LINE_BYTES + 1];
    Arrays.fill(bytes, (byte) 'x');
    bytes[0] = '+';
    Resp.Decoder decoder = new Resp.Decoder();
    for (int from = 0; from < bytes.length; from += piece) {
      int n = Math.min(piece, bytes.length - from);
      assertSame(Resp.INCOMPLETE, decoder.next(ByteBuffer.wrap(bytes, from, n)));
    }
    assertEquals(bytes.length, decoder.examined(), "bytes looked at, in pieces of " + piece);
  }

  @Test
  void aBulkStringArrivingAByteAtATimeIsCopiedOnceIntoItsOwnArray() {
    int length = 100_000;
    byte[] wire = ascii("$" + length + "\r\n" + "b".repeat(length) + "\r\n");
    Resp.Decoder decoder = new Resp.Decoder();
    Object reply = Resp.INCOMPLETE;
    for (int i = 0; i < wire.length; i++) {
      assertSame(Resp.INCOMPLETE, reply, "complete only at the last byte");
      reply = decoder.next(ByteBuffer.wrap(wire, i, 1));
    }
    assertEquals(length, ((byte[]) reply).length);
    assertEquals(wire.length, decoder.examined());
  }

  /** Decodes one whole reply, checking that nothing of {@code wire} is left. */
  private static Object decode(String wire) {
    ByteBuffer in = buffer(wire);
    Object reply = new Resp.Decoder().next(in);
    assertFalse(in.hasRemaining(), "one whole reply");
    return reply;
  }

  /** Byte arrays as strings (and lists of them, deeply), so replies compare with equals. */
  private static Object plain(Object reply) {
    if (reply instanceof byte[] bytes) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
    if (reply instanceof List<?> list) {
      List<Object> copy = new ArrayList<>();
      for (Object item : list) {
        copy.add(plain(item));
      }
      return copy;
    }
    return reply;
  }

  private static ByteBuffer buffer(String wire) {
    return ByteBuffer.wrap(wire.getBytes(StandardCharsets.UTF_8));
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] concat(byte[]... parts) {
    int length = 0;
    for (byte[] part : parts) {
      length += part.length;
    }
    ByteBuffer all = ByteBuffer.allocate(length);
    for (byte[] part : parts) {
      all.put(part);
    }
    return all.array();
  }
}
