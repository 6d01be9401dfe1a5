package dev.redlock.testkit;

import static java.util.Objects.requireNonNull;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.util.SafeEncoder;

/**
 * A small synchronous client for one test server, for setting up and asserting on data.
 *
 * <p>Obtain it from {@link RedisProcess#admin()}; there is one per process and it survives {@link
 * RedisProcess#restart()}. It holds one connection, opened on first use and replaced when it breaks
 * (a timeout, a reset) or when the process is killed, stopped or restarted, so the call after a
 * restart does not trip over a dead socket.
 *
 * <p>Every call is bounded: connecting and reading each time out after {@value #TIMEOUT_MILLIS} ms,
 * so a call to a paused server fails after about that long, and one to a killed server at once. (A
 * Jedis pool would take twice as long: commons-pool 2.13 replaces a broken connection
 * synchronously, handshaking with the same unresponsive server.) Failures are Jedis' unchecked
 * exceptions: {@code JedisConnectionException} for timeouts and refused connections, {@code
 * JedisDataException} for error replies.
 *
 * <p>It speaks RESP2. Thread-safe; calls are serialized, so a call to a paused server holds up
 * other threads' calls for up to the timeout.
 */
public final class RedisAdmin implements AutoCloseable {
  /** Connect and read timeout of every call, in milliseconds. */
  public static final int TIMEOUT_MILLIS = 2000;

  private final HostAndPort address;
  private final JedisClientConfig config;

  /** Bumped by the process on kill, stop and restart: the connection is stale. */
  private final AtomicInteger generation = new AtomicInteger();

  // Guarded by this.
  private Connection connection;
  private int connectionGeneration;
  private boolean closed;

  /**
   * Opens an admin client for any Redis server, such as one in a container.
   *
   * @param host the server's host
   * @param port the server's port
   * @return a client that connects on first use and reconnects after a broken connection
   */
  public static RedisAdmin connect(String host, int port) {
    return new RedisAdmin(host, port);
  }

  RedisAdmin(String host, int port) {
    this.address = new HostAndPort(host, port);
    this.config =
        DefaultJedisClientConfig.builder()
            .timeoutMillis(TIMEOUT_MILLIS)
            .clientName("redlock-testkit-admin")
            // protocol(RESP2), not resp2(): the tests of the Spring Boot starter run this on the
            // Jedis versions Boot manages (6 and 7), which lack the shorthand.
            .protocol(RedisProtocol.RESP2)
            .build();
  }

  /**
   * Whether {@code key} exists.
   *
   * @param key the key
   * @return true if the key exists
   * @throws RuntimeException if the server does not answer in time or replies with an error
   */
  public boolean exists(String key) {
    return (Long) command("EXISTS", requireNonNull(key, "key")) == 1L;
  }

  /**
   * The string value of {@code key}.
   *
   * @param key the key
   * @return the value, or {@code null} when the key is absent
   * @throws RuntimeException if the server does not answer in time, or the key holds a non-string
   */
  public String get(String key) {
    return (String) command("GET", requireNonNull(key, "key"));
  }

  /**
   * The remaining time to live of {@code key}, as {@code PTTL} reports it.
   *
   * @param key the key
   * @return milliseconds left; {@code -1} if the key has no expiry; {@code -2} if it is absent
   * @throws RuntimeException if the server does not answer in time
   */
  public long pttl(String key) {
    return (Long) command("PTTL", requireNonNull(key, "key"));
  }

  /**
   * Sets {@code key} to {@code value} with no expiry ({@code SET key value}).
   *
   * @param key the key
   * @param value the value
   * @throws RuntimeException if the server does not answer in time or replies with an error
   */
  public void set(String key, String value) {
    command("SET", requireNonNull(key, "key"), requireNonNull(value, "value"));
  }

  /**
   * How many connections the server has accepted since it started ({@code
   * total_connections_received} of {@code INFO stats}).
   *
   * @return the count
   * @throws RuntimeException if the server does not answer in time
   * @throws IllegalStateException if {@code INFO stats} lacks the field
   */
  public long connectionsReceived() {
    String info = (String) command("INFO", "stats");
    for (String line : info.split("\r\n")) {
      if (line.startsWith("total_connections_received:")) {
        return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
      }
    }
    throw new IllegalStateException("no total_connections_received in INFO stats");
  }

