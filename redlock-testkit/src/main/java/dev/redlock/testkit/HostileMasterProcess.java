package dev.redlock.testkit;

import static java.util.Objects.requireNonNull;

import dev.redlock.testkit.HostileMaster.Mode;
import dev.redlock.testkit.HostileMaster.Stats;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link HostileMaster} in a JVM of its own, a child process of this one, for measurements: a
 * flooder in the measuring JVM would take its CPU, heap and safepoints and blur what is measured.
 *
 * <p>The child runs {@link HostileMaster#main(String[])} with this JVM's {@code java} and class
 * path, a small heap ({@code -Xmx64m}) and the serial collector. {@link #start} returns once it
 * printed its port, that is once it accepts connections (at most 20 s, the time a JVM takes to
 * start on a busy machine and then some). Its standard input is a pipe from this JVM: when this JVM
 * ends, however it ends, the pipe closes and the child exits; a shutdown hook kills any still
 * running too. Its standard error goes to a temporary file, whose tail a failure message carries.
 *
 * <p>Thread-safe: the methods are serialized on the instance.
 */
public final class HostileMasterProcess implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(HostileMasterProcess.class);

  private static final String HOST = "127.0.0.1";
  private static final Duration START_TIMEOUT = Duration.ofSeconds(20);
  private static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(5);
  private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(5);
  private static final int ERROR_TAIL_CHARS = 4000;

  /** The child's JVM options: small, quick to start, no collector threads to speak of. */
  private static final List<String> JVM_OPTIONS =
      List.of("-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

  /**
   * What the standard-output reader hands on when the child's output ends: compared by identity, so
   * no line the child prints can be taken for it.
   */
  @SuppressWarnings("StringOperationCanBeSimplified")
  private static final String END = new String("end of output");

  /** Processes not yet closed, for the shutdown hook. */
  private static final Set<HostileMasterProcess> live = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> live.forEach(child -> child.process.destroyForcibly()),
                "redlock-testkit-hostile-reaper"));
  }

  private final Mode mode;
  private final Process process;
  private final Path errors;
  private final Writer commands;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private int port; // set once by start
  private boolean closed; // guarded by this

  private HostileMasterProcess(Mode mode, Process process, Path errors) {
    this.mode = mode;
    this.process = process;
    this.errors = errors;
    this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
  }

  /**
   * Starts a child process with a hostile master in {@code mode} on a free loopback port, with the
   * default interval.
   *
   * @param mode how it misbehaves
   * @return the running child, listening
   * @throws IllegalStateException if the child exits or prints no port within 20 s; the message
   *     carries its standard error
   */
  public static HostileMasterProcess start(Mode mode) {
    return start(mode, HostileMaster.DEFAULT_INTERVAL);
  }

  /**
   * Starts a child process with a hostile master in {@code mode} on a free loopback port.
   *
   * @param mode how it misbehaves
   * @param interval SLOWLORIS: the time between two bytes; OVERSIZE: between two chunks; whole
   *     milliseconds, at least 1
   * @return the running child, listening
   * @throws IllegalArgumentException if {@code interval} is under 1 ms
   * @throws IllegalStateException if the child exits or prints no port within 20 s; the message
   *     carries its standard error
   */
  public static HostileMasterProcess start(Mode mode, Duration interval) {
    requireNonNull(mode, "mode");
    requireNonNull(interval, "interval");
    if (interval.toMillis() < 1) {
      throw new IllegalArgumentException("interval must be at least 1 ms, was " + interval);
    }
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(JVM_OPTIONS);
    command.addAll(
        List.of(
            "-cp",
            System.getProperty("java.class.path"),
            HostileMaster.class.getName(),
            "--mode",
            mode.flag(),
            "--port",
            "0",
            "--interval-ms",
            Long.toString(interval.toMillis())));
    Path errors;
    Process process;
    try {
      errors = Files.createTempFile("redlock-hostile-" + mode.flag() + "-", ".log");
      process = new ProcessBuilder(command).redirectError(errors.toFile()).start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + String.join(" ", command), e);
    }
    HostileMasterProcess child = new HostileMasterProcess(mode, process, errors);
    live.add(child);
    boolean started = false;
    try {
      child.readOutput();
      child.port = child.awaitPort();
      started = true;
      log.debug("{} started", child);
      return child;
    } finally {
      if (!started) {
        child.close();
      }
    }
  }

  /**
   * How the child's master misbehaves.
   *
   * @return the mode
   */
  public Mode mode() {
    return mode;
  }

  /**
   * The address the child listens on.
   *
   * @return {@code "127.0.0.1"}
   */
  public String host() {
    return HOST;
  }

  /**
   * The port the child listens on.
   *
   * @return the port
   */
  public int port() {
    return port;
  }

  /**
   * The child's master as a Redis URI, to configure in place of a real master.
   *
   * @return {@code "redis://127.0.0.1:<port>"}
   */
  public String uri() {
    return "redis://" + node();
  }

  /**
   * The child's master as RedLock names it in outcomes and listener calls.
   *
   * @return {@code "127.0.0.1:<port>"}
   */
  public String node() {
    return HOST + ":" + port;
  }

  /**
   * The child's process id.
   *
   * @return the pid
   */
  public long pid() {
    return process.pid();
  }

  /**
   * Whether the child is alive.
   *
   * @return true until it exits
   */
  public boolean isRunning() {
    return process.isAlive();
  }

  /**
   * What the child's master did so far: asks the child and waits up to 5 s for the answer.
   *
   * @return its counts
   * @throws IllegalStateException if this was closed, or the child exited or did not answer in time
   */
  public synchronized Stats stats() {
    if (closed) {
      throw new IllegalStateException(this + " is closed");
    }
    try {
      commands.write("stats\n");
      commands.flush();
    } catch (IOException e) {
      throw new IllegalStateException(this + " does not listen: " + e + tail(), e);
    }
    long deadline = System.nanoTime() + ANSWER_TIMEOUT.toNanos();
    while (true) {
      String line = nextLine(deadline - System.nanoTime());
      if (line == null) {
        throw new IllegalStateException(
            this + " did not answer within " + ANSWER_TIMEOUT.toMillis() + " ms" + tail());
      }
      if (line == END) {
        lines.add(END); // for the next caller
        throw new IllegalStateException(this + " exited" + tail());
      }
      Stats stats = Stats.parse(line);
      if (stats != null) {
        return stats;
      }
      log.debug("{} said: {}", this, line);
    }
  }

  /**
   * Ends the child: closes its standard input, on which it closes its master and exits, and kills
   * it if it has not exited within 5 s; deletes its standard-error file. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      commands.close();
    } catch (IOException e) {
      log.debug("closing the input of {}: {}", this, e.toString());
    }
    try {
      if (!process.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        log.debug("{} did not exit within {} ms; killing it", this, EXIT_TIMEOUT.toMillis());
        process.destroyForcibly();
        process.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    } finally {
      live.remove(this);
      try {
        Files.deleteIfExists(errors);
      } catch (IOException e) {
        log.debug("cannot delete {}: {}", errors, e.toString());
      }
    }
  }

  @Override
  public String toString() {
    return "HostileMasterProcess{" + mode.flag() + ", " + node() + ", pid " + process.pid() + "}";
  }

  /** Hands each line of the child's standard output to {@link #lines}, then {@link #END}. */
  private void readOutput() {
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader out =
                  new BufferedReader(
                      new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = out.readLine()) != null; ) {
                  lines.add(line);
                }
              } catch (IOException e) {
                log.debug("reading the output of pid {}: {}", process.pid(), e.toString());
              } finally {
                lines.add(END);
              }
            },
            "hostile-master-" + mode.flag() + "-output-" + process.pid());
    reader.setDaemon(true);
    reader.start();
  }

  /** The port the child prints first, once it listens. */
  private int awaitPort() {
    String line = nextLine(START_TIMEOUT.toNanos());
    if (line == null) {
      throw new IllegalStateException(
          "hostile master ("
              + mode.flag()
              + ") printed no port within "
              + START_TIMEOUT.toSeconds()
              + " s"
              + tail());
    }
    if (line == END) {
      throw new IllegalStateException(
          "hostile master (" + mode.flag() + ") exited before it listened" + exitCode() + tail());
    }
    try {
      return Integer.parseInt(line.strip());
    } catch (NumberFormatException e) {
      throw new IllegalStateException(
          "hostile master (" + mode.flag() + ") printed '" + line + "', not a port" + tail(), e);
    }
  }

  /** The next line of output within {@code nanos}, {@link #END} after the last, or null. */
  private String nextLine(long nanos) {
    try {
      return lines.poll(Math.max(0, nanos), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for " + mode.flag(), e);
    }
  }

  private String exitCode() {
    try {
      return process.waitFor(1, TimeUnit.SECONDS) ? " with code " + process.exitValue() : "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }

  /** The tail of the child's standard error, for a failure message. */
  private String tail() {
    try {
      String text = Files.readString(errors, StandardCharsets.UTF_8);
      if (text.isBlank()) {
        return "; no standard error";
      }
      return "; standard error:\n"
          + (text.length() <= ERROR_TAIL_CHARS
              ? text
              : "[...]" + text.substring(text.length() - ERROR_TAIL_CHARS));
    } catch (IOException e) {
      return "; standard error unreadable: " + e.getMessage();
    }
  }
}
