package dev.redlock.testkit;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One-shot RESP exchanges over a raw socket, for process control: no pool, no client library, no
 * logging, so a poll loop stays cheap and quiet.
 */
final class Probe {
  private static final Pattern PROCESS_ID = Pattern.compile("(?m)^process_id:(\\d+)\\r?$");
  private static final Pattern LOADING_DONE = Pattern.compile("(?m)^loading:0\\r?$");

  private Probe() {}

  /**
   * The {@code process_id} the server on {@code port} reports once it is ready: it answers {@code
   * INFO} and has finished loading its dataset ({@code INFO} answers during loading, which other
   * commands meet with {@code -LOADING}). Empty if nothing answers or the server is still loading.
   */
  static OptionalLong readyServerPid(String host, int port, Duration timeout) {
    try (Socket socket = connect(host, port, timeout)) {
      OutputStream out = socket.getOutputStream();
      // Two commands, not "INFO server persistence": Redis 6.2 takes one section only.
      out.write("INFO server\r\nINFO persistence\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      DataInputStream in = new DataInputStream(socket.getInputStream());
      String server = readBulk(in);
      String persistence = readBulk(in);
      Matcher pid = PROCESS_ID.matcher(server);
      if (!pid.find() || !LOADING_DONE.matcher(persistence).find()) {
        return OptionalLong.empty();
      }
      return OptionalLong.of(Long.parseLong(pid.group(1)));
    } catch (IOException | NumberFormatException e) {
      return OptionalLong.empty();
    }
  }

  /** A bulk string reply as text; an error or other reply reads as empty. */
  private static String readBulk(DataInputStream in) throws IOException {
    String header = readLine(in);
    if (!header.startsWith("$")) {
      return "";
    }
    byte[] body = new byte[Integer.parseInt(header.substring(1))];
    in.readFully(body);
    readLine(in);
    return new String(body, StandardCharsets.UTF_8);
  }

  /** Sends {@code SHUTDOWN NOSAVE}; true if the server closed the connection without an error. */
  static boolean shutdownNoSave(String host, int port, Duration timeout) {
    try (Socket socket = connect(host, port, timeout)) {
      OutputStream out = socket.getOutputStream();
      out.write("SHUTDOWN NOSAVE\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      // A server that shuts down sends nothing and closes; an error reply means it refused.
      return socket.getInputStream().read() == -1;
    } catch (IOException e) {
      // A reset while the server exits also counts as "gone"; the caller checks the process.
      return true;
    }
  }

  private static Socket connect(String host, int port, Duration timeout) throws IOException {
    int millis = (int) Math.max(1, timeout.toMillis());
    Socket socket = new Socket();
    try {
      socket.connect(new InetSocketAddress(host, port), millis);
      socket.setSoTimeout(millis);
      return socket;
    } catch (IOException e) {
      socket.close();
      throw e;
    }
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int b;
    while ((b = in.read()) != -1) {
      if (b == '\n') {
        break;
      }
      if (b != '\r') {
        line.write(b);
      }
    }
    return line.toString(StandardCharsets.UTF_8);
  }
}
