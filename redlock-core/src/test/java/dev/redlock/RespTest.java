package dev.redlock;

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

/** The selector transport's RESP2 codec: commands out, replies in, whole or in pieces. */
class RespTest {

  /** Each reply as a server sends it, and what it decodes to (compared by {@link #plain}). */
  static Stream<Arguments> replies() {
    return Stream.of(
        Arguments.of("+OK\r\n", "OK"),
        Arguments.of("+\r\n", ""),
        Arguments.of(
            "-NOSCRIPT No matching script. Please use EVAL.\r\n",
            new NodeCommand.ServerError("NOSCRIPT No matching script. Please use EVAL.")),
        Arguments.of(
            "-ERR wrong number of arguments\r\n",
            new NodeCommand.ServerError("ERR wrong number of arguments")),
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
            "*2\r\n-ERR inside\r\n*-1\r\n",
            Arrays.asList(new NodeCommand.ServerError("ERR inside"), null)));
  }

  @ParameterizedTest
  @MethodSource("replies")
  void eachReplyTypeDecodesAsJedisLinkReadsIt(String wire, Object expected) {
    ByteBuffer in = buffer(wire);
    assertEquals(expected, plain(Resp.read(in)));
    assertFalse(in.hasRemaining(), "consumed exactly the reply");
  }

  @ParameterizedTest
  @MethodSource("replies")
  void aReplySplitAtEveryByteIsIncompleteUntilItsLastByteArrives(String wire, Object expected) {
    byte[] bytes = wire.getBytes(StandardCharsets.UTF_8);
    for (int split = 0; split < bytes.length; split++) {
      ByteBuffer in = ByteBuffer.allocate(bytes.length);
      in.put(bytes, 0, split).flip();
      assertSame(Resp.INCOMPLETE, Resp.read(in), "after " + split + " bytes");
      assertEquals(0, in.position(), "nothing consumed after " + split + " bytes");
      // The rest arrives: compact and append, as the link does after each read.
      in.compact().put(bytes, split, bytes.length - split).flip();
      assertEquals(expected, plain(Resp.read(in)), "split after " + split + " bytes");
      assertFalse(in.hasRemaining());
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
    String all = wire.toString();
    ByteBuffer in = buffer(all + "*2\r\n:1\r\n$3\r\nab"); // and the start of one more
    List<Object> decoded = new ArrayList<>();
    for (Object reply = Resp.read(in); reply != Resp.INCOMPLETE; reply = Resp.read(in)) {
      decoded.add(plain(reply));
    }
    assertEquals(expected, decoded);
    assertEquals(all.length(), in.position(), "the partial reply is left unread");
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
      ByteBuffer in = ByteBuffer.allocate(bytes.length); // write mode, as the link's buffer
      List<Object> decoded = new ArrayList<>();
      for (int from = 0; from < bytes.length; from += chunk) {
        in.put(bytes, from, Math.min(chunk, bytes.length - from)).flip();
        for (Object reply = Resp.read(in); reply != Resp.INCOMPLETE; reply = Resp.read(in)) {
          decoded.add(plain(reply));
        }
        in.compact();
      }
      assertEquals(expected, decoded, "reads of " + chunk + " bytes");
      assertEquals(0, in.position(), "nothing left over");
    }
  }

  @Test
  void noscriptIsAServerErrorThatSaysSo() {
    Object reply = Resp.read(buffer("-NOSCRIPT No matching script. Please use EVAL.\r\n"));
    NodeCommand.ServerError error = assertInstanceOf(NodeCommand.ServerError.class, reply);
    assertTrue(error.noScript());
    assertFalse(
        assertInstanceOf(NodeCommand.ServerError.class, Resp.read(buffer("-ERR x\r\n")))
            .noScript());
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
    assertArrayEquals(data, (byte[]) Resp.read(in));
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
        "$536870913\r\n" // over proto-max-bulk-len
      })
  void malformedRepliesAreProtocolErrors(String wire) {
    assertThrows(Resp.ProtocolException.class, () -> Resp.read(buffer(wire)));
  }

  @Test
  void arraysNestedTooDeeplyAreProtocolErrors() {
    String wire = "*1\r\n".repeat(Resp.MAX_DEPTH + 1) + ":1\r\n";
    assertThrows(Resp.ProtocolException.class, () -> Resp.read(buffer(wire)));
    String deepest = "*1\r\n".repeat(Resp.MAX_DEPTH) + ":1\r\n";
    Object reply = Resp.read(buffer(deepest));
    for (int i = 0; i < Resp.MAX_DEPTH; i++) {
      reply = ((List<?>) reply).get(0);
    }
    assertEquals(1L, reply);
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
            NodeCommand.acquire(key, ascii("redlock:fence:k"), ascii("token"), 10_000, 60_000),
            NodeCommand.release(key, ascii("token")),
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
        List<?> decoded = (List<?>) Resp.read(out.flip());
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
    assertNull(Resp.read(buffer("$-1\r\n")));
    assertArrayEquals(new byte[0], (byte[]) Resp.read(buffer("$0\r\n\r\n")));
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