  /**
   * The server's version ({@code redis_version} in {@code INFO server}), e.g. {@code "7.0.15"}.
   *
   * @return the version string
   * @throws RuntimeException if the server does not answer in time
   * @throws IllegalStateException if {@code INFO server} lacks the field
   */
  public String serverVersion() {
    String info = (String) command("INFO", "server");
    for (String line : info.split("\r\n")) {
      if (line.startsWith("redis_version:")) {
        return line.substring(line.indexOf(':') + 1).trim();
      }
    }
    throw new IllegalStateException("no redis_version in INFO server");
  }

  /**
   * Skips the calling test (a JUnit assumption) unless the server is at least Redis {@code major},
   * saying what the test needs and what to install: for tests of features a newer Redis has (ACL
   * selectors, CONFIG parameters) when the build fell back to an older binary.
   *
   * @param major the least major version, e.g. 7
   * @param needs what the test uses that older servers lack, e.g. {@code "ACL selectors
   *     (-config|get)"}
   * @throws org.opentest4j.TestAbortedException if the server is older
   */
  public void assumeAtLeast(int major, String needs) {
    String version = serverVersion();
    int found;
    try {
      found = Integer.parseInt(version.substring(0, version.indexOf('.')));
    } catch (RuntimeException e) {
      found = -1;
    }
    int foundMajor = found;
    Assumptions.assumeTrue(
        foundMajor >= major,
        () ->
            "needs Redis "
                + major
                + " or later for "
                + needs
                + ", but the masters run Redis "
                + version
                + " ("
                + RedisProcess.binaryDescription()
                + "): install redis-server "
                + major
                + " (apt-get install redis-server on Debian 12) or set REDIS_SERVER to one");
  }

  /**
   * The number of keys in the current database ({@code DBSIZE}).
   *
   * @return the key count
   * @throws RuntimeException if the server does not answer in time
   */
  public long dbSize() {
    return (Long) command("DBSIZE");
  }

  /**
   * Deletes every key in every database ({@code FLUSHALL}).
   *
   * @throws RuntimeException if the server does not answer in time
   */
  public void flushAll() {
    command("FLUSHALL");
  }

  /**
   * Empties the Lua script cache ({@code SCRIPT FLUSH}), so the next {@code EVALSHA} of any script
   * gets {@code NOSCRIPT}.
   *
   * @throws RuntimeException if the server does not answer in time
   */
  public void scriptFlush() {
    command("SCRIPT", "FLUSH");
  }

  /**
   * Sends any command and returns its reply.
   *
   * <p>Replies are decoded: bulk and status strings as UTF-8 {@link String}s, integers as {@link
   * Long}, arrays as {@link List}s of decoded elements, a null reply as {@code null}.
   *
   * @param args the command name and its arguments, e.g. {@code "CONFIG", "GET", "save"}
   * @return the decoded reply, possibly {@code null}
   * @throws IllegalArgumentException if {@code args} is empty
   * @throws IllegalStateException if this client was closed
   * @throws RuntimeException if the server does not answer in time or replies with an error
   */
  public Object command(String... args) {
    requireNonNull(args, "args");
    if (args.length == 0) {
      throw new IllegalArgumentException("args must hold at least the command name");
    }
    byte[] name = SafeEncoder.encode(requireNonNull(args[0], "args[0]"));
    CommandArguments command = new CommandArguments(() -> name);
    for (int i = 1; i < args.length; i++) {
      command.add(requireNonNull(args[i], "args[" + i + "]"));
    }
    return decode(execute(command));
  }

  /** Closes the connection. Idempotent. */
  @Override
  public synchronized void close() {
    closed = true;
    disconnect();
  }

  /** Marks the connection stale; the next call opens a new one. Does not block. */
  void dropIdleConnections() {
    generation.incrementAndGet();
  }

  private synchronized Object execute(CommandArguments command) {
    if (closed) {
      throw new IllegalStateException("RedisAdmin for " + address + " is closed");
    }
    int current = generation.get();
    if (connection == null || connection.isBroken() || connectionGeneration != current) {
      disconnect();
      connection = new Connection(address, config);
      connectionGeneration = current;
    }
    return connection.executeCommand(command);
  }

  private void disconnect() {
    if (connection != null) {
      Connection c = connection;
      connection = null;
      try {
        c.close();
      } catch (RuntimeException e) {
        // Closing a socket to a dead server may fail; the socket is gone either way.
      }
    }
  }

  private static Object decode(Object reply) {
    if (reply instanceof byte[] bytes) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
    if (reply instanceof List<?> list) {
      List<Object> decoded = new ArrayList<>(list.size());
      for (Object element : list) {
        decoded.add(decode(element));
      }
      return decoded;
    }
    return reply;
  }
}
