package dev.redlock.testkit;

import static java.util.Objects.requireNonNull;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A fake Redis master on a loopback port that completes the handshake of every connection as a real
 * master would and then, at the connection's first lock command, misbehaves: it floods, sends
 * garbage, dribbles, announces an enormous reply, resets or streams well-formed replies without end
 * (see {@link Mode}). For tests and the benchmark of how a client copes with one hostile master
 * among healthy ones.
 *
 * <h2>The handshake</h2>
 *
 * Until the first lock command, every connection is answered plainly and at once, several pipelined
 * commands to a read as Redis does: {@code AUTH} (any password) and {@code SELECT} with {@code
 * +OK}; {@code SCRIPT LOAD body} with the lowercase hex SHA-1 of the body; {@code INFO} (any
 * section) with a bulk string holding {@code run_id:} (40 hex digits, fixed for this master) and
 * {@code uptime_in_seconds:} (a day and counting), besides {@code redis_version:7.0.15}, {@code
 * role:master} and {@code loading:0}; {@code CONFIG GET appendonly} with {@code no}, {@code CONFIG
 * GET appendfsync} with {@code everysec}, any other {@code CONFIG GET} with an empty array; {@code
 * PING} with {@code +PONG}; {@code TIME} with the time; {@code CLIENT ...} with {@code +OK}. The
 * commands may come as RESP arrays of bulk strings or inline ({@code PING\r\n}).
 *
 * <h2>Lock commands</h2>
 *
 * Any other command ({@code SET}, {@code EVALSHA}, {@code EVAL}, {@code MGET}, {@code DEL}...) is a
 * lock command, and so is {@code TIME} once the connection has loaded a script (the default RedLock
 * acquire starts with {@code TIME}; before the handshake's {@code SCRIPT LOAD}, {@code TIME} is a
 * diagnostic). The first one starts the mode, for that connection and for good: a client that
 * reconnects gets a fresh handshake and the same treatment at its next lock command. Where a mode
 * answers (SLOWLORIS), lock commands get replies of the right shape: {@code SET} {@code +OK},
 * {@code MGET} an array of nils, scripts {@code :1}.
 *
 * <h2>Running it</h2>
 *
 * In process: {@link #start(Mode)} or {@link #builder()}; one daemon thread accepts, one daemon
 * thread serves each connection, and {@link #close()} stops them all with bounded waits. In a
 * process of its own, so that a flooder does not take the measuring JVM's CPU and heap: {@link
 * HostileMasterProcess}, which runs {@link #main(String[])}.
 *
 * <p>Thread-safe.
 */
public final class HostileMaster implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(HostileMaster.class);

  /** How a {@link HostileMaster} misbehaves once a connection sent its first lock command. */
  public enum Mode {
    /**
     * An endless line: {@code +} and then {@code x} forever, never a CRLF, written as fast as the
     * socket takes it, until the client hangs up.
     */
    FLOOD,
    /**
     * A line of random printable junk for every command, starting with {@code ?} (a type byte of
     * neither RESP2 nor RESP3) and ending with CRLF.
     */
    GARBAGE,
    /**
     * The right reply to every command, dribbled one byte per interval (100 ms by default, {@link
     * Builder#interval(Duration)}).
     */
    SLOWLORIS,
    /**
     * A bulk string header announcing {@value #OVERSIZE_LENGTH} bytes (512 MiB, the largest Redis
     * allows), then its data trickling, {@value #TRICKLE_BYTES} bytes per interval.
     */
    OVERSIZE,
    /**
     * Resets the connection at once: a close with {@code SO_LINGER} 0, an RST rather than a FIN.
     */
    RESET,
    /**
     * Well-formed replies without end: integer replies {@code :1}, written as fast as the socket
     * takes them, until the client hangs up. Each is a valid reply, only far more of them than were
     * asked for; what the client sends meanwhile is not read.
     */
    STREAM;

    /**
     * The mode's name on the command line of {@link #main(String[])}.
     *
     * @return the name in lower case, e.g. {@code "flood"}
     */
    public String flag() {
      return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The mode a command-line name stands for.
     *
     * @param flag a mode's name, in any case, e.g. {@code "flood"}
     * @return the mode
     * @throws IllegalArgumentException if no mode has that name
     */
    public static Mode of(String flag) {
      requireNonNull(flag, "flag");
      for (Mode mode : values()) {
        if (mode.flag().equalsIgnoreCase(flag.strip())) {
          return mode;
        }
      }
      throw new IllegalArgumentException(
          "no mode '"
              + flag
              + "'; the modes are "
              + List.of(values()).toString().toLowerCase(Locale.ROOT));
    }
  }

  /**
   * What a hostile master did so far.
   *
   * @param accepted connections accepted
   * @param misbehaving connections that sent a lock command and so met the mode
   * @param bytesSent bytes written to every connection, the handshake replies included
   */
  public record Stats(long accepted, long misbehaving, long bytesSent) {

    private static final Pattern LINE =
        Pattern.compile("stats accepted=(\\d+) misbehaving=(\\d+) sent=(\\d+)");

    /** The line {@link HostileMaster#main(String[])} prints for {@code stats}. */
    String line() {
      return "stats accepted=" + accepted + " misbehaving=" + misbehaving + " sent=" + bytesSent;
    }

    /** The stats a {@link #line()} holds; null if {@code line} is no such line. */
    static Stats parse(String line) {
      Matcher m = LINE.matcher(line.strip());
      return m.matches()
          ? new Stats(
              Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)))
          : null;
    }
  }

  /** OVERSIZE: the length its bulk header announces, 512 MiB. */
  public static final long OVERSIZE_LENGTH = 512L * 1024 * 1024;

  /** OVERSIZE: how many bytes of the announced data are sent per interval. */
  public static final int TRICKLE_BYTES = 1024;

  /** SLOWLORIS and OVERSIZE: the interval unless {@link Builder#interval(Duration)} says. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofMillis(100);

  private static final String HOST = "127.0.0.1";
  private static final Duration JOIN_TIMEOUT = Duration.ofSeconds(2);

  /** What {@code INFO} says the uptime was when this master started: a day. */
  private static final long UPTIME_AT_START_SECONDS = 86_400;

  private final ServerSocket server;
  private final Mode mode;
  private final long intervalNanos;
  private final String runId;
  private final long startedAt = System.nanoTime();
  private final SecureRandom seeds = new SecureRandom();
  private final Thread acceptor;
  private final List<Socket> sockets = new ArrayList<>(); // guarded by itself
  private final List<Thread> threads = new ArrayList<>(); // guarded by sockets
  private final AtomicLong accepted = new AtomicLong();
  private final AtomicLong misbehaving = new AtomicLong();
  private final AtomicLong bytesSent = new AtomicLong();
  private volatile boolean closed;

  private HostileMaster(ServerSocket server, Mode mode, Duration interval) {
    this.server = server;
    this.mode = mode;
    this.intervalNanos = interval.toNanos();
    byte[] id = new byte[20];
    seeds.nextBytes(id);
    this.runId = HexFormat.of().formatHex(id);
    this.acceptor = new Thread(this::accept, "hostile-master-" + mode.flag() + "-accept");
    acceptor.setDaemon(true);
  }

  /**
   * A builder: a free ephemeral port, the default interval; the mode must be set.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Starts a hostile master in {@code mode} on a free loopback port; the same as {@code
   * builder().mode(mode).start()}.
   *
   * @param mode how it misbehaves
   * @return the listening master
   * @throws UncheckedIOException if no port can be bound
   */
  public static HostileMaster start(Mode mode) {
    return builder().mode(mode).start();
  }

  /**
   * How it misbehaves.
   *
   * @return the mode
   */
  public Mode mode() {
    return mode;
  }

  /**
   * The address it listens on.
   *
   * @return {@code "127.0.0.1"}
   */
  public String host() {
    return HOST;
  }

  /**
   * The port it listens on.
   *
   * @return the port
   */
  public int port() {
    return server.getLocalPort();
  }

  /**
   * The master as a Redis URI, to configure in place of a real master.
   *
   * @return {@code "redis://127.0.0.1:<port>"}
   */
  public String uri() {
    return "redis://" + node();
  }

  /**
   * The master as RedLock names it in outcomes and listener calls.
   *
   * @return {@code "127.0.0.1:<port>"}
   */
  public String node() {
    return HOST + ":" + port();
  }

  /**
   * How many connections it accepted so far.
   *
   * @return the count
   */
  public long accepted() {
    return accepted.get();
  }

  /**
   * How many connections sent a lock command and so met the mode, so far.
   *
   * @return the count
   */
  public long misbehaving() {
    return misbehaving.get();
  }

  /**
   * How many bytes it wrote to all connections so far, handshake replies included.
   *
   * @return the count
   */
  public long bytesSent() {
    return bytesSent.get();
  }

  /**
   * The three counts at once (each read on its own, so not one instant's).
   *
   * @return what it did so far
   */
  public Stats stats() {
    return new Stats(accepted(), misbehaving(), bytesSent());
  }

  /**
   * Stops accepting, closes every connection (ending its thread's blocked read or write) and waits
   * up to 2 s for the threads to end. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    closeQuietly(server);
    List<Socket> open;
    List<Thread> running;
    synchronized (sockets) {
      open = new ArrayList<>(sockets);
      running = new ArrayList<>(threads);
      sockets.clear();
      threads.clear();
    }
    open.forEach(HostileMaster::closeQuietly);
    long deadline = System.nanoTime() + JOIN_TIMEOUT.toNanos();
    running.add(acceptor);
    for (Thread thread : running) {
      long left = deadline - System.nanoTime();
      try {
        if (left > 0) {
          thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (thread.isAlive()) {
        log.debug("{} still running {} ms after close", thread.getName(), JOIN_TIMEOUT.toMillis());
      }
    }
  }

  @Override
  public String toString() {
    return "HostileMaster{" + mode.flag() + ", " + node() + "}";
  }

  // ---- for the connections

  long intervalNanos() {
    return intervalNanos;
  }

  boolean isClosed() {
    return closed;
  }

  void sent(long bytes) {
    bytesSent.addAndGet(bytes);
  }

  void misbehaved() {
    misbehaving.incrementAndGet();
  }

  /** What {@code INFO} answers, whatever the section asked for. */
  String info() {
    long uptime =
        UPTIME_AT_START_SECONDS + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startedAt);
    return String.join(
        "\r\n",
        "# Server",
        "redis_version:7.0.15",
        "redis_mode:standalone",
        "process_id:" + ProcessHandle.current().pid(),
        "run_id:" + runId,
        "tcp_port:" + port(),
        "uptime_in_seconds:" + uptime,
        "uptime_in_days:" + uptime / 86_400,
        "",
        "# Persistence",
        "loading:0",
        "aof_enabled:0",
        "",
        "# Replication",
        "role:master",
        "connected_slaves:0",
        "",
        "# Cluster",
        "cluster_enabled:0",
        "");
  }

  // ---- accepting

  private void accept() {
    while (!closed) {
      Socket socket;
      try {
        socket = server.accept();
      } catch (IOException e) {
        if (!closed) {
          log.debug("{} stops accepting: {}", this, e.toString());
        }
        return;
      }
      long n = accepted.incrementAndGet();
      Thread thread =
          new Thread(
              new HostileConnection(this, socket, seeds.nextLong()),
              "hostile-master-" + mode.flag() + "-" + n);
      thread.setDaemon(true);
      synchronized (sockets) {
        if (closed) {
          closeQuietly(socket);
          return;
        }
        // Ended connections are pruned here, so a client that reconnects all day leaks nothing.
        for (int i = threads.size() - 1; i >= 0; i--) {
          if (!threads.get(i).isAlive()) {
            threads.remove(i);
            sockets.remove(i);
          }
        }
        sockets.add(socket);
        threads.add(thread);
      }
      thread.start();
    }
  }

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception e) {
      // it is being thrown away
    }
  }

  // ---- as a process of its own

  private static final String USAGE =
      """
      Usage: java -cp <class path> dev.redlock.testkit.HostileMaster --mode MODE [options]

      A fake Redis master on 127.0.0.1 that answers the handshake and then misbehaves at each
      connection's first lock command. Prints the port it listens on, alone on the first line of
      standard output, once it accepts connections. Then reads standard input, a command a line:
      "stats" prints "stats accepted=A misbehaving=M sent=B"; "quit", or the end of the input (the
      parent process went away), closes it and exits.

      Options:
        --mode MODE         flood, garbage, slowloris, oversize, reset or stream
        --port N            the port (default 0: a free ephemeral one)
        --interval-ms MS    slowloris: one byte per MS; oversize: one chunk per MS (default 100)
        -h, --help          show this help
      """;

  /**
   * Runs a hostile master in this process until standard input ends, as described by {@code
   * --help}: exit code 0 after {@code quit} or the end of input, 1 if it cannot listen, 2 for a bad
   * command line.
   *
   * @param args {@code --mode MODE [--port N] [--interval-ms MS]}
   */
  public static void main(String[] args) {
    Builder builder = builder();
    try {
      for (int i = 0; i < args.length; i++) {
        String flag = args[i];
        if (flag.equals("-h") || flag.equals("--help")) {
          System.out.print(USAGE);
          return;
        }
        if (i + 1 == args.length) {
          throw new IllegalArgumentException(flag + " needs a value");
        }
        String value = args[++i];
        switch (flag) {
          case "--mode" -> builder.mode(Mode.of(value));
          case "--port" -> builder.port(Integer.parseInt(value));
          case "--interval-ms" -> builder.interval(Duration.ofMillis(Long.parseLong(value)));
          default -> throw new IllegalArgumentException("unknown option " + flag);
        }
      }
      if (builder.mode == null) {
        throw new IllegalArgumentException("--mode is required");
      }
    } catch (IllegalArgumentException e) {
      System.err.println("HostileMaster: " + e.getMessage());
      System.err.print(USAGE);
      System.exit(2);
      return;
    }
    HostileMaster master;
    try {
      master = builder.start();
    } catch (UncheckedIOException e) {
      System.err.println("HostileMaster: " + e.getMessage());
      System.exit(1);
      return;
    }
    try (master) {
      serve(master, System.out);
    }
  }

  /** Prints the port, then answers standard input's commands until {@code quit} or its end. */
  private static void serve(HostileMaster master, PrintStream out) {
    out.println(master.port());
    out.flush();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try {
      for (String line; (line = in.readLine()) != null; ) {
        switch (line.strip()) {
          case "stats" -> out.println(master.stats().line());
          case "quit" -> {
            return;
          }
          case "" -> {}
          default -> out.println("unknown command '" + line.strip() + "'; try stats or quit");
        }
        out.flush();
      }
    } catch (IOException e) {
      log.debug("standard input failed; closing", e);
    }
  }

  /**
   * Options for a {@link HostileMaster}. Not thread-safe; {@link #start()} copies the options, so a
   * builder without a port may start several masters.
   */
  public static final class Builder {
    private Mode mode;
    private int port;
    private Duration interval = DEFAULT_INTERVAL;

    private Builder() {}

    /**
     * How the master misbehaves; required.
     *
     * @param mode the mode
     * @return this builder
     */
    public Builder mode(Mode mode) {
      this.mode = requireNonNull(mode, "mode");
      return this;
    }

    /**
     * Listens on {@code port} instead of a free ephemeral one.
     *
     * @param port a TCP port, 0 (a free ephemeral one, the default) to 65535
     * @return this builder
     * @throws IllegalArgumentException if the port is out of range
     */
    public Builder port(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be in 0..65535, was " + port);
      }
      this.port = port;
      return this;
    }

    /**
     * SLOWLORIS: the time between two bytes; OVERSIZE: between two chunks of data. 100 ms by
     * default.
     *
     * @param interval a positive duration
     * @return this builder
     * @throws IllegalArgumentException if it is zero or negative
     */
    public Builder interval(Duration interval) {
      requireNonNull(interval, "interval");
      if (interval.isZero() || interval.isNegative()) {
        throw new IllegalArgumentException("interval must be positive, was " + interval);
      }
      this.interval = interval;
      return this;
    }

    /**
     * Binds the port on 127.0.0.1 and starts accepting.
     *
     * @return the listening master
     * @throws IllegalStateException if no mode was set
     * @throws UncheckedIOException if the port cannot be bound
     */
    public HostileMaster start() {
      if (mode == null) {
        throw new IllegalStateException("no mode set");
      }
      ServerSocket server;
      try {
        server = new ServerSocket();
        try {
          server.bind(new InetSocketAddress(InetAddress.getByName(HOST), port));
        } catch (IOException | RuntimeException e) {
          server.close();
          throw e;
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot listen on " + HOST + ":" + port, e);
      }
      HostileMaster master = new HostileMaster(server, mode, interval);
      master.acceptor.start();
      return master;
    }
  }
}
