package dev.redlock.testkit;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One local {@code redis-server} process on a loopback port, with the controls fault-injection
 * tests need: {@link #kill()}, {@link #stop()}, {@link #restart()}, {@link #pause()} and {@link
 * #resume()}.
 *
 * <h2>How it runs</h2>
 *
 * The testkit launches the binary itself (embedded-redis' own {@code RedisServer.start()} waits
 * without a timeout) with at least {@code --port P --bind 127.0.0.1 --save "" --appendonly no
 * --daemonize no --protected-mode no --dir D}, where {@code D} is a temporary directory of this
 * process, kept across restarts and deleted by {@link #close()}. Its stdout and stderr go to a log
 * file in {@code D}; when a start fails, the exception message carries the tail of that log. A
 * start is complete when the server answers {@code INFO} on its port with its own process id (so a
 * foreign server that happens to hold the port is never mistaken for this one) and reports that it
 * has finished loading its append-only file. Every wait is bounded. A JVM shutdown hook kills every
 * process still running, so none outlives the JVM; and since a JVM killed outright runs no hook
 * (PIT kills a minion whose mutant timed out, a CI runner kills a hung fork), the server runs under
 * a small {@code sh} watchdog ({@link ServerHost#watched}) whose standard input is a pipe from this
 * JVM: when this JVM ends, however it ends, the pipe closes and the watchdog kills the server.
 *
 * <h2>Which binary</h2>
 *
 * Unless {@link Builder#binary(Path)} names one, the first of these wins:
 *
 * <ol>
 *   <li>the system property {@code redlock.redis.server}: a path to an executable, or the word
 *       {@code embedded};
 *   <li>the environment variable {@code REDIS_SERVER}, read the same way;
 *   <li>{@code redis-server} on {@code PATH} (on Debian, {@code /usr/bin/redis-server});
 *   <li>the binary bundled in embedded-redis (Redis 6.2), copied out of its jar once per JVM, so a
 *       machine with only a JDK can run the tests.
 * </ol>
 *
 * With {@link Builder#clockRate(String)} the bundled binary is always used, wrapped in {@code
 * faketime}: libfaketime cannot start Debian's build ("Unexpected recursive calls to
 * clock_gettime()"). {@link #binaryDescription()} says which binary was chosen and why.
 *
 * <h2>Ports</h2>
 *
 * Without {@link Builder#port(int)} the port is a free ephemeral one (bound on 127.0.0.1 and closed
 * again); if the server then cannot bind it, up to three ports are tried. Once started, a process
 * keeps its port for every restart.
 *
 * <p>Thread-safe: control methods are serialized on the instance.
 */
public final class RedisProcess implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RedisProcess.class);

  private static final String HOST = "127.0.0.1";
  private static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(10);
  private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(5);
  private static final Duration PROBE_TIMEOUT = Duration.ofMillis(250);
  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
  private static final int PORT_ATTEMPTS = 3;
  private static final int LOG_TAIL_BYTES = 8 * 1024;
  private static final String LOG_FILE = "redis-server.log";

  /** Processes not yet closed, for the shutdown hook. */
  private static final Set<RedisProcess> live = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime()
        .addShutdownHook(new Thread(RedisProcess::killAllLive, "redlock-testkit-reaper"));
  }

  private final ServerOptions options;
  private final RedisBinary.Choice binary;
  private final Path dir;

  // Guarded by this; volatile so the shutdown hook and isRunning() read them without the lock.
  private volatile int port;
  private volatile Process process;
  private volatile ProcessHandle server;
  private boolean paused;
  private boolean closed;
  private RedisAdmin admin;

  private RedisProcess(ServerOptions options, RedisBinary.Choice binary, Path dir) {
    this.options = options;
    this.binary = binary;
    this.dir = dir;
  }

  /**
   * A builder with the defaults: free port, no persistence, no clock rate, a 10 s start timeout.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Starts a server with the defaults; the same as {@code builder().start()}.
   *
   * @return the running server
   * @throws IllegalStateException if the server exits or does not answer within 10 s
   */
  public static RedisProcess start() {
    return builder().start();
  }

  /**
   * Which {@code redis-server} a process without a clock rate would use, and why, with its version;
   * for test logs. May copy the bundled binary out of its jar.
   *
   * @return a one-line description, e.g. {@code "/usr/bin/redis-server (redis-server found on
   *     PATH): Redis server v=7.0.15 ..."}
   * @throws IllegalStateException if the configured binary is not executable
   */
  public static String binaryDescription() {
    RedisBinary.Choice choice = RedisBinary.select();
    return choice.path() + " (" + choice.reason() + "): " + RedisBinary.version(choice.path());
  }

  /**
   * Whether {@link Builder#clockRate(String)} can work here: {@code faketime} is installed. For
   * {@code Assumptions.assumeTrue} in tests of clock skew.
   *
   * @return true if a {@code faketime} executable was found
   */
  public static boolean clockRateSupported() {
    return RedisBinary.faketime().isPresent();
  }

  /**
   * The TCP port, fixed for the life of this object.
   *
   * @return the port
   */
  public int port() {
    return port;
  }

  /**
   * The address the server binds.
   *
   * @return {@code "127.0.0.1"}
   */
  public String host() {
    return HOST;
  }

  /**
   * The server as a Redis URI.
   *
   * @return {@code "redis://127.0.0.1:<port>"}
   */
  public String uri() {
    return "redis://" + HOST + ":" + port;
  }

  /**
   * The process id of the {@code redis-server} itself (not of a {@code faketime} wrapper), as of
   * the latest start; it changes on {@link #restart()}.
   *
   * @return the process id
   */
  public long pid() {
    return server.pid();
  }

  /**
   * Whether the server process is alive. A paused process is alive.
   *
   * @return true if the process has been started and has not exited
   */
  public boolean isRunning() {
    Process p = process;
    ProcessHandle s = server;
    return p != null && p.isAlive() && s != null && s.isAlive();
  }

  /**
   * Kills the server with {@code SIGKILL} and waits up to 5 s for it to exit. Nothing is saved;
   * with {@link Builder#persistence(boolean) persistence} every acknowledged write is already on
   * disk. Does nothing if the server is not running.
   *
   * @throws IllegalStateException if the process is still alive after 5 s
   */
  public synchronized void kill() {
    if (!isRunning()) {
      return;
    }
    server.destroyForcibly();
    awaitExit("SIGKILL");
    paused = false;
    dropIdleAdminConnections();
  }

  /**
   * Stops the server: resumes it if paused, sends {@code SHUTDOWN NOSAVE}, falls back to {@code
   * SIGTERM} and then {@code SIGKILL}, waiting up to 5 s at each step. Does nothing if the server
   * is not running.
   *
   * @throws IllegalStateException if the process is still alive after all three
   */
  public synchronized void stop() {
    if (!isRunning()) {
      return;
    }
    resume();
    Probe.shutdownNoSave(HOST, port, EXIT_TIMEOUT);
    if (!waitForExit(EXIT_TIMEOUT)) {
      log.debug("redis-server pid {} ignored SHUTDOWN NOSAVE; sending SIGTERM", server.pid());
      server.destroy();
      if (!waitForExit(EXIT_TIMEOUT)) {
        server.destroyForcibly();
        awaitExit("SIGTERM and SIGKILL");
      }
    }
    paused = false;
    dropIdleAdminConnections();
  }

  /**
   * Starts the server again on the same port with the same options; stops it first if it is still
   * running. Without persistence the dataset is empty afterwards; with it, the server replays its
   * append-only file.
   *
   * @throws IllegalStateException if this process was closed, or the server exits or does not
   *     answer within the start timeout (for instance because another process took the port)
   */
  public synchronized void restart() {
    requireOpen();
    stop();
    launch(port);
    dropIdleAdminConnections();
  }

  /**
   * Suspends the server with {@code SIGSTOP}: it keeps its sockets, so clients connect but get no
   * reply until {@link #resume()}. Waits (bounded) until the kernel reports the process stopped.
   *
   * @throws IllegalStateException if the server is not running or the signal cannot be sent
   */
  public synchronized void pause() {
    requireOpen();
    if (!isRunning()) {
      throw new IllegalStateException("cannot pause: redis-server on port " + port + " is down");
    }
    ServerHost.signal(server.pid(), "STOP", EXIT_TIMEOUT);
    ServerHost.awaitStopped(server.pid(), true, EXIT_TIMEOUT);
    paused = true;
  }

  /**
   * Continues a server paused by {@link #pause()} with {@code SIGCONT}. Does nothing if it is not
   * paused.
   *
   * @throws IllegalStateException if the signal cannot be sent
   */
  public synchronized void resume() {
    if (!paused) {
      return;
    }
    if (isRunning()) {
      ServerHost.signal(server.pid(), "CONT", EXIT_TIMEOUT);
      ServerHost.awaitStopped(server.pid(), false, EXIT_TIMEOUT);
    }
    paused = false;
  }

  /**
   * The assertion client of this server: one per process, created on first use, closed by {@link
   * #close()}. It reconnects by itself after {@link #restart()}.
   *
   * @return the admin client
   * @throws IllegalStateException if this process was closed
   */
  public synchronized RedisAdmin admin() {
    requireOpen();
    if (admin == null) {
      admin = new RedisAdmin(HOST, port);
    }
    return admin;
  }

  /**
   * Kills the server if it is running (resuming it first if paused), closes the admin client and
   * deletes the temporary directory, including any append-only file. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      try {
        resume();
      } catch (RuntimeException e) {
        log.debug("cannot resume redis-server on port {} before killing it", port, e);
      }
      kill();
    } finally {
      if (admin != null) {
        admin.close();
      }
      live.remove(this);
      ServerHost.releasePort(port);
      ServerHost.deleteRecursively(dir);
    }
  }

  @Override
  public String toString() {
    ProcessHandle s = server;
    return "RedisProcess{" + uri() + ", pid " + (s == null ? "-" : s.pid()) + "}";
  }

  // ---- starting ----

  private static RedisProcess start(ServerOptions options) {
    RedisBinary.Choice binary =
        options.binary() != null
            ? new RedisBinary.Choice(options.binary(), "set on the builder")
            : options.clockRate() != null ? RedisBinary.forClockRate() : RedisBinary.select();
    Path dir;
    try {
      dir = Files.createTempDirectory("redlock-redis-");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a temporary directory for redis-server", e);
    }
    RedisProcess redis = new RedisProcess(options, binary, dir);
    live.add(redis);
    boolean started = false;
    try {
      if (options.port() != 0) {
        redis.launch(options.port());
      } else {
        redis.launchOnFreePort();
      }
      started = true;
      return redis;
    } finally {
      if (!started) {
        redis.close();
      }
    }
  }

  private synchronized void launchOnFreePort() {
    PortTakenException last = null;
    for (int attempt = 1; attempt <= PORT_ATTEMPTS; attempt++) {
      int candidate = ServerHost.reservePort(HOST);
      try {
        launch(candidate);
        return;
      } catch (PortTakenException e) {
        ServerHost.releasePort(candidate);
        log.debug(
            "port {} was taken before redis-server bound it (attempt {})", candidate, attempt);
        last = e;
      }
    }
    throw new IllegalStateException(
        "redis-server could not bind a free port in " + PORT_ATTEMPTS + " attempts", last);
  }

  /** Starts the server on {@code port} and waits until it answers with its own process id. */
  private void launch(int port) {
    this.port = port;
    List<String> command = options.command(binary.path(), dir, HOST, port);
    List<String> watched = ServerHost.watched(command);
    Path logFile = dir.resolve(LOG_FILE);
    Process p;
    try {
      // Its standard input stays open: it closes when this JVM ends, and the watchdog then kills
      // the server (the pipe is closed by the JDK when the watchdog exits).
      p =
          new ProcessBuilder(watched)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(logFile.toFile())
              .start();
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + String.join(" ", command), e);
    }
    this.process = p;
    long began = System.nanoTime();
    long deadline = began + options.startTimeout().toNanos();
    while (true) {
      OptionalLong pid = Probe.readyServerPid(HOST, port, PROBE_TIMEOUT);
      if (pid.isPresent()) {
        Optional<ProcessHandle> own = ownProcess(p, pid.getAsLong());
        if (own.isPresent()) {
          this.server = own.get();
          logStarted(began);
          return;
        }
        ServerHost.destroyQuietly(p, EXIT_TIMEOUT);
        throw new PortTakenException(
            "port " + port + " is held by another redis-server, pid " + pid.getAsLong());
      }
      if (!p.isAlive()) {
        String output = ServerHost.tail(logFile, LOG_TAIL_BYTES);
        String message =
            "redis-server exited with code "
                + p.exitValue()
                + " before answering on port "
                + port
                + "\ncommand: "
                + String.join(" ", command)
                + "\noutput:\n"
                + output;
        if (output.contains("Address already in use")) {
          throw new PortTakenException(message);
        }
        throw new IllegalStateException(message);
      }
      if (System.nanoTime() - deadline > 0) {
        ServerHost.destroyQuietly(p, EXIT_TIMEOUT);
        throw new IllegalStateException(
            "redis-server did not answer on port "
                + port
                + " within "
                + options.startTimeout().toMillis()
                + " ms\ncommand: "
                + String.join(" ", command)
                + "\noutput:\n"
                + ServerHost.tail(logFile, LOG_TAIL_BYTES));
      }
      try {
        // A poll interval that ends early if the process exits.
        p.waitFor(10, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        ServerHost.destroyQuietly(p, EXIT_TIMEOUT);
        throw new IllegalStateException("interrupted while starting redis-server", e);
      }
    }
  }

  /** The server is the launched process itself, or its child under a {@code faketime} wrapper. */
  private static Optional<ProcessHandle> ownProcess(Process p, long pid) {
    if (p.pid() == pid) {
      return Optional.of(p.toHandle());
    }
    return p.toHandle().descendants().filter(h -> h.pid() == pid).findFirst();
  }

  private void logStarted(long began) {
    log.debug(
        "redis-server pid {} ready on port {} after {} ms: {} ({})",
        server.pid(),
        port,
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began),
        binary.path(),
        binary.reason());
  }

  // ---- stopping ----

  /** Waits for the server and, under faketime, its wrapper to exit. */
  private boolean waitForExit(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    try {
      if (!process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
        return false;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for redis-server to exit", e);
    }
    // The wrapper reaps the server before it exits; this only covers a server that outlived it.
    while (server.isAlive()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      LockSupport.parkNanos(POLL_NANOS);
    }
    return true;
  }

  private void awaitExit(String what) {
    if (!waitForExit(EXIT_TIMEOUT)) {
      throw new IllegalStateException(
          "redis-server pid "
              + server.pid()
              + " still alive "
              + EXIT_TIMEOUT.toMillis()
              + " ms after "
              + what);
    }
  }

  private static void killAllLive() {
    List<RedisProcess> all = List.copyOf(live);
    for (RedisProcess redis : all) {
      // No lock: a thread holding one may never let go during shutdown.
      ProcessHandle s = redis.server;
      if (s != null) {
        s.destroyForcibly();
      }
      Process p = redis.process;
      if (p != null) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
    }
    long deadline = System.nanoTime() + EXIT_TIMEOUT.toNanos();
    for (RedisProcess redis : all) {
      Process p = redis.process;
      try {
        if (p != null) {
          p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      ServerHost.deleteRecursively(redis.dir);
    }
  }

  // ---- helpers ----

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("RedisProcess on port " + port + " is closed");
    }
  }

  private void dropIdleAdminConnections() {
    if (admin != null) {
      admin.dropIdleConnections();
    }
  }

  /** The server could not bind its port; a free-port start tries another. */
  private static final class PortTakenException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    PortTakenException(String message) {
      super(message);
    }
  }

  /**
   * Options for a {@link RedisProcess}. Not thread-safe while being configured; {@link #start()}
   * copies the options, so one configured builder may start several servers, even concurrently, as
   * long as no port is set.
   */
  public static final class Builder {
    private int port;
    private String clockRate;
    private boolean appendOnly;
    private Path binary;
    private Duration startTimeout = DEFAULT_START_TIMEOUT;
    private final List<String> extraArguments = new ArrayList<>();

    private Builder() {}

    /**
     * Appends server options to the command line, such as {@code "--tls-port", "7443"}. The server
     * still listens on its plain port, which the readiness check and {@link RedisProcess#admin()}
     * use.
     *
     * @param arguments options and their values, in command-line order
     * @return this builder
     * @throws NullPointerException if an argument is null
     */
    public Builder arguments(String... arguments) {
      for (String argument : arguments) {
        extraArguments.add(requireNonNull(argument, "argument"));
      }
      return this;
    }

    /**
     * Listens on {@code port} instead of a free ephemeral port. A start then fails instead of
     * trying another port if this one is taken.
     *
     * @param port a TCP port, 1 to 65535
     * @return this builder
     * @throws IllegalArgumentException if the port is out of range
     */
    public Builder port(int port) {
      if (port < 1 || port > 65535) {
        throw new IllegalArgumentException("port must be in 1..65535, was " + port);
      }
      this.port = port;
      return this;
    }

    /**
     * Runs the server under libfaketime, {@code faketime -f <spec>}, with the embedded-redis binary
     * (unless {@link #binary(Path)} names another). {@code "+0 x2"} starts at the real time and
     * runs the server's clocks twice as fast, so a key set with {@code PX 2000} expires after about
     * 1 s of real time; {@code "+0 x0.5"} runs them at half speed; {@code "-30s"} sets the clock 30
     * s back. The fake rate applies to the monotonic clock too.
     *
     * @param faketimeSpec a libfaketime timestamp specification
     * @return this builder
     * @throws IllegalArgumentException if the specification is blank
     * @throws IllegalStateException if {@code faketime} is not installed
     */
    public Builder clockRate(String faketimeSpec) {
      requireNonNull(faketimeSpec, "faketimeSpec");
      if (faketimeSpec.isBlank()) {
        throw new IllegalArgumentException("faketimeSpec is blank");
      }
      if (!clockRateSupported()) {
        throw new IllegalStateException(ServerOptions.noFaketime());
      }
      this.clockRate = faketimeSpec.strip();
      return this;
    }

    /**
     * Whether the server keeps its data across kill and restart. {@code false} (the default) runs
     * it with {@code --save "" --appendonly no}: a restart comes back empty. {@code true} adds
     * {@code --appendonly yes --appendfsync always}: every acknowledged write is on disk in the
     * process's temporary directory, and a restart replays it.
     *
     * @param appendOnly true for an append-only file fsynced on every write
     * @return this builder
     */
    public Builder persistence(boolean appendOnly) {
      this.appendOnly = appendOnly;
      return this;
    }

    /**
     * Uses this executable, bypassing the selection described on {@link RedisProcess}.
     *
     * @param redisServer path to a {@code redis-server} executable
     * @return this builder
     * @throws IllegalArgumentException if it is not an executable file
     */
    public Builder binary(Path redisServer) {
      requireNonNull(redisServer, "redisServer");
      if (!Files.isRegularFile(redisServer) || !Files.isExecutable(redisServer)) {
        throw new IllegalArgumentException(redisServer + " is not an executable file");
      }
      this.binary = redisServer;
      return this;
    }

    /**
     * How long {@link #start()} and {@link RedisProcess#restart()} wait for the server to answer;
     * 10 s by default.
     *
     * @param timeout a positive duration
     * @return this builder
     * @throws IllegalArgumentException if the timeout is zero or negative
     */
    public Builder startTimeout(Duration timeout) {
      requireNonNull(timeout, "timeout");
      if (timeout.isZero() || timeout.isNegative()) {
        throw new IllegalArgumentException("startTimeout must be positive, was " + timeout);
      }
      this.startTimeout = timeout;
      return this;
    }

    /**
     * Starts the server and waits, at most the start timeout, until it answers on its port.
     *
     * @return the running server
     * @throws IllegalStateException if the server exits or does not answer in time (the message
     *     carries the command line and the server's output), or a configured binary or {@code
     *     faketime} is missing
     */
    public RedisProcess start() {
      return RedisProcess.start(
          new ServerOptions(
              port, clockRate, appendOnly, binary, startTimeout, List.copyOf(extraArguments)));
    }
  }
}
