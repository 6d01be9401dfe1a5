package dev.redlock.internal.transport;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A fake master on loopback that behaves until it is asked to lock: it answers the handshake
 * plausibly ({@code +OK} to AUTH and SELECT, each script's SHA-1 to SCRIPT LOAD, a clock to TIME,
 * and so on), then answers the first lock command ({@code SET}, which every acquire sends, or a
 * script: admit, release, extend) with the bytes its {@link Behavior} sends, until the client hangs
 * up. Each connection gets its own thread.
 */
final class HostileMaster implements AutoCloseable {

  /** What the master sends in answer to a lock command. */
  enum Behavior {
    /** {@code +xxxx...} without a CRLF, as fast as the socket takes it. */
    ENDLESS_LINE,
    /** Bytes that are no RESP2 at all, as fast as the socket takes them. */
    GARBAGE,
    /** A header announcing a 512 MiB bulk string, then its data, slowly. */
    OVERSIZE,
    /**
     * Integer replies ({@code :1}) without end, as fast as the socket takes them: each one a
     * well-formed reply, only far more of them than were asked for.
     */
    STREAM
  }

  /** How long a slow master waits between two small writes: pacing, not synchronization. */
  private static final long SLOW_WRITE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  private final Behavior behavior;
  private final ServerSocket server;
  private final Thread acceptor;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final AtomicInteger floods = new AtomicInteger();
  private final AtomicLong bytesSent = new AtomicLong();
  private volatile boolean closed;

  /** When each connection was accepted ({@link System#nanoTime}), in order. */
  final ConcurrentLinkedQueue<Long> accepted = new ConcurrentLinkedQueue<>();

  /**
   * How long each connection lived from its first hostile byte until the client hung up, in
   * nanoseconds, in order.
   */
  final ConcurrentLinkedQueue<Long> hostileLifetimes = new ConcurrentLinkedQueue<>();

  /** Bytes the master sends right after the handshake's last reply, in the same write. */
  private final byte[] afterHandshake;

  HostileMaster(Behavior behavior) throws IOException {
    this(behavior, new byte[0]);
  }

