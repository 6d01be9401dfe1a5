package dev.redlock.chaos;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The store the lock guards: one plain connection to a Redis server that is never a lock master and
 * never faulted, holding one counter per resource. Holders increment with a read-modify-write
 * ({@code GET}, then {@code SET n+1}), deliberately not {@code INCR}, so two holders at once lose
 * an update that the checker then sees.
 *
 * <p>A minimal RESP2 client (three commands) so the test needs no Redis client of its own. Not
 * thread-safe: one per client.
 */
final class CounterStore implements AutoCloseable {

  private static final Duration TIMEOUT = Duration.ofSeconds(2);

  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;

  private CounterStore(Socket socket) throws IOException {
    this.socket = socket;
    this.in = new BufferedInputStream(socket.getInputStream());
    this.out = new BufferedOutputStream(socket.getOutputStream());
  }

  /**
   * Connects to {@code host:port}; every call is bounded by a 2 s timeout.
   *
   * @param address {@code host:port}
   */
  static CounterStore connect(String address) throws IOException {
    int colon = address.lastIndexOf(':');
    String host = address.substring(0, colon);
    int port = Integer.parseInt(address.substring(colon + 1));
    Socket socket = new Socket();
    try {
      socket.connect(new InetSocketAddress(host, port), (int) TIMEOUT.toMillis());
      socket.setSoTimeout((int) TIMEOUT.toMillis());
      socket.setTcpNoDelay(true);
      return new CounterStore(socket);
    } catch (IOException | RuntimeException e) {
      socket.close();
      throw e;
    }
  }

  static String key(String resource) {
    return "counter:" + resource;
  }

  /** The counter of {@code resource}, 0 if it was never written. */
  long read(String resource) throws IOException {
    String value = (String) call("GET", key(resource));
    return value == null ? 0 : Long.parseLong(value);
  }

  /** Sets the counter of {@code resource}. */
  void write(String resource, long value) throws IOException {
    Object reply = call("SET", key(resource), Long.toString(value));
    if (!"OK".equals(reply)) {
      throw new IOException("SET answered " + reply);
    }
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }

  private Object call(String... args) throws IOException {
    StringBuilder command = new StringBuilder().append('*').append(args.length).append("\r\n");
    for (String arg : args) {
      byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
      command.append('$').append(bytes.length).append("\r\n").append(arg).append("\r\n");
    }
    out.write(command.toString().getBytes(StandardCharsets.UTF_8));
    out.flush();
    return readReply();
  }

  private Object readReply() throws IOException {
    int type = in.read();
    String line = readLine();
    switch (type) {
      case '+':
        return line;
      case '-':
        throw new IOException("error reply: " + line);
      case ':':
        return Long.parseLong(line);
      case '$':
        int length = Integer.parseInt(line);
        if (length < 0) {
          return null;
        }
        byte[] data = in.readNBytes(length + 2);
        if (data.length != length + 2) {
          throw new EOFException("connection closed in a reply");
        }
        return new String(data, 0, length, StandardCharsets.UTF_8);
      case -1:
        throw new EOFException("connection closed");
      default:
        throw new IOException("unexpected reply type '" + (char) type + "'");
    }
  }

  private String readLine() throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    while (true) {
      int b = in.read();
      if (b == -1) {
        throw new EOFException("connection closed in a reply");
      }
      if (b == '\r') {
        if (in.read() != '\n') {
          throw new IOException("malformed reply line");
        }
        return line.toString(StandardCharsets.UTF_8);
      }
      line.write(b);
    }
  }
}
