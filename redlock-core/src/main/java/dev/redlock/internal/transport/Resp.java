package dev.redlock.internal.transport;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * RESP2, the Redis wire protocol, as far as this library speaks it: a command is an array of bulk
 * strings; a reply is a simple string, an error, an integer, a bulk string (or null), or an array
 * (nested, or null). The selector transport writes and reads with it; {@link JedisLink} reads.
 *
 * <p>Replies decode to what {@link NodeCommand#complete} takes: a simple string or a bulk string to
 * a {@code byte[]}, an integer to a {@link Long}, an array to a {@link List}, a null bulk string or
 * array to {@code null}, and an error to a {@link ServerError}. A {@link Decoder} decodes them from
 * bytes that arrive in pieces, within limits that keep a broken or hostile master from making the
 * client allocate or scan without bound.
 */
final class Resp {

  /** What {@link Decoder#next} returns when the bytes so far hold no whole reply. */
  static final Object INCOMPLETE = new Object();

  // The limits. Nothing this library asks for comes near them: its replies are +OK, integers,
  // nil, TIME's two bulk strings, MGET of at most four keys, CONFIG GET pairs, INFO sections of a
  // few KiB and one-line errors. They are there so that one master, broken or hostile, cannot make
  // the client allocate or scan without bound (Redis's own limits, 512 MiB bulk strings, are for
  // servers that store such values).

  /** The longest bulk string accepted (1 MiB): hundreds of times the longest INFO section. */
  static final int MAX_BULK_BYTES = 1 << 20;

  /** The most elements an array may declare: the replies asked for have at most a few. */
  static final int MAX_ARRAY_LENGTH = 1024;

  /** How deeply arrays may nest: the replies asked for nest one deep. */
  static final int MAX_DEPTH = 8;

  /**
   * The longest simple string or error line, CRLF not counted (64 KiB): errors are one line of a
   * hundred bytes or so, a Lua error with its script's line a few hundred.
   */
  static final int MAX_LINE_BYTES = 64 * 1024;

  /** The longest integer or header line: a sign and 19 digits, CRLF not counted. */
  private static final int MAX_NUMBER_BYTES = 20;

  /**
   * The longest whole reply, with every header and element: the longest bulk string with room for a
   * line around it. This also bounds the elements an array of small values can make the client
   * hold.
   */
  static final int MAX_REPLY_BYTES = MAX_BULK_BYTES + MAX_LINE_BYTES;

  private static final byte[] CRLF = {'\r', '\n'};

  /**
   * The headers of the lengths every command of this library has, made once: {@code "$n\r\n"} and
   * {@code "*n\r\n"} for n below {@value #HEADERS} (a key, a token, a number, a script's SHA-1).
   * Longer ones are written digit by digit.
   */
  private static final int HEADERS = 128;

  private static final byte[][] BULK_HEADERS = headers('$');
  private static final byte[][] ARRAY_HEADERS = headers('*');

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
    int length = headerLength(1 + words.length) + bulkLength(verb);
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
    putHeader(out, ARRAY_HEADERS, '*', 1 + words.length);
    putBulk(out, verb);
    for (byte[] word : words) {
      putBulk(out, word);
    }
  }

  private static int bulkLength(byte[] word) {
    return headerLength(word.length) + word.length + 2;
  }

  private static void putBulk(ByteBuffer out, byte[] word) {
    putHeader(out, BULK_HEADERS, '$', word.length);
    out.put(word);
    out.put(CRLF);
  }

  /** The bytes of a header of {@code n}: its mark, its digits, CRLF. */
  private static int headerLength(int n) {
    return n < HEADERS ? BULK_HEADERS[n].length : 1 + digits(n) + 2;
  }

  /** Puts {@code mark}, {@code n} in digits and CRLF: from {@code made} when it has it. */
  private static void putHeader(ByteBuffer out, byte[][] made, char mark, int n) {
    if (n < HEADERS) {
      out.put(made[n]);
      return;
    }
    out.put((byte) mark);
    putNumber(out, n);
    out.put(CRLF);
  }

  private static byte[][] headers(char mark) {
    byte[][] made = new byte[HEADERS][];
    for (int n = 0; n < HEADERS; n++) {
      made[n] = (mark + Integer.toString(n) + "\r\n").getBytes(StandardCharsets.US_ASCII);
    }
    return made;
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
   * Decodes replies incrementally, from bytes that arrive in pieces of any size, for one
   * connection: each byte is looked at once, however a reply is split, and a reply in progress
   * keeps its state here (see {@link #next}).
   *
   * <p>The state machine: {@code TYPE} reads a reply's first byte; {@code LINE} copies the rest of
   * its first line until the CR, scanning only the bytes that arrived since the last call; {@code
   * LINE_LF} checks the LF and completes a simple string, an error or an integer, or reads a
   * header. A bulk string header opens {@code BULK}, which copies the data into a {@code byte[]} of
   * the declared length, then {@code BULK_CR} and {@code BULK_LF} check the CRLF after it. An array
   * header opens a frame on a stack (its list and the count of elements still due); each value
   * completed goes into the innermost frame, and a frame that is full is closed and is itself the
   * value completed. A value completed with no frame open is a whole reply.
   *
   * <p>Every limit ({@link #MAX_LINE_BYTES}, {@link #MAX_BULK_BYTES}, {@link #MAX_ARRAY_LENGTH},
   * {@link #MAX_DEPTH}, {@link #MAX_REPLY_BYTES}) is checked as soon as the bytes that break it
   * arrive: a header at its CRLF, before any of what it announces is read or allocated; a line once
   * it is longer than allowed. So a master cannot make the client hold more than a reply's bound,
   * nor scan a byte twice.
   *
   * <p>Not thread-safe: one connection's reader uses it. After a {@link ProtocolException} the
   * stream is out of step and the decoder must not be used again.
   */
  static final class Decoder {

    private enum State {
      TYPE,
      LINE,
      LINE_LF,
      BULK,
      BULK_CR,
      BULK_LF
    }

    /** An array being read: its elements so far and how many are still due. */
    private static final class Frame {
      final List<Object> items;
      int left;

      Frame(List<Object> items, int left) {
        this.items = items;
        this.left = left;
      }
    }

    /** A line buffer larger than this is given back once its line is done. */
    private static final int KEPT_LINE_BYTES = 1024;

    /** What a step returns when no value was completed by it. */
    private static final Object MORE = new Object();

    private State state = State.TYPE;
    private byte type; // of the line being read
    private byte[] line = new byte[64];
    private int lineLength;
    private byte[] bulk; // the bulk string being read, of its declared length
    private int bulkFilled;
    private final ArrayDeque<Frame> frames = new ArrayDeque<>();
    private long replyBytes; // of the reply being read, so far
    private long examined;

    /**
     * Decodes from {@code in}'s position until a whole reply is complete, and returns it, leaving
     * {@code in} just past it; or, once every byte of {@code in} is consumed with no reply
     * complete, returns {@link #INCOMPLETE}, keeping the part read for the next call.
     *
     * @throws ProtocolException if the bytes are not a RESP2 reply, or exceed a limit
     */
    Object next(ByteBuffer in) {
      while (in.hasRemaining()) {
        Object value = step(in);
        if (value != MORE) {
          Object reply = nest(value);
          if (reply != MORE) {
            replyBytes = 0;
            return reply;
          }
        }
      }
      return INCOMPLETE;
    }

    /** How many bytes this decoder looked at, in all: for the test that each is looked at once. */
    long examined() {
      return examined;
    }

    /**
     * Consumes what the current state takes of {@code in}; returns a value it completed, or MORE.
     */
    private Object step(ByteBuffer in) {
      switch (state) {
        case TYPE -> {
          byte b = in.get();
          consumed(1);
          if (b != '+' && b != '-' && b != ':' && b != '$' && b != '*') {
            throw new ProtocolException("unexpected reply type " + describe(b));
          }
          type = b;
          lineLength = 0;
          state = State.LINE;
          return line(in); // most replies arrive whole: on at once, in the same step
        }
        case LINE -> {
          return line(in);
        }
        case LINE_LF -> {
          byte b = in.get();
          consumed(1);
          if (b != '\n') {
            throw new ProtocolException("CR without LF");
          }
          state = State.TYPE;
          return lineDone();
        }
        case BULK -> {
          int n = Math.min(in.remaining(), bulk.length - bulkFilled);
          in.get(bulk, bulkFilled, n);
          bulkFilled += n;
          consumed(n);
          if (bulkFilled == bulk.length) {
            state = State.BULK_CR;
          }
          return MORE;
        }
        case BULK_CR -> {
          byte b = in.get();
          consumed(1);
          if (b != '\r') {
            throw new ProtocolException("bulk string not followed by CRLF");
          }
          state = State.BULK_LF;
          return MORE;
        }
        default -> {
          byte b = in.get();
          consumed(1);
          if (b != '\n') {
            throw new ProtocolException("bulk string not followed by CRLF");
          }
          state = State.TYPE;
          byte[] done = bulk;
          bulk = null;
          return done;
        }
      }
    }

    /**
     * Reads the current line as far as {@code in} holds it. A line that starts and ends, LF
     * included, within {@code in} is decoded where it lies, without a copy (the common case);
     * otherwise its bytes are kept until the rest arrives. Either way each byte is looked at once.
     */
    private Object line(ByteBuffer in) {
      int bound = type == '+' || type == '-' ? MAX_LINE_BYTES : MAX_NUMBER_BYTES;
      int from = in.position();
      // Looks no further than one byte past the bound: the byte that breaks it.
      int stop = (int) Math.min(in.limit(), (long) from + bound - lineLength + 1);
      int end = from;
      while (end < stop && in.get(end) != '\r') {
        end++;
      }
      boolean cr = end < stop;
      if (lineLength + end - from > bound) {
        consumed(end - from);
        throw new ProtocolException(
            bound == MAX_LINE_BYTES
                ? "line longer than " + MAX_LINE_BYTES + " bytes"
                : "not a number of at most 19 digits");
      }
      if (cr && lineLength == 0 && end + 1 < in.limit()) {
        consumed(end - from + 2);
        if (in.get(end + 1) != '\n') {
          throw new ProtocolException("CR without LF");
        }
        in.position(end + 2);
        state = State.TYPE;
        return inPlace(in, from, end - from);
      }
      consumed(end - from + (cr ? 1 : 0));
      appendLine(in, from, end - from);
      in.position(cr ? end + 1 : end);
      if (cr) {
        state = State.LINE_LF;
      }
      return MORE;
    }

    /** The value of a whole line of {@code n} bytes at {@code from} in {@code in}, type first. */
    private Object inPlace(ByteBuffer in, int from, int n) {
      switch (type) {
        case '+' -> {
          byte[] text = new byte[n];
          in.get(from, text);
          return text;
        }
        case '-' -> {
          byte[] text = new byte[n];
          in.get(from, text);
          return new ServerError(new String(text, StandardCharsets.UTF_8));
        }
        case ':' -> {
          return number(in, from, n);
        }
        default -> {
          return header(number(in, from, n), in);
        }
      }
    }

    /**
     * A bulk string's or array's header just ended with {@code value}: the value itself (null, an
     * empty array, a bulk string wholly in {@code in}), or MORE with the state set to read the
     * rest. {@code in} may be null: nothing more is at hand.
     */
    private Object header(long value, ByteBuffer in) {
      if (type == '$') {
        if (value == -1) {
          return null;
        }
        if (value < 0 || value > MAX_BULK_BYTES) {
          throw new ProtocolException("bulk string length " + value);
        }
        if (replyBytes + value + 2 > MAX_REPLY_BYTES) {
          throw new ProtocolException("reply longer than " + MAX_REPLY_BYTES + " bytes");
        }
        int size = (int) value;
        if (in != null && in.remaining() >= size + 2) { // whole: read it where it lies
          int at = in.position();
          consumed(size + 2);
          if (in.get(at + size) != '\r' || in.get(at + size + 1) != '\n') {
            throw new ProtocolException("bulk string not followed by CRLF");
          }
          byte[] bytes = new byte[size];
          in.get(at, bytes);
          in.position(at + size + 2);
          return bytes;
        }
        bulk = new byte[size];
        bulkFilled = 0;
        state = size == 0 ? State.BULK_CR : State.BULK;
        return MORE;
      }
      if (value == -1) {
        return null;
      }
      if (value < 0 || value > MAX_ARRAY_LENGTH) {
        throw new ProtocolException("array length " + value);
      }
      if (frames.size() == MAX_DEPTH) {
        throw new ProtocolException("arrays nested deeper than " + MAX_DEPTH);
      }
      List<Object> items = new ArrayList<>((int) Math.min(value, 16));
      if (value == 0) {
        return items;
      }
      frames.push(new Frame(items, (int) value));
      return MORE;
    }

    /** Counts {@code n} bytes looked at and consumed, within the reply's bound. */
    private void consumed(int n) {
      examined += n;
      replyBytes += n;
      if (replyBytes > MAX_REPLY_BYTES) {
        throw new ProtocolException("reply longer than " + MAX_REPLY_BYTES + " bytes");
      }
    }

    private void appendLine(ByteBuffer in, int from, int n) {
      if (lineLength + n > line.length) {
        line = Arrays.copyOf(line, Math.max(line.length * 2, lineLength + n));
      }
      in.get(from, line, lineLength, n);
      lineLength += n;
    }

    /** The line just ended: a value, or a header whose value is still to come (MORE). */
    private Object lineDone() {
      byte[] text = line;
      int length = lineLength;
      if (line.length > KEPT_LINE_BYTES) {
        line = new byte[64]; // a long line (an error's) is rare: keep the link's footprint small
      }
      switch (type) {
        case '+' -> {
          return Arrays.copyOf(text, length);
        }
        case '-' -> {
          return new ServerError(new String(text, 0, length, StandardCharsets.UTF_8));
        }
        case ':' -> {
          return number(text, length);
        }
        default -> {
          return header(number(text, length), null);
        }
      }
    }

    /** Puts a completed value in the innermost open array; returns a whole reply, or MORE. */
    private Object nest(Object value) {
      Object done = value;
      while (!frames.isEmpty()) {
        Frame innermost = frames.peek();
        innermost.items.add(done);
        if (--innermost.left > 0) {
          return MORE;
        }
        frames.pop();
        done = innermost.items;
      }
      return done;
    }
  }

  private static long number(ByteBuffer in, int from, int length) {
    boolean negative = length > 0 && in.get(from) == '-';
    int i = negative ? 1 : 0;
    if (i == length || length - i > 19) {
      throw new ProtocolException("not a number of at most 19 digits");
    }
    long value = 0;
    for (; i < length; i++) {
      byte b = in.get(from + i);
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

  private static long number(byte[] text, int length) {
    boolean negative = length > 0 && text[0] == '-';
    int i = negative ? 1 : 0;
    if (i == length || length - i > 19) {
      throw new ProtocolException("not a number of at most 19 digits");
    }
    long value = 0;
    for (; i < length; i++) {
      byte b = text[i];
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
