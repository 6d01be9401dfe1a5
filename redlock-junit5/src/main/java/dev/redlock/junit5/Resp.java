package dev.redlock.junit5;

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
 * One command to a local master on a connection of its own, bounded by a timeout: the few the
 * extension needs (PING, INFO, FLUSHALL, SHUTDOWN) and no client library for them.
 */
final class Resp {
  static final String HOST = "127.0.0.1";

  private Resp() {}

  /** The master's error reply. */
  static final class ErrorReply extends IOException {
    private static final long serialVersionUID = 1L;

    ErrorReply(String message) {
      super(message);
    }
  }

  /**
   * Sends {@code args} and reads one reply: a simple string, an integer or a bulk string as text,
   * {@code null} for a null bulk string. Arrays are not needed and not read.
   *
   * @throws ErrorReply on an error reply
   * @throws IOException if the master cannot be reached or does not answer within {@code timeout}
   */
  static String command(int port, Duration timeout, String... args) throws IOException {
    int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(HOST, port), millis);
      socket.setSoTimeout(millis);
      OutputStream out = socket.getOutputStream();
      out.write(encode(args));
      out.flush();
      return read(socket.getInputStream());
    }
  }

  static byte[] encode(String... args) {
    StringBuilder b = new StringBuilder().append('*').append(args.length).append("\r\n");
    for (String arg : args) {
      byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
      b.append('$').append(bytes.length).append("\r\n").append(arg).append("\r\n");
    }
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  static String read(InputStream in) throws IOException {
    int type = in.read();
    if (type < 0) {
      throw new EOFException("the master closed the connection without a reply");
    }
    String line = line(in);
    switch (type) {
      case '+', ':':
        return line;
      case '-':
        throw new ErrorReply(line);
      case '$':
        int length = Integer.parseInt(line);
        if (length < 0) {
          return null;
        }
        byte[] body = in.readNBytes(length + 2);
        if (body.length != length + 2) {
          throw new EOFException("the master closed the connection inside a reply");
        }
        return new String(body, 0, length, StandardCharsets.UTF_8);
      default:
        throw new IOException("unexpected reply type '" + (char) type + "': " + line);
    }
  }

  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) != '\r') {
      if (c < 0) {
        throw new EOFException("the master closed the connection inside a reply");
      }
      line.write(c);
    }
    if (in.read() != '\n') {
      throw new IOException("malformed reply: CR without LF");
    }
    return line.toString(StandardCharsets.UTF_8);
  }
}
