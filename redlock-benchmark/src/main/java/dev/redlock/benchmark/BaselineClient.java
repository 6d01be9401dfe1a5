package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.Masters;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * The benchmark's baseline: the least a Redlock client must do on the wire, written by hand. One
 * thread, N plain blocking {@link Socket}s with {@code TCP_NODELAY}. A round writes one RESP
 * command to every socket first, then reads the N replies in socket order, parsing the reply line
 * by hand. No threads, no futures, no timeouts beyond the socket's read timeout, no reconnects.
 *
 * <p>Not thread-safe; for one thread only.
 */
final class BaselineClient implements AutoCloseable {

  /**
   * Where redlock-core keeps its compare-and-delete script on the classpath. The baseline loads
   * that very file, so its release round runs the Lua RedLock runs.
   */
  static final String RELEASE_SCRIPT_RESOURCE = "dev/redlock/internal/transport/release.lua";

  private static final byte[] SET = ascii("SET");
  private static final byte[] NX = ascii("NX");
  private static final byte[] PX = ascii("PX");
  private static final byte[] EVALSHA = ascii("EVALSHA");
  private static final byte[] ONE = ascii("1");

  private final List<Connection> connections;
  private final byte[] releaseSha;
  private final Command command = new Command();

  private BaselineClient(List<Connection> connections, byte[] releaseSha) {
    this.connections = connections;
    this.releaseSha = releaseSha;
  }

  /**
   * Connects to every master, authenticates and selects the database where the URI says so, and
   * loads redlock-core's release script.
   *
   * @param uris {@code redis://[user:password@]host[:port][/db]}; TLS is not supported
   * @param timeout connect and read timeout of every socket
   * @throws IOException if a master cannot be reached or refuses a command
   * @throws IllegalArgumentException if a URI is malformed or asks for TLS
   * @throws IllegalStateException if redlock-core's release script is not on the classpath
   */
  static BaselineClient connect(List<String> uris, Duration timeout) throws IOException {
    requireNonNull(uris, "uris");
    requireNonNull(timeout, "timeout");
    String script = releaseScript();
    String sha = sha1Hex(script);
    List<Connection> connections = new ArrayList<>();
    try {
      for (String uri : uris) {
        Connection connection = Connection.open(uri, (int) timeout.toMillis());
        connections.add(connection);
        String loaded = connection.call("SCRIPT", "LOAD", script);
        if (!sha.equals(loaded)) {
          throw new IOException("SCRIPT LOAD on " + connection.name + " returned " + loaded);
        }
      }
    } catch (IOException | RuntimeException e) {
      connections.forEach(Connection::close);
      throw e;
    }
    return new BaselineClient(List.copyOf(connections), ascii(sha));
  }

  /** Returns the number of masters. */
  int size() {
    return connections.size();
  }

  /**
   * Sends {@code SET key token NX PX ttl} to every master, then reads every reply.
   *
   * @return how many masters set the key
   * @throws IOException on a socket error, a timeout or an error reply
   */
  int setRound(byte[] key, byte[] token, long ttlMillis) throws IOException {
    command.begin(6).bulk(SET).bulk(key).bulk(token).bulk(NX).bulk(PX).bulk(ttlMillis);
    sendToAll();
    int granted = 0;
    for (Connection connection : connections) {
      if (connection.readSetReply()) {
        granted++;
      }
    }
    return granted;
  }

  /**
   * Sends the release script (by {@code EVALSHA}) to every master, then reads every reply.
   *
   * @return how many masters deleted the key
   * @throws IOException on a socket error, a timeout or an error reply
   */
  int releaseRound(byte[] key, byte[] token) throws IOException {
    command.begin(5).bulk(EVALSHA).bulk(releaseSha).bulk(ONE).bulk(key).bulk(token);
    sendToAll();
    int released = 0;
    for (Connection connection : connections) {
      if (connection.readInteger() == 1) {
        released++;
      }
    }
    return released;
  }

  private void sendToAll() throws IOException {
    for (Connection connection : connections) {
      connection.out.write(command.bytes, 0, command.length);
    }
  }

  /** Closes every socket. */
  @Override
  public void close() {
    connections.forEach(Connection::close);
  }

  /**
   * Returns redlock-core's own release script, read from the classpath.
   *
   * @throws IllegalStateException if redlock-core's jar is not on the classpath (or lacks the
   *     script)
   */
  static String releaseScript() {
    return releaseScript(BaselineClient.class.getClassLoader());
  }