  HostileMaster(Behavior behavior, byte[] afterHandshake) throws IOException {
    this.behavior = behavior;
    this.afterHandshake = afterHandshake;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    this.acceptor = new Thread(this::acceptAll, "hostile-master-" + server.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** The master's address, {@code redis://127.0.0.1:port}. */
  String uri() {
    return "redis://127.0.0.1:" + server.getLocalPort();
  }

  /** How many connections the master accepted. */
  int connections() {
    return accepted.size();
  }

  /** How many connections it answered with its hostile bytes. */
  int floods() {
    return floods.get();
  }

  /**
   * How many hostile bytes the master wrote, all connections together: what the client read, and
   * what the sockets' buffers held when it hung up.
   */
  long bytesSent() {
    return bytesSent.get();
  }

  private void acceptAll() {
    while (!closed) {
      try {
        Socket socket = server.accept();
        accepted.add(System.nanoTime());
        sockets.add(socket);
        Thread serving = new Thread(() -> serve(socket), acceptor.getName() + "-connection");
        serving.setDaemon(true);
        serving.start();
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void serve(Socket socket) {
    try (socket) {
      InputStream in = new BufferedInputStream(socket.getInputStream());
      OutputStream out = socket.getOutputStream();
      int scriptLoads = 0;
      while (true) {
        List<byte[]> command = readCommand(in);
        if (command == null) {
          return;
        }
        String verb = new String(command.get(0), StandardCharsets.US_ASCII).toUpperCase();
        if (verb.equals("SET") || verb.equals("EVALSHA") || verb.equals("EVAL")) {
          floods.incrementAndGet();
          long start = System.nanoTime();
          try {
            misbehave(out);
          } finally {
            hostileLifetimes.add(System.nanoTime() - start);
          }
          return;
        }
        byte[] answer = answer(verb, command);
        if (verb.equals("SCRIPT") && ++scriptLoads == LuaScript.ALL.size()) {
          answer = concat(answer, afterHandshake);
        }
        out.write(answer);
        out.flush();
      }
    } catch (IOException e) {
      // the client hung up
    }
  }

  /** Sends the hostile bytes until the client hangs up (a write then fails). */
  private void misbehave(OutputStream out) throws IOException {
    switch (behavior) {
      case ENDLESS_LINE -> {
        byte[] chunk = new byte[64 * 1024];
        Arrays.fill(chunk, (byte) 'x');
        chunk[0] = '+';
        out.write(chunk);
        bytesSent.addAndGet(chunk.length);
        chunk[0] = 'x';
        while (!closed) {
          out.write(chunk);
          bytesSent.addAndGet(chunk.length);
        }
      }
      case GARBAGE -> {
        byte[] chunk = new byte[64 * 1024];
        for (int i = 0; i < chunk.length; i++) {
          chunk[i] = (byte) ("GET / HTTP/1.1\r\n".charAt(i % 16) ^ (i >>> 4));
        }
        chunk[0] = 'G'; // no RESP2 type
        while (!closed) {
          out.write(chunk);
          bytesSent.addAndGet(chunk.length);
        }
      }
      case STREAM -> {
        byte[] chunk = ascii(":1\r\n".repeat(16 * 1024));
        while (!closed) {
          out.write(chunk);
          bytesSent.addAndGet(chunk.length);
        }
      }
      case OVERSIZE -> {
        out.write("$536870912\r\n".getBytes(StandardCharsets.US_ASCII));
        byte[] chunk = new byte[1024];
        Arrays.fill(chunk, (byte) 'y');
        while (!closed) {
          LockSupport.parkNanos(SLOW_WRITE_NANOS);
          out.write(chunk);
          out.flush();
          bytesSent.addAndGet(chunk.length);
        }
      }
    }
  }

  /** A plausible answer to anything but a lock command. */
  private static byte[] answer(String verb, List<byte[]> command) {
    return switch (verb) {
      case "AUTH", "SELECT", "CLIENT" -> ascii("+OK\r\n");
      case "PING" -> ascii("+PONG\r\n");
      case "HELLO" ->
          concat(
              ascii("*14\r\n"),
              bulk("server"),
              bulk("redis"),
              bulk("version"),
              bulk("7.0.0"),
              bulk("proto"),
              ascii(":2\r\n"),
              bulk("id"),
              ascii(":1\r\n"),
              bulk("mode"),
              bulk("standalone"),
              bulk("role"),
              bulk("master"),
              bulk("modules"),
              ascii("*0\r\n"));
      case "SCRIPT" -> bulk(sha1(command.get(command.size() - 1)));
      case "TIME" -> {
        long micros = System.currentTimeMillis() * 1000;
        String seconds = Long.toString(micros / 1_000_000);
        String rest = Long.toString(micros % 1_000_000);
        yield concat(ascii("*2\r\n"), bulk(seconds), bulk(rest));
      }
      case "INFO" -> bulk("# Server\r\nredis_version:7.0.0\r\nuptime_in_seconds:86400\r\n");
      case "CONFIG" -> ascii("*0\r\n");
      case "MGET" ->
          ascii("*" + (command.size() - 1) + "\r\n" + "$-1\r\n".repeat(command.size() - 1));
      default -> ascii("-ERR unknown command '" + verb + "'\r\n");
    };
  }

  /** Reads one command, an array of bulk strings; null at the end of the stream. */
  private static List<byte[]> readCommand(InputStream in) throws IOException {
    int type = in.read();
    if (type < 0) {
      return null;
    }
    if (type != '*') {
      throw new IOException("not a command: " + type);
    }
    int count = Integer.parseInt(readLine(in));
    List<byte[]> words = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      if (in.read() != '$') {
        throw new IOException("not a bulk string");
      }
      int length = Integer.parseInt(readLine(in));
      byte[] word = in.readNBytes(length);
      in.readNBytes(2);
      words.add(word);
    }
    return words;
  }

  private static String readLine(InputStream in) throws IOException {
    StringBuilder line = new StringBuilder();
    for (int b = in.read(); b != '\r'; b = in.read()) {
      if (b < 0) {
        throw new IOException("end of stream in a line");
      }
      line.append((char) b);
    }
    in.read(); // LF
    return line.toString();
  }

  private static String sha1(byte[] body) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(body));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static byte[] bulk(String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    return concat(ascii("$" + bytes.length + "\r\n"), bytes, ascii("\r\n"));
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] concat(byte[]... parts) {
    int length = 0;
    for (byte[] part : parts) {
      length += part.length;
    }
    byte[] all = new byte[length];
    int at = 0;
    for (byte[] part : parts) {
      System.arraycopy(part, 0, all, at, part.length);
      at += part.length;
    }
    return all;
  }

  /** Stops accepting and hangs up on every client. */
  @Override
  public void close() throws IOException {
    closed = true;
    server.close();
    for (Socket socket : sockets) {
      socket.close();
    }
  }
}
