package dev.redlock.testkit;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@link RedisProcess} asks of the operating system: the watchdog the server runs under, free
 * ports, signals and the process state they lead to, and the server's files. Thread-safe.
 */
final class ServerHost {

  private static final Logger log = LoggerFactory.getLogger(ServerHost.class);
  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

  /** Ports handed out in this JVM and not yet released, so parallel starts do not collide. */
  private static final Set<Integer> reservedPorts = ConcurrentHashMap.newKeySet();

  private ServerHost() {}

  /**
   * Runs the server ({@code "$@"}) as a child, and kills it with {@code SIGKILL} once its own
   * standard input, a pipe from this JVM, reaches its end: this JVM has ended. Exits with the
   * server's status when the server exits, taking its watcher along ({@code read} is a built-in:
   * nothing is left behind). A background list reads {@code /dev/null} unless redirected, hence the
   * copy of the pipe on descriptor 3.
   */
  private static final String WATCHDOG =
      "exec 3<&0; \"$@\" 0</dev/null 3<&- & s=$!; "
          + "(read -r _ <&3; kill -KILL $s 2>/dev/null) & w=$!; "
          + "exec 3<&-; wait $s; st=$?; kill $w 2>/dev/null; exit $st";

  /**
   * The command that runs {@code command} under the watchdog: started with its standard input a
   * pipe from this JVM, left open, the server is killed when this JVM ends, however it ends.
   */
  static List<String> watched(List<String> command) {
    List<String> watched = new ArrayList<>(List.of("/bin/sh", "-c", WATCHDOG, "redlock-watchdog"));
    watched.addAll(command);
    return watched;
  }

  /** A free ephemeral port on {@code host} that no other start in this JVM holds. */
  static int reservePort(String host) {
    for (int i = 0; i < 20; i++) {
      int candidate;
      try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(host))) {
        candidate = socket.getLocalPort();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot bind an ephemeral port on " + host, e);
      }
      if (reservedPorts.add(candidate)) {
        return candidate;
      }
    }
    throw new IllegalStateException("no unreserved ephemeral port after 20 attempts");
  }

  /** Gives back a port from {@link #reservePort}. */
  static void releasePort(int port) {
    reservedPorts.remove(port);
  }

  /**
   * Sends signal {@code name} to {@code pid} with the shell's {@code kill}: ProcessHandle offers
   * only TERM and KILL.
   */
  static void signal(long pid, String name, Duration timeout) {
    try {
      Process kill =
          new ProcessBuilder("/bin/sh", "-c", "kill -" + name + " " + pid)
              .redirectErrorStream(true)
              .start();
      kill.getOutputStream().close();
      if (!kill.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        kill.destroyForcibly();
        throw new IllegalStateException("kill -" + name + " " + pid + " did not return in time");
      }
      if (kill.exitValue() != 0) {
        String out = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        throw new IllegalStateException("kill -" + name + " " + pid + " failed: " + out.strip());
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run kill -" + name + " " + pid, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while sending SIG" + name, e);
    }
  }

  /**
   * Polls {@code /proc/<pid>/stat} until the process is (or is no longer) stopped, so a caller's
   * next request meets the state it asked for. Skipped where there is no {@code /proc}.
   */
  static void awaitStopped(long pid, boolean stopped, Duration timeout) {
    Path stat = Path.of("/proc", Long.toString(pid), "stat");
    if (!Files.isReadable(stat)) {
      return;
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Optional<Character> state = processState(stat);
      if (state.isEmpty() || (state.get() == 'T') == stopped) {
        return;
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            "redis-server pid "
                + pid
                + (stopped ? " not stopped" : " still stopped")
                + " after "
                + timeout.toMillis()
                + " ms");
      }
      LockSupport.parkNanos(POLL_NANOS);
    }
  }

  private static Optional<Character> processState(Path stat) {
    try {
      String line = Files.readString(stat);
      // Format: "pid (comm) S ..."; comm may hold spaces and parentheses, so find the last ')'.
      int close = line.lastIndexOf(')');
      return close < 0 || close + 2 >= line.length()
          ? Optional.empty()
          : Optional.of(line.charAt(close + 2));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** The last {@code bytes} of {@code file}, for an error message. */
  static String tail(Path file, int bytes) {
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "r")) {
      long length = raf.length();
      long from = Math.max(0, length - bytes);
      byte[] read = new byte[(int) (length - from)];
      raf.seek(from);
      raf.readFully(read);
      String text = new String(read, StandardCharsets.UTF_8);
      return (from > 0 ? "[...]\n" : "") + (text.isBlank() ? "(no output)" : text);
    } catch (IOException e) {
      return "(output unreadable: " + e.getMessage() + ")";
    }
  }

  /** Deletes {@code root} and everything below it, quietly. */
  static void deleteRecursively(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      log.debug("cannot delete {}", root, e);
    }
  }

  /** Kills {@code p} and its descendants (faketime's server), waiting up to {@code timeout}. */
  static void destroyQuietly(Process p, Duration timeout) {
    p.descendants().forEach(ProcessHandle::destroyForcibly);
    p.destroyForcibly();
    try {
      p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