  /**
   * Reads {@link #RELEASE_SCRIPT_RESOURCE} through {@code loader}; see {@link #releaseScript()}.
   */
  static String releaseScript(ClassLoader loader) {
    requireNonNull(loader, "loader");
    try (InputStream in = loader.getResourceAsStream(RELEASE_SCRIPT_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(
            RELEASE_SCRIPT_RESOURCE
                + " is not on the classpath: the baseline runs redlock-core's own release script,"
                + " so redlock-core's jar must be on the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + RELEASE_SCRIPT_RESOURCE, e);
    }
  }

  static String sha1Hex(String script) {
    try {
      MessageDigest sha1 = MessageDigest.getInstance("SHA-1");
      return HexFormat.of().formatHex(sha1.digest(script.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 is missing from this JVM", e);
    }
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  /** One RESP array being encoded into a reused buffer. */
  private static final class Command {
    byte[] bytes = new byte[256];
    int length;

    Command begin(int arguments) {
      length = 0;
      put((byte) '*');
      putDecimal(arguments);
      return crlf();
    }

    Command bulk(byte[] argument) {
      put((byte) '$');
      putDecimal(argument.length);
      crlf();
      ensure(argument.length);
      System.arraycopy(argument, 0, bytes, length, argument.length);
      length += argument.length;
      return crlf();
    }

    Command bulk(long number) {
      return bulk(ascii(Long.toString(number)));
    }

    private Command crlf() {
      put((byte) '\r');
      put((byte) '\n');
      return this;
    }

    private void putDecimal(long number) {
      byte[] digits = ascii(Long.toString(number));
      ensure(digits.length);
      System.arraycopy(digits, 0, bytes, length, digits.length);
      length += digits.length;
    }

    private void put(byte b) {
      ensure(1);
      bytes[length++] = b;
    }

    private void ensure(int more) {
      if (length + more > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + more));
      }
    }
  }

  /**
   * One blocking socket to one master, with a hand-rolled reply reader (also the hand-off floor's,
   * {@link HandOffFloor}).
   */
  static final class Connection {
    final String name;
    final Socket socket;
    final OutputStream out;
    final InputStream in;
    final byte[] buffer = new byte[16 * 1024];
    int position;
    int limit;
    // The current reply line is buffer[lineStart, lineEnd), without its CRLF.
    int lineStart;
    int lineEnd;

    private Connection(String name, Socket socket) throws IOException {
      this.name = name;
      this.socket = socket;
      this.out = socket.getOutputStream();
      this.in = socket.getInputStream();
    }

    static Connection open(String uri, int timeoutMillis) throws IOException {
      return open(uri, timeoutMillis, new Socket());
    }

    /**
     * Connects {@code socket} (unconnected) to the master of {@code uri}, authenticates and selects
     * the database where the URI says so; closes the socket if any of it fails.
     */
    static Connection open(String uri, int timeoutMillis, Socket socket) throws IOException {
      try {
        return connect(uri, timeoutMillis, socket);
      } catch (IOException | RuntimeException e) {
        socket.close(); // also when the URI is refused before any connection is made
        throw e;
      }
    }

    private static Connection connect(String uri, int timeoutMillis, Socket socket)
        throws IOException {
      URI parsed = URI.create(uri);
      if (!"redis".equals(parsed.getScheme())) {
        throw new IllegalArgumentException(
            "the baseline speaks plain redis:// only, not " + Masters.redact(uri));
      }
      String host = parsed.getHost();
      int port = parsed.getPort() < 0 ? 6379 : parsed.getPort();
      if (host == null) {
        throw new IllegalArgumentException("no host in " + Masters.redact(uri));
      }
      Connection connection;
      try {
        socket.setTcpNoDelay(true);
        socket.connect(new InetSocketAddress(host, port), timeoutMillis);
        socket.setSoTimeout(timeoutMillis);
        connection = new Connection(host + ":" + port, socket);
      } catch (IOException e) {
        socket.close();
        throw e;
      }
      try {
        String userInfo = parsed.getRawUserInfo();
        if (userInfo != null && !userInfo.isEmpty()) {
          int colon = userInfo.indexOf(':');
          String user = colon < 0 ? "" : decode(userInfo.substring(0, colon));
          String password = decode(colon < 0 ? userInfo : userInfo.substring(colon + 1));
          if (user.isEmpty()) {
            connection.call("AUTH", password);
          } else {
            connection.call("AUTH", user, password);
          }
        }
        String path = parsed.getPath();
        if (path != null && path.length() > 1) {
          connection.call("SELECT", path.substring(1));
        }
      } catch (IOException | RuntimeException e) {
        connection.close();
        throw e;
      }
      return connection;
    }

    /** Sends one command and returns its reply as text: a status, a number or a bulk string. */
    String call(String... arguments) throws IOException {
      send(arguments);
      readLine();
      byte type = buffer[lineStart];
      String rest = line(1);
      return switch (type) {
        case '+', ':' -> rest;
        case '$' -> {
          int size = Integer.parseInt(rest);
          if (size < 0) {
            yield "";
          }
          byte[] payload = readBytes(size + 2);
          yield new String(payload, 0, size, StandardCharsets.UTF_8);
        }
        case '-' -> throw new IOException(name + " answered " + arguments[0] + ": " + rest);
        default -> throw new IOException(name + " sent an unexpected reply: " + line(0));
      };
    }

    /** Sends one command without reading its reply. */
    void send(String... arguments) throws IOException {
      Command command = new Command().begin(arguments.length);
      for (String argument : arguments) {
        command.bulk(argument.getBytes(StandardCharsets.UTF_8));
      }
      out.write(command.bytes, 0, command.length);
    }

    /** Reads and drops {@code count} reply lines. */
    void skipLines(int count) throws IOException {
      for (int i = 0; i < count; i++) {
        readLine();
      }
    }

    /** How many bytes were read from the socket and not yet parsed. */
    int unread() {
      return limit - position;
    }

    /** Reads the reply to {@code SET .. NX}: true for {@code +OK}, false for a null bulk. */
    boolean readSetReply() throws IOException {
      readLine();
      byte type = buffer[lineStart];
      if (type == '+') {
        return true;
      }
      if (type == '$' && lineEnd - lineStart == 3 && buffer[lineStart + 1] == '-') {
        return false; // "$-1": the key exists
      }
      throw new IOException(name + " answered SET with " + line(0));
    }

    /** Reads an integer reply. */
    long readInteger() throws IOException {
      readLine();
      if (buffer[lineStart] != ':') {
        throw new IOException(name + " sent " + line(0) + " where an integer was expected");
      }
      long value = 0;
      boolean negative = false;
      for (int i = lineStart + 1; i < lineEnd; i++) {
        byte b = buffer[i];
        if (b == '-' && i == lineStart + 1) {
          negative = true;
        } else {
          value = value * 10 + (b - '0');
        }
      }
      return negative ? -value : value;
    }

    /** Makes the next CRLF-terminated line current, reading from the socket as needed. */
    private void readLine() throws IOException {
      int scanFrom = position;
      while (true) {
        for (int i = scanFrom; i + 1 < limit; i++) {
          if (buffer[i] == '\r' && buffer[i + 1] == '\n') {
            lineStart = position;
            lineEnd = i;
            position = i + 2;
            return;
          }
        }
        scanFrom = Math.max(position, limit - 1);
        int shift = position;
        fill();
        scanFrom -= shift;
      }
    }

    private byte[] readBytes(int count) throws IOException {
      byte[] bytes = new byte[count];
      int copied = 0;
      while (copied < count) {
        if (position == limit) {
          fill();
        }
        int n = Math.min(count - copied, limit - position);
        System.arraycopy(buffer, position, bytes, copied, n);
        position += n;
        copied += n;
      }
      return bytes;
    }

    /** Moves unread bytes to the front of the buffer and reads more after them. */
    private void fill() throws IOException {
      if (position > 0) {
        System.arraycopy(buffer, position, buffer, 0, limit - position);
        limit -= position;
        position = 0;
      }
      if (limit == buffer.length) {
        throw new IOException(name + " sent a reply line longer than " + buffer.length + " bytes");
      }
      int n = in.read(buffer, limit, buffer.length - limit);
      if (n < 0) {
        throw new IOException(name + " closed the connection");
      }
      limit += n;
    }

    private String line(int skip) {
      return new String(
          buffer, lineStart + skip, lineEnd - lineStart - skip, StandardCharsets.UTF_8);
    }

    void close() {
      try {
        socket.close();
      } catch (IOException e) {
        // Nothing left to do with a socket that will not close.
      }
    }
  }

  /** Percent-decodes a URI's user or password; unlike a form, a '+' stays a '+'. */
  private static String decode(String text) {
    return URLDecoder.decode(text.replace("+", "%2B"), StandardCharsets.UTF_8);
  }
}
