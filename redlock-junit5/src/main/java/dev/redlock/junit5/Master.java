package dev.redlock.junit5;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;

/**
 * One of the local masters of {@link RedLockMasters}: a {@code redis-server} child process on a
 * loopback port, without persistence, with the controls a test of failure handling needs: {@link
 * #stop()}, {@link #start()}, {@link #restart()}, {@link #pause()} and {@link #resume()}.
 *
 * <p>It keeps its port for its whole life, so its {@link #uri()} never changes. Every wait is
 * bounded; a start that fails says why with the tail of the server's output. A JVM shutdown hook
 * kills every master still running, so none outlives the JVM.
 *
 * <p>Thread-safe: the controls are serialized on the instance.
 */
public final class Master {
  private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(5);
  private static final Duration PROBE_TIMEOUT = Duration.ofMillis(250);
  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
  private static final int PORT_ATTEMPTS = 3;
  private static final int LOG_TAIL_BYTES = 4 * 1024;
  private static final String LOG_FILE = "redis-server.log";
  private static final String CLEAR_SCRIPT =
      "local n = 0 for _, k in ipairs(redis.call('KEYS', '*')) do"
          + " if string.sub(k, 1, 8) ~= 'redlock:' then redis.call('DEL', k) n = n + 1 end"
          + " end return n";

  /** Masters not yet closed, for the shutdown hook. */
  private static final Set<Master> live = ConcurrentHashMap.newKeySet();

