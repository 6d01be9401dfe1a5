package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.benchmark.ThroughputRun.Throughput;
import dev.redlock.drill.Samples;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The node-redlock row of the benchmark: node-redlock 5 with ioredis, in a {@code node} child
 * process that runs our own script ({@code bench.mjs}, beside its {@code package.json} and {@code
 * package-lock.json} in this package's resources).
 *
 * <p>{@link #start} copies those three files into a build directory, installs the locked packages
 * there with {@code npm ci} (once: a marker remembers which lock file was installed), starts {@code
 * node bench.mjs} on the masters and waits for it to say it is ready. Then each {@link #cycles} or
 * {@link #loops} call sends it one command line and reads back one answer line of latencies, which
 * node measured itself ({@code process.hrtime}); the process is idle in between, so it runs in the
 * same interleaved blocks as the Java rows. Its stderr goes to {@code bench-node.log} in the
 * directory. Without {@code node} or {@code npm}, or when {@code npm ci} fails (offline, say),
 * {@link #start} throws {@link Unavailable} with the reason, and the row says it was skipped and
 * why.
 *
 * <p>The process is a child of this JVM: {@link #close()} ends it, and it ends itself when its
 * standard input closes (when this JVM dies). Not thread-safe: one thread talks to it.
 */
final class NodeRedlock implements AutoCloseable {

  /** Where the package files and the script are on the classpath. */
  static final String RESOURCES = "dev/redlock/benchmark/node/";

  /** The files copied into the build directory. */
  static final List<String> FILES = List.of("package.json", "package-lock.json", "bench.mjs");

  /** How long {@code npm ci} may take. */
  static final Duration INSTALL_LIMIT = Duration.ofMinutes(3);

  /** How long {@code node bench.mjs} may take to connect and say it is ready. */
  static final Duration START_LIMIT = Duration.ofSeconds(30);

  /** What is kept in {@code node_modules} after an install: the SHA-256 of the lock file. */
  static final String MARKER = "node_modules/.redlock-bench-installed";

  /** The script's stderr, in the build directory. */
  static final String LOG = "bench-node.log";

  private static final String EOF = "\u0000end of output";

  private final Process process;
  private final Writer commands;
  private final BlockingQueue<String> answers;
  private final Path log;
  private final String versions;

  private NodeRedlock(
      Process process, Writer commands, BlockingQueue<String> answers, Path log, String versions) {
    this.process = process;
    this.commands = commands;
    this.answers = answers;
    this.log = log;
    this.versions = versions;
  }

  /**
   * The programs to run: {@code node} and {@code npm}, by name on the {@code PATH} or by path.
   *
   * @param node the node executable
   * @param npm the npm executable
   */
  record Tools(String node, String npm) {
    Tools {
      requireNonNull(node, "node");
      requireNonNull(npm, "npm");
    }

    /** {@code node} and {@code npm} as found on the {@code PATH}. */
    static Tools onPath() {
      return new Tools("node", "npm");
    }
  }

  /**
   * Installs node-redlock into {@code dir} (unless the same lock file is installed there already),
   * starts the script on {@code uris} and waits until it has connected to every master.
   *
   * @param dir the build directory; made if missing
   * @param uris the masters, as ioredis takes them ({@code redis://[user:password@]host:port/db})
   * @param ttl the TTL of every lock
   * @param progress told what is being done, one line at a time
   * @throws Unavailable if node or npm is missing, {@code npm ci} fails, or the script does not
   *     start; its message says why, for the report
   */
  static NodeRedlock start(
      Path dir, List<String> uris, Duration ttl, Tools tools, Consumer<String> progress)
      throws Unavailable, InterruptedException {
    requireNonNull(dir, "dir");
    requireNonNull(uris, "uris");
    requireNonNull(ttl, "ttl");
    requireNonNull(tools, "tools");
    requireNonNull(progress, "progress");
    String node = version(tools.node());
    String npm = version(tools.npm());
    try {
      Files.createDirectories(dir);
      for (String file : FILES) {
        try (InputStream in = resource(file)) {
          Files.write(dir.resolve(file), in.readAllBytes());
        }
      }
    } catch (IOException e) {
      throw new Unavailable("cannot write the node package into " + dir + ": " + e);
    }
    install(dir, tools, "node " + node + ", npm " + npm, progress);
    return launch(dir, uris, ttl, tools);
  }

  /** The node-redlock, ioredis and node versions the script reported, e.g. {@code "node=20..."}. */
  String versions() {
    return versions;
  }

  /**
   * Runs {@code count} acquire+release cycles one after another, on keys starting with {@code
   * prefix}.
   *
   * @param failures told how many cycles failed
   * @return the completed cycles' durations, in nanoseconds
   * @throws IOException if the process does not answer in time or has ended
   */
  Samples cycles(int count, String prefix, Consumer<Long> failures)
      throws IOException, InterruptedException {
    Duration limit = Duration.ofMinutes(1).plus(Duration.ofMillis(50L * count));
    long[] answer = ask("cycles " + count + " " + key(prefix), "cycles", limit);
    failures.accept(answer[0]);
    Samples samples = new Samples();
    for (int i = 1; i < answer.length; i++) {
      samples.add(answer[i]);
    }
    return samples;
  }

  /**
   * Runs {@code concurrency} async loops of acquire+release for {@code time}, each on keys of its
   * own starting with {@code prefix}: the node-redlock counterpart of a throughput block.
   *
   * @throws IOException if the process does not answer in time or has ended
   */
  Throughput loops(int concurrency, Duration time, String prefix)
      throws IOException, InterruptedException {
    long[] answer =
        ask(
            "loops " + concurrency + " " + time.toMillis() + " " + key(prefix),
            "loops",
            time.plus(Duration.ofMinutes(1)));
    if (answer.length < 3) {
      throw new IOException("node-redlock answered loops with too few figures");
    }
    Samples latency = new Samples();
    for (int i = 3; i < answer.length; i++) {
      latency.add(answer[i]);
    }
    return new Throughput("", concurrency, answer[0], answer[1], answer[2], latency);
  }

  /** Asks the script to quit, and ends it if it does not within a few seconds. */
  @Override
  public void close() {
    try {
      commands.write("quit\n");
      commands.flush();
      commands.close();
    } catch (IOException e) {
      // It has ended already, or will be ended below.
    }
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  private long[] ask(String command, String expected, Duration limit)
      throws IOException, InterruptedException {
    try {
      commands.write(command + "\n");
      commands.flush();
    } catch (IOException e) {
      throw new IOException("node-redlock has ended: " + lastLine(log), e);
    }
    String line = answers.poll(limit.toMillis(), TimeUnit.MILLISECONDS);
    if (line == null) {
      throw new IOException(
          "node-redlock did not answer '" + command + "' within " + limit.toSeconds() + " s");
    }
    if (line.equals(EOF)) {
      throw new IOException("node-redlock has ended: " + lastLine(log));
    }
    String[] words = line.split(" ");
    if (!words[0].equals(expected)) {
      throw new IOException("node-redlock answered '" + command + "' with: " + clip(line));
    }
    long[] figures = new long[words.length - 1];
    try {
      for (int i = 1; i < words.length; i++) {
        figures[i - 1] = Long.parseLong(words[i]);
      }
    } catch (NumberFormatException e) {
      throw new IOException("node-redlock answered '" + command + "' with: " + clip(line), e);
    }
    return figures;
  }

  /** Keys go on a command line split at spaces. */
  private static String key(String prefix) {
    if (prefix.isEmpty() || prefix.chars().anyMatch(Character::isWhitespace)) {
      throw new IllegalArgumentException("a key prefix without spaces, please: '" + prefix + "'");
    }
    return prefix;
  }

  private static String version(String tool) throws Unavailable, InterruptedException {
    Process process;
    try {
      // stdout alone: npm warns about its configuration on stderr.
      process =
          new ProcessBuilder(tool, "--version")
              .redirectError(ProcessBuilder.Redirect.DISCARD)
              .start();
    } catch (IOException e) {
      throw new Unavailable(tool + " not found (" + e.getMessage() + ")");
    }
    try (InputStream in = process.getInputStream()) {
      String output = new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new Unavailable(tool + " --version did not finish within 30 s");
      }
      if (process.exitValue() != 0) {
        throw new Unavailable(
            tool + " --version failed (exit " + process.exitValue() + "): " + lastLine(output));
      }
      return lastLine(output);
    } catch (IOException e) {
      process.destroyForcibly();
      throw new Unavailable(tool + " --version could not be read: " + e);
    }
  }

  private static void install(Path dir, Tools tools, String versions, Consumer<String> progress)
      throws Unavailable, InterruptedException {
    String lock;
    try {
      lock = sha256(Files.readAllBytes(dir.resolve("package-lock.json")));
      Path marker = dir.resolve(MARKER);
      if (Files.isRegularFile(marker) && Files.readString(marker).strip().equals(lock)) {
        progress.accept(
            "node-redlock: installed in " + dir + " already (" + versions + "; lock unchanged)");
        return;
      }
    } catch (IOException e) {
      throw new Unavailable("cannot read " + dir.resolve("package-lock.json") + ": " + e);
    }
    progress.accept("node-redlock: npm ci in " + dir + " (" + versions + ")...");
    Path npmLog = dir.resolve("npm-ci.log");
    Process npm;
    try {
      npm =
          new ProcessBuilder(
                  tools.npm(),
                  "ci",
                  "--no-audit",
                  "--no-fund",
                  "--loglevel=error",
                  "--fetch-retries=1",
                  "--fetch-timeout=30000")
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(npmLog.toFile())
              .start();
    } catch (IOException e) {
      throw new Unavailable("npm ci could not start: " + e.getMessage());
    }
    try {
      npm.getOutputStream().close();
    } catch (IOException e) {
      // Nothing reads it anyway.
    }
    if (!npm.waitFor(INSTALL_LIMIT.toSeconds(), TimeUnit.SECONDS)) {
      npm.descendants().forEach(ProcessHandle::destroyForcibly);
      npm.destroyForcibly();
      throw new Unavailable(
          "npm ci did not finish within " + INSTALL_LIMIT.toMinutes() + " min (offline?)");
    }
    if (npm.exitValue() != 0) {
      throw new Unavailable(
          "npm ci failed (exit "
              + npm.exitValue()
              + "): "
              + lastLine(npmLog)
              + " ("
              + npmLog
              + ")");
    }
    try {
      Files.writeString(dir.resolve(MARKER), lock + "\n");
    } catch (IOException e) {
      throw new Unavailable("cannot write " + dir.resolve(MARKER) + ": " + e);
    }
  }

  private static NodeRedlock launch(Path dir, List<String> uris, Duration ttl, Tools tools)
      throws Unavailable, InterruptedException {
    List<String> command = new ArrayList<>(List.of(tools.node(), "bench.mjs"));
    command.add(Long.toString(ttl.toMillis()));
    command.addAll(uris);
    Path log = dir.resolve(LOG);
    Process process;
    try {
      process =
          new ProcessBuilder(command).directory(dir.toFile()).redirectError(log.toFile()).start();
    } catch (IOException e) {
      throw new Unavailable("node could not start: " + e.getMessage());
    }
    BlockingQueue<String> answers = new LinkedBlockingQueue<>();
    Thread reader =
        new Thread(() -> readLines(process.getInputStream(), answers), "bench-node-redlock");
    reader.setDaemon(true);
    reader.start();
    Writer commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    String ready = answers.poll(START_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
    if (ready == null || !ready.startsWith("ready ")) {
      process.destroyForcibly();
      String why =
          ready == null
              ? "did not say it was ready within " + START_LIMIT.toSeconds() + " s"
              : ready.equals(EOF) ? "ended" : "said '" + clip(ready) + "'";
      throw new Unavailable("node bench.mjs " + why + ": " + lastLine(log) + " (" + log + ")");
    }
    return new NodeRedlock(process, commands, answers, log, ready.substring("ready ".length()));
  }

  private static void readLines(InputStream in, BlockingQueue<String> lines) {
    try (BufferedReader reader =
        new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      String line;
      while ((line = reader.readLine()) != null) {
        lines.add(line);
      }
    } catch (IOException e) {
      // The process ended; the end marker below says so.
    } finally {
      lines.add(EOF);
    }
  }

  private static InputStream resource(String file) throws IOException {
    InputStream in = NodeRedlock.class.getClassLoader().getResourceAsStream(RESOURCES + file);
    if (in == null) {
      throw new IOException(RESOURCES + file + " is not on the classpath");
    }
    return in;
  }

  /** The last line of a file that says something; a placeholder if there is none. */
  private static String lastLine(Path file) {
    try {
      return lastLine(Files.readString(file, StandardCharsets.UTF_8));
    } catch (IOException e) {
      return "(no " + file.getFileName() + ")";
    }
  }

  private static String lastLine(String text) {
    String last = "(no output)";
    for (String line : text.split("\\R")) {
      if (!line.isBlank()) {
        last = line.strip();
      }
    }
    return clip(last);
  }

  private static String clip(String text) {
    return text.length() <= 200 ? text : text.substring(0, 200) + "...";
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /** node-redlock cannot run here; the message says why, for the report. */
  static final class Unavailable extends Exception {
    private static final long serialVersionUID = 1L;

    Unavailable(String message) {
      super(message);
    }
  }

  @Override
  public String toString() {
    return String.format(Locale.ROOT, "node-redlock (%s)", versions);
  }
}
