package dev.redlock.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Decodes the commands a client sends to a Redis server, as many or as few as each read brings:
 * RESP arrays of bulk strings (what every client library sends, pipelined several to a read), and
 * inline commands ({@code PING\r\n}, what a person types into a raw socket). Bytes are fed as they
 * arrive; {@link #next()} hands out each whole command once and leaves a partial one for the next
 * read. Not thread-safe: one connection's thread uses it.
 */
final class CommandDecoder {

  /** A command longer than this is refused: the commands a master is sent are far smaller. */
  static final int MAX_COMMAND_BYTES = 16 * 1024 * 1024;

  private static final int MAX_ARGUMENTS = 1 << 20;

  private byte[] buffer = new byte[16 * 1024];
  private int start; // the first byte not yet decoded
  private int end; // one past the last byte fed

  /** The client's bytes make no command: the connection must end, as Redis ends it. */
  static final class ProtocolError extends IOException {
    private static final long serialVersionUID = 1L;

    ProtocolError(String message) {
      super(message);
    }
  }

  /** Appends {@code length} bytes of {@code bytes} from {@code offset}. */
  void feed(byte[] bytes, int offset, int length) throws ProtocolError {
    if (end + length > buffer.length) {
      System.arraycopy(buffer, start, buffer, 0, end - start);
      end -= start;
      start = 0;
      if (end + length > buffer.length) {
        if (end + length > MAX_COMMAND_BYTES) {
          throw new ProtocolError("command longer than " + MAX_COMMAND_BYTES + " bytes");
        }
        buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, end + length));
      }
    }
    System.arraycopy(bytes, offset, buffer, end, length);
    end += length;
  }

  /**
   * The next whole command, its name and arguments as given, or null if the bytes fed so far hold
   * only part of one (or none).
   *
   * @throws ProtocolError if the bytes are no command
   */
  List<byte[]> next() throws ProtocolError {
    while (start < end) {
      if (buffer[start] == '*') {
        return array();
      }
      int lineEnd = indexOf('\n', start);
      if (lineEnd < 0) {
        return null;
      }
      int to = lineEnd > start && buffer[lineEnd - 1] == '\r' ? lineEnd - 1 : lineEnd;
      String line = new String(buffer, start, to - start, StandardCharsets.UTF_8).strip();
      start = lineEnd + 1;
      if (line.isEmpty()) {
        continue; // Redis ignores empty inline lines too
      }
      List<byte[]> words = new ArrayList<>();
      for (String word : line.split("\\s+")) {
        words.add(word.getBytes(StandardCharsets.UTF_8));
      }
      return words;
    }
    return null;
  }

  /** An array of bulk strings at {@link #start}; null, consuming nothing, if incomplete. */
  private List<byte[]> array() throws ProtocolError {
    int at = start + 1;
    int lineEnd = crlf(at);
    if (lineEnd < 0) {
      return null;
    }
    long count = number(at, lineEnd);
    if (count < 0 || count > MAX_ARGUMENTS) {
      throw new ProtocolError("invalid multibulk length " + count);
    }
    at = lineEnd + 2;
    List<byte[]> words = new ArrayList<>((int) Math.min(count, 16));
    for (long i = 0; i < count; i++) {
      if (at >= end) {
        return null;
      }
      if (buffer[at] != '$') {
        throw new ProtocolError("expected '$', got '" + (char) buffer[at] + "'");
      }
      lineEnd = crlf(at + 1);
      if (lineEnd < 0) {
        return null;
      }
      long length = number(at + 1, lineEnd);
      if (length < 0 || length > MAX_COMMAND_BYTES) {
        throw new ProtocolError("invalid bulk length " + length);
      }
      int data = lineEnd + 2;
      if (end - data < length + 2) {
        return null;
      }
      words.add(Arrays.copyOfRange(buffer, data, data + (int) length));
      at = data + (int) length + 2;
    }
    start = at;
    if (words.isEmpty()) {
      return next(); // "*0\r\n" is no command; Redis skips it
    }
    return words;
  }

  /** The index of the CR of the next CRLF from {@code from}, or -1 if none was fed yet. */
  private int crlf(int from) throws ProtocolError {
    int lf = indexOf('\n', from);
    if (lf < 0) {
      return -1;
    }
    if (lf == from || buffer[lf - 1] != '\r') {
      throw new ProtocolError("line not ended by CRLF");
    }
    return lf - 1;
  }

  private int indexOf(char c, int from) {
    for (int i = from; i < end; i++) {
      if (buffer[i] == c) {
        return i;
      }
    }
    return -1;
  }

  private long number(int from, int to) throws ProtocolError {
    String text = new String(buffer, from, to - from, StandardCharsets.US_ASCII);
    try {
      return Long.parseLong(text);
    } catch (NumberFormatException e) {
      throw new ProtocolError("not a number: '" + text + "'");
    }
  }
}