  /** Ports handed out in this JVM and not yet released, so that parallel starts do not collide. */
  private static final Set<Integer> reservedPorts = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(Master::killAllLive, "redlock-junit5-reaper"));
  }

  private final int index;
  private final ServerBinary.Choice binary;
  private final Duration startTimeout;
  private final Path dir;
  private final ReentrantLock lock = new ReentrantLock();

  // Written under the lock; volatile so that isRunning() and the shutdown hook read them without.
  private volatile int port;
  private volatile Process process;
  private boolean paused;
  private boolean closed;

  private Master(int index, ServerBinary.Choice binary, Duration startTimeout, Path dir) {
    this.index = index;
    this.binary = binary;
    this.startTimeout = startTimeout;
    this.dir = dir;
  }

  /** Starts a master on a free port, trying another if the server cannot bind the first. */
  static Master start(int index, ServerBinary.Choice binary, Duration startTimeout) {
    Path dir;
    try {
      dir = Files.createTempDirectory("redlock-master-" + index + "-");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a directory for redis-server", e);
    }
    Master master = new Master(index, binary, startTimeout, dir);
    live.add(master);
    try {
      PortTaken taken = null;
      for (int attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
        master.port = freePort();
        try {
          master.lock.lock();
          try {
            master.launch();
          } finally {
            master.lock.unlock();
          }
          return master;
        } catch (PortTaken e) {
          reservedPorts.remove(master.port);
          taken = e;
        }
      }
      throw new IllegalStateException(
          "redis-server found its port taken " + PORT_ATTEMPTS + " times", taken);
    } catch (RuntimeException | Error e) {
      master.close();
      throw e;
    }
  }

  /**
   * This master's position among {@link RedLockMasters#masters()}.
   *
   * @return the index, from 0
   */
  public int index() {
    return index;
  }

  /**
   * The TCP port on 127.0.0.1, fixed for the life of this master.
   *
   * @return the port
   */
  public int port() {
    return port;
  }

  /**
   * The master as a Redis URI, as {@link dev.redlock.RedLockBuilder#node(String)} takes it.
   *
   * @return {@code "redis://127.0.0.1:<port>"}
   */
  public String uri() {
    return "redis://" + Resp.HOST + ":" + port;
  }

  /**
   * Whether the server process is alive. A paused master is alive.
   *
   * @return true if the process has been started and has not exited
   */
  public boolean isRunning() {
    Process p = process;
    return p != null && p.isAlive();
  }

  /**
   * Stops the server: resumes it if paused, sends {@code SHUTDOWN NOSAVE}, falls back to {@code
   * SIGTERM} and then {@code SIGKILL}, waiting up to 5 s at each step. Its keys are lost, as no
   * master persists them. Does nothing if the server is not running.
   *
   * @throws IllegalStateException if the process is still alive after all three
   */
  public void stop() {
    lock.lock();
    try {
      stopLocked();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Starts a stopped master again, on the same port and empty. The {@link dev.redlock.RedLock}'s
   * restart guard then keeps it from voting, as it would keep out a production master that lost its
   * keys, until {@link RedLockMasters#admit()} admits it (or the next test's reset does). Does
   * nothing if the server is running.
   *
   * @throws IllegalStateException if the extension has closed this master, or the server exits or
   *     does not answer within the start timeout (for instance because another process took the
   *     port)
   */
  public void start() {
    lock.lock();
    try {
      requireOpen();
      if (!isRunning()) {
        launch();
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops the master, if it runs, and starts it again: {@link #stop()} then {@link #start()}.
   *
   * @throws IllegalStateException as {@link #stop()} and {@link #start()} do
   */
  public void restart() {
    lock.lock();
    try {
      requireOpen();
      stopLocked();
      launch();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Suspends the server with {@code SIGSTOP}: it keeps its sockets, so clients connect but get no
   * reply (their node timeout runs out) until {@link #resume()}. Does nothing if already paused.
   * Needs a POSIX {@code kill} command.
   *
   * @throws IllegalStateException if the master is not running, or the signal cannot be sent
   */
  public void pause() {
    lock.lock();
    try {
      requireOpen();
      if (!isRunning()) {
        throw new IllegalStateException("cannot pause " + this + ": it is not running");
      }
      if (!paused) {
        signal("STOP");
        awaitStopped(true);
        paused = true;
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Continues a master paused by {@link #pause()} with {@code SIGCONT}. Does nothing if it is not
   * paused.
   *
   * @throws IllegalStateException if the signal cannot be sent
   */
  public void resume() {
    lock.lock();
    try {
      resumeLocked();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Whether {@link #pause()} suspended the master and {@link #resume()} has not yet continued it.
   *
   * @return true if paused
   */
  public boolean isPaused() {
    lock.lock();
    try {
      return paused;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public String toString() {
    return "master " + index + " (" + uri() + ")";
  }

  /** The server's working directory, deleted by {@link #close()}. */
  Path directory() {
    return dir;
  }

  /** The server's process id, as of the latest start. */
  long pid() {
    return process.pid();
  }

  /**
   * Deletes every key but RedLock's own ({@code redlock:*}: the admission, the dataset's birth and
   * the fencing counters), so that a RedLock kept across tests stays admitted.
   */
  void clear() {
    try {
      Resp.command(port, EXIT_TIMEOUT, "EVAL", CLEAR_SCRIPT, "0");
    } catch (IOException e) {
      throw new IllegalStateException("cannot empty " + this + ": " + e.getMessage(), e);
    }
  }

  /** Stops the server for good and deletes its directory. Idempotent. */
  void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      try {
        stopLocked();
      } finally {
        live.remove(this);
        reservedPorts.remove(port);
        deleteDirectory();
      }
    } finally {
      lock.unlock();
    }
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException(this + " is closed: its test class has finished");
    }
  }

  private void launch() {
    List<String> command =
        List.of(
            binary.path().toString(),
            "--port",
            Integer.toString(port),
            "--bind",
            Resp.HOST,
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--protected-mode",
            "no",
            "--dir",
            dir.toString());
    Path log = dir.resolve(LOG_FILE);
    Process p;
    try {
      p =
          new ProcessBuilder(command)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
              .start();
      p.getOutputStream().close();
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + binary + ": " + e.getMessage(), e);
    }
    process = p;
    paused = false;
    long deadline = System.nanoTime() + startTimeout.toNanos();
    while (true) {
      if (!p.isAlive()) {
        String tail = logTail(log);
        if (tail.contains("Address already in use")) {
          throw new PortTaken("port " + port + " is taken:\n" + tail);
        }
        throw new IllegalStateException(
            "redis-server for "
                + this
                + " exited with code "
                + p.exitValue()
                + " before answering; command: "
                + command
                + "; binary: "
                + binary
                + "; its output:\n"
                + tail);
      }
      if (answersAsItself(p)) {
        return;
      }
      if (System.nanoTime() - deadline > 0) {
        p.destroyForcibly();
        waitForExit(p, EXIT_TIMEOUT);
        throw new IllegalStateException(
            "redis-server for "
                + this
                + " did not answer within "
                + startTimeout.toMillis()
                + " ms; command: "
                + command
                + "; its output:\n"
                + logTail(log));
      }
      LockSupport.parkNanos(POLL_NANOS);
    }
  }

  /**
   * The running server's version, from {@code INFO server}: {@code Redis 7.0.15}, or {@code Redis
   * (version unknown)} if it does not say.
   */
  String version() {
    try {
      String info = Resp.command(port, EXIT_TIMEOUT, "INFO", "server");
      return "Redis "
          + info.lines()
              .map(String::strip)
              .filter(l -> l.startsWith("redis_version:"))
              .map(l -> l.substring("redis_version:".length()))
              .findFirst()
              .orElse("(version unknown)");
    } catch (IOException e) {
      return "Redis (version unknown: " + e.getMessage() + ")";
    }
  }

  /** Whether the server on the port is this process: another may hold the port. */
  private boolean answersAsItself(Process p) {
    try {
      String info = Resp.command(port, PROBE_TIMEOUT, "INFO", "server");
      return info != null && info.lines().anyMatch(l -> l.strip().equals("process_id:" + p.pid()));
    } catch (IOException e) {
      return false;
    }
  }

  private void stopLocked() {
    Process p = process;
    if (p == null || !p.isAlive()) {
      paused = false;
      return;
    }
    resumeLocked();
    try {
      Resp.command(port, EXIT_TIMEOUT, "SHUTDOWN", "NOSAVE");
    } catch (IOException e) {
      // The usual answer: the server closes the connection as it exits. Waiting tells.
    }
    if (!waitForExit(p, EXIT_TIMEOUT)) {
      p.destroy();
      if (!waitForExit(p, EXIT_TIMEOUT)) {
        p.destroyForcibly();
        if (!waitForExit(p, EXIT_TIMEOUT)) {
          throw new IllegalStateException(
              "redis-server pid " + p.pid() + " of " + this + " survived SIGTERM and SIGKILL");
        }
      }
    }
    paused = false;
  }

  private void resumeLocked() {
    if (!paused) {
      return;
    }
    if (isRunning()) {
      signal("CONT");
      awaitStopped(false);
    }
    paused = false;
  }

  private void signal(String name) {
    long pid = process.pid();
    try {
      Process kill =
          new ProcessBuilder("kill", "-" + name, Long.toString(pid))
              .redirectErrorStream(true)
              .start();
      kill.getOutputStream().close();
      if (!kill.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        kill.destroyForcibly();
        throw new IllegalStateException("kill -" + name + " " + pid + " did not finish in 5 s");
      }
      if (kill.exitValue() != 0) {
        String out = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        throw new IllegalStateException("kill -" + name + " " + pid + " failed: " + out.strip());
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot send SIG" + name + " to " + this, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while sending SIG" + name + " to " + this, e);
    }
  }

  /**
   * Waits (at most 5 s) until the kernel reports the process stopped or not; where there is no
   * {@code /proc} (macOS), the signal's delivery is all there is to wait for.
   */
  private void awaitStopped(boolean stopped) {
    Path stat = Path.of("/proc", Long.toString(process.pid()), "stat");
    if (!Files.exists(stat)) {
      return;
    }
    long deadline = System.nanoTime() + EXIT_TIMEOUT.toNanos();
    while (isStopped(stat) != stopped) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            this + " is not " + (stopped ? "stopped" : "running") + " 5 s after the signal");
      }
      LockSupport.parkNanos(POLL_NANOS);
    }
  }

  private static boolean isStopped(Path stat) {
    try {
      String line = Files.readString(stat);
      char state = line.charAt(line.lastIndexOf(')') + 2); // "pid (comm) S ..."
      return state == 'T' || state == 't';
    } catch (IOException | IndexOutOfBoundsException e) {
      return false; // gone: not stopped
    }
  }

  private static boolean waitForExit(Process p, Duration timeout) {
    try {
      return p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !p.isAlive();
    }
  }

  private static int freePort() {
    for (int i = 0; i < 100; i++) {
      int candidate;
      try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(Resp.HOST))) {
        candidate = socket.getLocalPort();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot find a free port on " + Resp.HOST, e);
      }
      if (reservedPorts.add(candidate)) {
        return candidate;
      }
    }
    throw new IllegalStateException("no free port on " + Resp.HOST + " after 100 tries");
  }

  private static String logTail(Path log) {
    try (RandomAccessFile file = new RandomAccessFile(log.toFile(), "r")) {
      long length = file.length();
      long from = Math.max(0, length - LOG_TAIL_BYTES);
      byte[] bytes = new byte[(int) (length - from)];
      file.seek(from);
      file.readFully(bytes);
      return new String(bytes, StandardCharsets.UTF_8).strip();
    } catch (IOException e) {
      return "(no output: " + e.getMessage() + ")";
    }
  }

  private void deleteDirectory() {
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    } catch (IOException e) {
      dir.toFile().deleteOnExit(); // best effort: a temp directory
    }
  }

  private static void killAllLive() {
    for (Master master : live) {
      Process p = master.process;
      if (p != null) {
        p.destroyForcibly();
      }
    }
  }

  /** The server could not bind its port: another one is tried. */
  private static final class PortTaken extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    PortTaken(String message) {
      super(message);
    }
  }
}
