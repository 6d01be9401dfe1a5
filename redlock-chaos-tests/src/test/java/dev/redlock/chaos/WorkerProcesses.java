package dev.redlock.chaos;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * Worker JVMs ({@link WorkerMain}) on this test's class path, each writing to its own files in a
 * temporary directory. {@link #close()} kills any still running and deletes the directory.
 */
final class WorkerProcesses implements AutoCloseable {

  private static final Duration READY_TIMEOUT = Duration.ofSeconds(45);

  private final Path dir;
  private final Path go;
  private final List<Process> processes = new ArrayList<>();
  private final List<String> names = new ArrayList<>();

  private WorkerProcesses(Path dir) {
    this.dir = dir;
    this.go = dir.resolve("go");
  }

  /**
   * Starts {@code count} workers; worker {@code w} runs {@code clientsEach} clients named {@code
   * w<w>-<c>}.
   */
  static WorkerProcesses start(
      int count, int clientsEach, Workload settings, List<String> nodes, String store)
      throws IOException {
    WorkerProcesses workers = new WorkerProcesses(Files.createTempDirectory("redlock-workers-"));
    boolean started = false;
    try {
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      for (int w = 0; w < count; w++) {
        List<String> clients = new ArrayList<>();
        for (int c = 0; c < clientsEach; c++) {
          clients.add("w" + w + "-" + c);
        }
        List<String> command =
            List.of(
                java,
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                WorkerMain.class.getName(),
                "--nodes",
                String.join(",", nodes),
                "--store",
                store,
                "--clients",
                String.join(",", clients),
                "--resources",
                String.join(",", settings.resources()),
                "--ttl",
                settings.ttl().toString(),
                "--node-timeout",
                settings.nodeTimeout().toString(),
                "--go",
                workers.go.toString());
        String name = "worker-" + w;
        Process process =
            new ProcessBuilder(command)
                .redirectOutput(workers.dir.resolve(name + ".out").toFile())
                .redirectError(workers.dir.resolve(name + ".err").toFile())
                .start();
        process.getOutputStream().close();
        workers.processes.add(process);
        workers.names.add(name);
      }
      started = true;
      return workers;
    } finally {
      if (!started) {
        workers.close();
      }
    }
  }

  /**
   * Waits until every worker printed {@code READY}.
   *
   * @throws IllegalStateException if one exits or is not ready in time
   */
  void awaitReady() throws IOException {
    long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
    for (int w = 0; w < processes.size(); w++) {
      while (!output(w).contains(WorkerMain.READY)) {
        if (!processes.get(w).isAlive()) {
          throw new IllegalStateException(names.get(w) + " exited before it was ready: " + err(w));
        }
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException(names.get(w) + " not ready in " + READY_TIMEOUT);
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
      }
    }
  }

  /** Lets every worker run until {@code endAt}, a reading of {@link System#nanoTime()}. */
  void go(long endAt) throws IOException {
    Path tmp = dir.resolve("go.tmp");
    Files.writeString(tmp, Long.toString(endAt), StandardCharsets.UTF_8);
    Files.move(tmp, go, StandardCopyOption.ATOMIC_MOVE);
  }

  /**
   * Waits for every worker to exit (bounded) and merges their results.
   *
   * @throws IllegalStateException if one does not exit in time, fails, or did not finish its run
   */
  Workload.Result awaitResults(Duration timeout) throws IOException, InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<Workload.Result> parts = new ArrayList<>();
    for (int w = 0; w < processes.size(); w++) {
      Process process = processes.get(w);
      long left = deadline - System.nanoTime();
      if (!process.waitFor(Math.max(1, left), TimeUnit.NANOSECONDS)) {
        throw new IllegalStateException(names.get(w) + " still running after " + timeout);
      }
      List<String> lines = output(w);
      if (process.exitValue() != 0 || !lines.contains(WorkerMain.DONE)) {
        throw new IllegalStateException(
            names.get(w) + " failed with exit code " + process.exitValue() + ": " + err(w));
      }
      parts.add(Workload.Result.parse(lines));
    }
    return Workload.Result.merge(parts);
  }

  private List<String> output(int w) throws IOException {
    return Files.readAllLines(dir.resolve(names.get(w) + ".out"), StandardCharsets.UTF_8);
  }

  private String err(int w) {
    try {
      String text = Files.readString(dir.resolve(names.get(w) + ".err"), StandardCharsets.UTF_8);
      return text.length() <= 4000 ? text : "[...]" + text.substring(text.length() - 4000);
    } catch (IOException e) {
      return "(no stderr: " + e.getMessage() + ")";
    }
  }

  /** Kills every worker still running, waits (bounded) for them, deletes the directory. */
  @Override
  public void close() {
    for (Process process : processes) {
      process.destroyForcibly();
    }
    for (Process process : processes) {
      try {
        process.waitFor(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    } catch (IOException e) {
      // a temporary directory; the OS cleans it eventually
    }
  }
}
