package dev.redlock.chaos;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One worker JVM of a multi-process run: its clients contend with every other worker's for the same
 * masters. Started by {@link WorkerProcesses} as {@code java -cp <test class path>
 * dev.redlock.chaos.WorkerMain --key value ...}:
 *
 * <ul>
 *   <li>{@code --nodes} the masters' URIs, comma-separated;
 *   <li>{@code --store} the counter store's {@code host:port};
 *   <li>{@code --clients} this worker's client names, comma-separated;
 *   <li>{@code --resources} the resources, comma-separated;
 *   <li>{@code --ttl}, {@code --node-timeout} ISO-8601 durations;
 *   <li>{@code --go} a file the parent writes when every worker is ready: the {@link
 *       System#nanoTime()} reading at which to stop.
 * </ul>
 *
 * It prints {@code READY} once its clients are built, then, after the run, its {@link
 * Workload.Result} lines and {@code DONE}, on stdout; logs go to stderr. Exits 0 on success.
 */
public final class WorkerMain {

  static final String READY = "READY";
  static final String DONE = "DONE";
  private static final Duration GO_TIMEOUT = Duration.ofSeconds(60);

  private WorkerMain() {}

  /**
   * Runs one worker.
   *
   * @param args {@code --key value} pairs, see the class comment
   */
  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    Map<String, String> flags = parse(args);
    Workload workload =
        Workload.builder(split(flags.get("nodes")), flags.get("store"))
            .clients(split(flags.get("clients")))
            .resources(split(flags.get("resources")))
            .ttl(Duration.parse(flags.get("ttl")))
            .nodeTimeout(Duration.parse(flags.get("node-timeout")))
            .build();
    Path go = Path.of(flags.get("go"));
    out.println(READY);
    out.flush();
    long endAt = awaitGo(go);
    Workload.Result result = workload.runUntil(endAt);
    result.print(out);
    out.println(DONE);
    out.flush();
    System.exit(0);
  }

  /** Waits for the parent's go file and returns the end it holds. */
  private static long awaitGo(Path go) throws IOException {
    long deadline = System.nanoTime() + GO_TIMEOUT.toNanos();
    while (true) {
      if (Files.exists(go)) {
        return Long.parseLong(Files.readString(go, StandardCharsets.UTF_8).strip());
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("no go file " + go + " within " + GO_TIMEOUT);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
    }
  }

  private static Map<String, String> parse(String[] args) {
    if (args.length % 2 != 0) {
      throw new IllegalArgumentException("expected --key value pairs: " + Arrays.toString(args));
    }
    Map<String, String> flags = new HashMap<>();
    for (int i = 0; i < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --key, got " + args[i]);
      }
      flags.put(args[i].substring(2), args[i + 1]);
    }
    for (String required : List.of("nodes", "store", "clients", "resources", "ttl", "go")) {
      if (!flags.containsKey(required)) {
        throw new IllegalArgumentException("missing --" + required);
      }
    }
    flags.putIfAbsent("node-timeout", "PT0.1S");
    return flags;
  }

  private static List<String> split(String csv) {
    return List.of(csv.split(","));
  }
}
