package dev.redlock.testkit;

import dev.redlock.testkit.HostileMaster.Mode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection of a {@link HostileMaster}, on a thread of its own: answers the handshake
 * as Redis would, then, from the first lock command on, misbehaves as the master's {@link Mode}
 * says. Ends when the client leaves, the mode is done (RESET) or the master is closed (which closes
 * the socket, ending any blocked read or write).
 */
final class HostileConnection implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(HostileConnection.class);

  /**
   * What a client sends while it sets a connection up, answered plainly in every mode. {@code TIME}
   * is one too until the client loaded a script: after that it starts the default acquire.
   */
  static final Set<String> HANDSHAKE =
      Set.of(
          "AUTH", "HELLO", "SELECT", "SCRIPT", "INFO", "CONFIG", "PING", "ECHO", "CLIENT",
          "COMMAND", "QUIT");

  private static final int READ_BYTES = 16 * 1024;

  /** FLOOD and STREAM: how many bytes one write sends. */
  static final int CHUNK_BYTES = 64 * 1024;

  /** SLOWLORIS: answers beyond this backlog are dropped; they would take days to dribble. */
  private static final int MAX_BACKLOG_BYTES = 1 << 20;

  private static final byte[] OK = ascii("+OK\r\n");
  private static final byte[] ONE = ascii(":1\r\n");
  private static final byte[] NIL = ascii("$-1\r\n");
  private static final byte[] EMPTY_ARRAY = ascii("*0\r\n");

  private final HostileMaster master;
  private final Socket socket;
  private final CommandDecoder decoder = new CommandDecoder();
  private final byte[] readBuffer = new byte[READ_BYTES];
  private final SplittableRandom random;
  private boolean scriptLoaded;

  HostileConnection(HostileMaster master, Socket socket, long seed) {
    this.master = master;
    this.socket = socket;
    this.random = new SplittableRandom(seed);
  }

  @Override
  public void run() {
    try (socket) {
      socket.setTcpNoDelay(true);
      InputStream in = socket.getInputStream();
      OutputStream out = socket.getOutputStream();
      try {
        ArrayDeque<List<byte[]>> pending = handshake(in, out);
        if (pending == null) {
          return; // the client left (or quit) before its first lock command
        }
        master.misbehaved();
        switch (master.mode()) {
          case FLOOD -> flood(out);
          case GARBAGE -> garbage(in, out, pending);
          case SLOWLORIS -> slowloris(in, out, pending);
          case OVERSIZE -> oversize(in, out);
          case RESET -> reset();
          case STREAM -> stream(out);
        }
      } catch (CommandDecoder.ProtocolError e) {
        // As Redis does: say why, then hang up.
        write(out, ascii("-ERR Protocol error: " + e.getMessage() + "\r\n"));
      }
    } catch (IOException e) {
      // The client left, or close() closed the socket: this connection is done.
      log.debug("hostile connection {} ended: {}", socket.getRemoteSocketAddress(), e.toString());
    }
  }

  // ---- before the first lock command

  /**
   * Answers commands until the first lock command; returns it with any read after it, or null if
   * the client left or quit first. The replies to one read go out in one write, as Redis's do.
   */
  private ArrayDeque<List<byte[]>> handshake(InputStream in, OutputStream out) throws IOException {
    ByteArrayOutputStream replies = new ByteArrayOutputStream();
    while (true) {
      List<byte[]> command;
      while ((command = decoder.next()) != null) {
        if (isLockCommand(command)) {
          flush(out, replies);
          ArrayDeque<List<byte[]>> pending = new ArrayDeque<>();
          pending.add(command);
          drain(pending);
          return pending;
        }
        replies.writeBytes(answer(command));
        if (name(command).equals("QUIT")) {
          flush(out, replies);
          return null;
        }
      }
      flush(out, replies);
      if (!read(in)) {
        return null;
      }
    }
  }

  private boolean isLockCommand(List<byte[]> command) {
    String name = name(command);
    if (name.equals("TIME")) {
      return scriptLoaded;
    }
    return !HANDSHAKE.contains(name);
  }

  // ---- the modes

  /** An endless simple string: '+' and then 'x' forever, never a CRLF. */
  private void flood(OutputStream out) throws IOException {
    byte[] chunk = new byte[CHUNK_BYTES];
    Arrays.fill(chunk, (byte) 'x');
    chunk[0] = '+';
    write(out, chunk);
    chunk[0] = 'x';
    writeUntilClosed(out, chunk);
  }

  /** Integer replies ':1', each well-formed, without end. */
  private void stream(OutputStream out) throws IOException {
    writeUntilClosed(out, ascii(":1\r\n".repeat(CHUNK_BYTES / 4)));
  }

  /** Writes {@code chunk} again and again until the master is closed or the client hangs up. */
  private void writeUntilClosed(OutputStream out, byte[] chunk) throws IOException {
    while (!master.isClosed()) {
      write(out, chunk); // blocks while the client does not read; close() ends it
    }
  }

  /** A line of junk for every command, this one and all that follow. */
  private void garbage(InputStream in, OutputStream out, ArrayDeque<List<byte[]>> pending)
      throws IOException {
    ByteArrayOutputStream junk = new ByteArrayOutputStream();
    while (true) {
      for (; !pending.isEmpty(); pending.poll()) {
        junk.writeBytes(junkLine());
      }
      flush(out, junk);
      if (!read(in)) {
        return;
      }
      drain(pending);
    }
  }

  /**
   * A line of random printable characters that no RESP version reads as a reply: it starts with
   * '?', which is no RESP2 or RESP3 type, and ends with CRLF.
   */
  private byte[] junkLine() {
    int length = 16 + random.nextInt(64);
    byte[] line = new byte[length + 2];
    line[0] = '?';
    for (int i = 1; i < length; i++) {
      line[i] = (byte) ('!' + random.nextInt('~' - '!' + 1));
    }
    line[length] = '\r';
    line[length + 1] = '\n';
    return line;
  }

  /** The right reply to every command, one byte per interval. */
  private void slowloris(InputStream in, OutputStream out, ArrayDeque<List<byte[]>> pending)
      throws IOException {
    byte[] backlog = new byte[0];
    int sent = 0; // bytes of the backlog written
    long next = System.nanoTime();
    while (!master.isClosed()) {
      if (!pending.isEmpty()) {
        ByteArrayOutputStream more = new ByteArrayOutputStream();
        more.write(backlog, sent, backlog.length - sent);
        for (List<byte[]> command; (command = pending.poll()) != null; ) {
          if (more.size() < MAX_BACKLOG_BYTES) {
            more.writeBytes(answer(command));
          }
        }
        backlog = more.toByteArray();
        sent = 0;
      }
      long now = System.nanoTime();
      boolean due = sent < backlog.length;
      if (due && now - next >= 0) {
        write(out, backlog, sent++, 1);
        next = now + master.intervalNanos();
        continue;
      }
      // Wait for commands until the next byte is due; with nothing due, until one arrives.
      if (!readFor(in, due ? next - now : 0)) {
        return;
      }
      drain(pending);
    }
  }

  /**
   * A bulk string header announcing {@value HostileMaster#OVERSIZE_LENGTH} bytes, then its data, a
   * chunk of {@value HostileMaster#TRICKLE_BYTES} bytes per interval. What the client sends
   * meanwhile is read and thrown away, so its writes never back up.
   */
  private void oversize(InputStream in, OutputStream out) throws IOException {
    write(out, ascii("$" + HostileMaster.OVERSIZE_LENGTH + "\r\n"));
    byte[] chunk = new byte[HostileMaster.TRICKLE_BYTES];
    Arrays.fill(chunk, (byte) 'x');
    long left = HostileMaster.OVERSIZE_LENGTH;
    long next = System.nanoTime();
    while (!master.isClosed()) {
      long now = System.nanoTime();
      if (left > 0 && now - next >= 0) {
        int n = (int) Math.min(chunk.length, left);
        write(out, chunk, 0, n);
        left -= n;
        if (left == 0) {
          write(out, ascii("\r\n")); // days later, at the default interval
        }
        next = now + master.intervalNanos();
        continue;
      }
      if (!discardFor(in, left > 0 ? next - now : 0)) {
        return;
      }
    }
  }

  /** Resets the connection: a close with SO_LINGER 0 sends an RST instead of a FIN. */
  private void reset() throws IOException {
    socket.setSoLinger(true, 0);
    socket.close();
  }

  // ---- replies

  /** What Redis would answer, near enough for a client: the handshake's and the lock commands'. */
  private byte[] answer(List<byte[]> command) {
    String name = name(command);
    return switch (name) {
      case "AUTH", "SELECT", "CLIENT", "QUIT", "FLUSHALL", "FLUSHDB", "SET" -> OK;
      case "PING" -> command.size() > 1 ? bulk(command.get(1)) : ascii("+PONG\r\n");
      case "ECHO" -> command.size() > 1 ? bulk(command.get(1)) : wrongArguments(name);
      case "HELLO" -> hello(command);
      case "COMMAND" -> EMPTY_ARRAY;
      case "SCRIPT" -> script(command);
      case "INFO" -> bulk(ascii(master.info()));
      case "CONFIG" -> config(command);
      case "TIME" -> time();
      case "GET" -> NIL;
      case "MGET" -> nils(command.size() - 1);
      case "DBSIZE" -> ascii(":0\r\n");
      default -> ONE; // EVALSHA, EVAL, DEL, PEXPIRE and the like: "done"
    };
  }

  /** {@code HELLO [2 ...]}: Redis 7's RESP2 answer; any other protocol version is refused. */
  private static byte[] hello(List<byte[]> command) {
    if (command.size() > 1 && !upper(command.get(1)).equals("2")) {
      return ascii("-NOPROTO unsupported protocol version\r\n"); // RESP2 is all it speaks
    }
    ByteArrayOutputStream reply = new ByteArrayOutputStream();
    reply.writeBytes(ascii("*14\r\n"));
    reply.writeBytes(bulk(ascii("server")));
    reply.writeBytes(bulk(ascii("redis")));
    reply.writeBytes(bulk(ascii("version")));
    reply.writeBytes(bulk(ascii("7.0.15")));
    reply.writeBytes(bulk(ascii("proto")));
    reply.writeBytes(ascii(":2\r\n"));
    reply.writeBytes(bulk(ascii("id")));
    reply.writeBytes(ONE);
    reply.writeBytes(bulk(ascii("mode")));
    reply.writeBytes(bulk(ascii("standalone")));
    reply.writeBytes(bulk(ascii("role")));
    reply.writeBytes(bulk(ascii("master")));
    reply.writeBytes(bulk(ascii("modules")));
    reply.writeBytes(EMPTY_ARRAY);
    return reply.toByteArray();
  }

  private byte[] script(List<byte[]> command) {
    String sub = command.size() > 1 ? upper(command.get(1)) : "";
    switch (sub) {
      case "LOAD":
        if (command.size() != 3) {
          return wrongArguments("SCRIPT|LOAD");
        }
        scriptLoaded = true;
        return bulk(sha1Hex(command.get(2)));
      case "EXISTS":
        ByteArrayOutputStream reply = new ByteArrayOutputStream();
        reply.writeBytes(ascii("*" + (command.size() - 2) + "\r\n"));
        for (int i = 2; i < command.size(); i++) {
          reply.writeBytes(ONE);
        }
        return reply.toByteArray();
      case "FLUSH":
        return OK;
      default:
        return ascii("-ERR unknown subcommand '" + sub + "'\r\n");
    }
  }

  /** {@code CONFIG GET}: {@code appendonly no} and {@code appendfsync everysec}, nothing else. */
  private static byte[] config(List<byte[]> command) {
    String sub = command.size() > 1 ? upper(command.get(1)) : "";
    if (sub.equals("SET") || sub.equals("RESETSTAT") || sub.equals("REWRITE")) {
      return OK;
    }
    if (!sub.equals("GET") || command.size() < 3) {
      return ascii("-ERR unknown subcommand or wrong number of arguments for 'CONFIG'\r\n");
    }
    ByteArrayOutputStream pairs = new ByteArrayOutputStream();
    int count = 0;
    for (int i = 2; i < command.size(); i++) {
      String parameter = new String(command.get(i), StandardCharsets.UTF_8);
      String value =
          switch (parameter.toLowerCase(Locale.ROOT)) {
            case "appendonly" -> "no";
            case "appendfsync" -> "everysec";
            default -> null;
          };
      if (value != null) {
        pairs.writeBytes(bulk(ascii(parameter)));
        pairs.writeBytes(bulk(ascii(value)));
        count += 2;
      }
    }
    ByteArrayOutputStream reply = new ByteArrayOutputStream();
    reply.writeBytes(ascii("*" + count + "\r\n"));
    reply.writeBytes(pairs.toByteArray());
    return reply.toByteArray();
  }

  private static byte[] time() {
    long micros = TimeUnit.MILLISECONDS.toMicros(System.currentTimeMillis());
    ByteArrayOutputStream reply = new ByteArrayOutputStream();
    reply.writeBytes(ascii("*2\r\n"));
    reply.writeBytes(bulk(ascii(Long.toString(micros / 1_000_000))));
    reply.writeBytes(bulk(ascii(Long.toString(micros % 1_000_000))));
    return reply.toByteArray();
  }

  private static byte[] nils(int count) {
    ByteArrayOutputStream reply = new ByteArrayOutputStream();
    reply.writeBytes(ascii("*" + count + "\r\n"));
    for (int i = 0; i < count; i++) {
      reply.writeBytes(NIL);
    }
    return reply.toByteArray();
  }

  private static byte[] wrongArguments(String name) {
    return ascii(
        "-ERR wrong number of arguments for '" + name.toLowerCase(Locale.ROOT) + "' command\r\n");
  }

  private static byte[] bulk(byte[] data) {
    ByteArrayOutputStream reply = new ByteArrayOutputStream(data.length + 16);
    reply.writeBytes(ascii("$" + data.length + "\r\n"));
    reply.writeBytes(data);
    reply.writeBytes(ascii("\r\n"));
    return reply.toByteArray();
  }

  /** The lowercase hex SHA-1 of a script, as {@code SCRIPT LOAD} answers it. */
  static byte[] sha1Hex(byte[] body) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-1").digest(body);
      return ascii(HexFormat.of().formatHex(digest));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 is required of every Java platform", e);
    }
  }

  // ---- I/O

  /** Reads what arrives into the decoder; false if the client closed the connection. */
  private boolean read(InputStream in) throws IOException {
    int n = in.read(readBuffer);
    if (n < 0) {
      return false;
    }
    decoder.feed(readBuffer, 0, n);
    return true;
  }

  /**
   * As {@link #read}, waiting at most {@code nanos} (0: without limit); true also if nothing came.
   */
  private boolean readFor(InputStream in, long nanos) throws IOException {
    socket.setSoTimeout(timeoutMillis(nanos));
    try {
      return read(in);
    } catch (SocketTimeoutException e) {
      return true; // the socket stays usable after a timed-out read
    }
  }

  /** Reads and throws away what arrives, waiting at most {@code nanos} (0: without limit). */
  private boolean discardFor(InputStream in, long nanos) throws IOException {
    socket.setSoTimeout(timeoutMillis(nanos));
    try {
      return in.read(readBuffer) >= 0;
    } catch (SocketTimeoutException e) {
      return true;
    }
  }

  private static int timeoutMillis(long nanos) {
    if (nanos <= 0) {
      return 0; // no limit
    }
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(nanos)));
  }

  /** Moves every whole command decoded so far to {@code pending}. */
  private void drain(ArrayDeque<List<byte[]>> pending) throws IOException {
    for (List<byte[]> command; (command = decoder.next()) != null; ) {
      pending.add(command);
    }
  }

  private void flush(OutputStream out, ByteArrayOutputStream replies) throws IOException {
    if (replies.size() > 0) {
      write(out, replies.toByteArray());
      replies.reset();
    }
  }

  private void write(OutputStream out, byte[] bytes) throws IOException {
    write(out, bytes, 0, bytes.length);
  }

  private void write(OutputStream out, byte[] bytes, int offset, int length) throws IOException {
    out.write(bytes, offset, length);
    master.sent(length);
  }

  private static String name(List<byte[]> command) {
    return upper(command.get(0));
  }

  private static String upper(byte[] word) {
    return new String(word, StandardCharsets.UTF_8).toUpperCase(Locale.ROOT);
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }
}
