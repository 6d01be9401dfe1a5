package dev.redlock;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * RESP2, the Redis wire protocol, as far as the selector transport speaks it: a command is an array
 * of bulk strings; a reply is a simple string, an error, an integer, a bulk string (or null), or an
 * array (nested, or null).
 *
 * <p>Replies decode to what {@link NodeCommand#complete} takes, as {@link JedisLink} reads them: a
 * simple string or a bulk string to a {@code byte[]}, an integer to a {@link Long}, an array to a
 * {@link List}, a null bulk string or array to {@code null}, and an error to a {@link
 * NodeCommand.ServerError}. {@link #read} decodes from a buffer that may hold only part of a reply,
 * or many replies: it never consumes an incomplete one.
 */
final class Resp {

  /** What {@link #read} returns when the buffer does not yet hold the whole next reply. */
  static final Object INCOMPLETE = new Object();

  /** The longest bulk string accepted: Redis's own default {@code proto-max-bulk-len}. */
  static final int MAX_BULK_BYTES = 512 * 1024 * 1024;

  /** The most elements an array may declare; far above any reply this library asks for. */
  static final int MAX_ARRAY_LENGTH = 1 << 20;

  /** How deeply arrays may nest. */
  static final int MAX_DEPTH = 32;

  private static final byte[] CRLF = {'\r', '\n'};

  private Resp() {}

  /** A reply that does not follow RESP2: the stream is out of step and the link must go. */
  static final class ProtocolException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ProtocolException(String message) {
      super(message);
    }
  }

  // ---- commands

  /** How many bytes {@link #write} puts for {@code verb} and {@code words}. */
  static int length(byte[] verb, byte[][] words) {
    int length = 1 + digits(1 + words.length) + 2 + bulkLength(verb);
    for (byte[] word : words) {
      length += bulkLength(word);
    }
    return length;
  }

  /**
   * Puts {@code verb} and {@code words} as one array of bulk strings.
   *
   * @throws java.nio.BufferOverflowException if {@code out} has less room than {@link #length}
   */
  static void write(ByteBuffer out, byte[] verb, byte[][] words) {
    out.put((byte) '*');
    putNumber(out, 1 + words.length);
    out.put(CRLF);
    putBulk(out, verb);
    for (byte[] word : words) {
      putBulk(out, word);
    }
  }

  private static int bulkLength(byte[] word) {
    return 1 + digits(word.length) + 2 + word.length + 2;
  }

  private static void putBulk(ByteBuffer out, byte[] word) {
    out.put((byte) '$');
    putNumber(out, word.length);
    out.put(CRLF);
    out.put(word);
    out.put(CRLF);
  }

  private static int digits(int value) {
    int digits = 1;
    for (int rest = value / 10; rest > 0; rest /= 10) {
      digits++;
    }
    return digits;
  }

  private static void putNumber(ByteBuffer out, int value) {
    int at = out.position() + digits(value);
    out.position(at);
    int rest = value;
    do {
      out.put(--at, (byte) ('0' + rest % 10));
      rest /= 10;
    } while (rest > 0);
  }

  // ---- replies

  /**
   * Decodes the next reply from {@code in}'s position and moves past it; if {@code in} holds only
   * part of it, returns {@link #INCOMPLETE} and leaves the position where it was.
   *
   * @throws ProtocolException if the bytes are not a RESP2 reply
   */
  static Object read(ByteBuffer in) {
    int start = in.position();
    Object reply = value(in, 0);
    if (reply == INCOMPLETE) {
      in.position(start);
    }
    return reply;
  }

  private static Object value(ByteBuffer in, int depth) {
    if (!in.hasRemaining()) {
      return INCOMPLETE;
    }
    byte type = in.get(in.position());
    int from = in.position() + 1;
    int end = lineEnd(in, from);
    if (end < 0) {
      return INCOMPLETE;
    }
    switch (type) {
      case '+':
        {
          byte[] text = new byte[end - from];
          in.get(from, text);
          in.position(end + 2);
          return text;
        }
      case '-':
        {
          byte[] text = new byte[end - from];
          in.get(from, text);
          in.position(end + 2);
          return new NodeCommand.ServerError(new String(text, StandardCharsets.UTF_8));
        }
      case ':':
        {
          long value = number(in, from, end);
          in.position(end + 2);
          return value;
        }
      case '$':
        {
          long length = number(in, from, end);
          if (length == -1) {
            in.position(end + 2);
            return null;
          }
          if (length < 0 || length > MAX_BULK_BYTES) {
            throw new ProtocolException("bulk string length " + length);
          }
          int data = end + 2;
          if (in.limit() - data < length + 2) {
            return INCOMPLETE;
          }
          int size = (int) length;
          if (in.get(data + size) != '\r' || in.get(data + size + 1) != '\n') {
            throw new ProtocolException("bulk string not followed by CRLF");
          }
          byte[] bytes = new byte[size];
          in.get(data, bytes);
          in.position(data + size + 2);
          return bytes;
        }
      case '*':
        {
          long count = number(in, from, end);
          in.position(end + 2);
          if (count == -1) {
            return null;
          }
          if (count < 0 || count > MAX_ARRAY_LENGTH) {
            throw new ProtocolException("array length " + count);
          }
          if (depth == MAX_DEPTH) {
            throw new ProtocolException("arrays nested deeper than " + MAX_DEPTH);
          }
          List<Object> items = new ArrayList<>((int) Math.min(count, 16));
          for (long i = 0; i < count; i++) {
            Object item = value(in, depth + 1);
            if (item == INCOMPLETE) {
              return INCOMPLETE;
            }
            items.add(item);
          }
          return items;
        }
      default:
        throw new ProtocolException("unexpected reply type " + describe(type));
    }
  }

  /** The index of the CR of the CRLF ending the line that starts at {@code from}, or -1. */
  private static int lineEnd(ByteBuffer in, int from) {
    int last = in.limit() - 1;
    for (int i = from; i < last; i++) {
      if (in.get(i) == '\r') {
        if (in.get(i + 1) != '\n') {
          throw new ProtocolException("CR without LF");
        }
        return i;
      }
    }
    return -1;
  }

  private static long number(ByteBuffer in, int from, int end) {
    boolean negative = from < end && in.get(from) == '-';
    int i = negative ? from + 1 : from;
    if (i == end || end - i > 19) {
      throw new ProtocolException("not a number of at most 19 digits");
    }
    long value = 0;
    for (; i < end; i++) {
      byte b = in.get(i);
      if (b < '0' || b > '9') {
        throw new ProtocolException("not a digit: " + describe(b));
      }
      value = value * 10 + (b - '0');
      if (value < 0) {
        throw new ProtocolException("number out of range");
      }
    }
    return negative ? -value : value;
  }

  private static String describe(byte b) {
    return b >= 0x20 && b < 0x7f ? "'" + (char) b + "'" : String.format("0x%02x", b & 0xff);
  }
}
