package dev.redlock.testkit;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import redis.embedded.core.ExecutableProvider;

/** Chooses the {@code redis-server} executable and finds {@code faketime}. */
final class RedisBinary {
  static final String PROPERTY = "redlock.redis.server";
  static final String ENV = "REDIS_SERVER";
  static final String EMBEDDED = "embedded";

  /** An executable and why it was chosen. */
  record Choice(Path path, String reason) {}

  private static final Map<Path, String> versions = new ConcurrentHashMap<>();
  private static Path embedded; // guarded by RedisBinary.class

  private RedisBinary() {}

  /** The binary for a server without a clock rate, following the documented order. */
  static Choice select() {
    String property = System.getProperty(PROPERTY);
    if (property != null && !property.isBlank()) {
      return fromSetting(property.strip(), "system property " + PROPERTY);
    }
    String env = System.getenv(ENV);
    if (env != null && !env.isBlank()) {
      return fromSetting(env.strip(), "environment variable " + ENV);
    }
    Optional<Path> onPath = onPath("redis-server");
    if (onPath.isPresent()) {
      return new Choice(onPath.get(), "redis-server found on PATH");
    }
    return new Choice(
        embedded(),
        "embedded-redis bundled binary (no " + PROPERTY + ", no " + ENV + ", none on PATH)");
  }

  /** The binary for a server under libfaketime: always the bundled one. */
  static Choice forClockRate() {
    return new Choice(
        embedded(),
        "embedded-redis bundled binary (clock rate set; Debian's fails under faketime)");
  }

  private static Choice fromSetting(String value, String source) {
    if (value.equalsIgnoreCase(EMBEDDED)) {
      return new Choice(embedded(), "embedded-redis bundled binary (" + source + ")");
    }
    Path path = Path.of(value);
    if (!Files.isRegularFile(path) || !Files.isExecutable(path)) {
      throw new IllegalStateException(
          source + " is '" + value + "', which is neither an executable file nor 'embedded'");
    }
    return new Choice(path, source);
  }

  /**
   * The binary bundled in embedded-redis, copied out of its jar once per JVM; deleted at JVM exit.
   */
  static synchronized Path embedded() {
    if (embedded == null) {
      File file;
      try {
        file = ExecutableProvider.newJarResourceProvider().get();
      } catch (IOException | RuntimeException e) {
        throw new IllegalStateException(
            "cannot extract the redis-server bundled in embedded-redis for "
                + System.getProperty("os.name")
                + "/"
                + System.getProperty("os.arch"),
            e);
      }
      // deleteOnExit runs in reverse order: the file first, then its temp directory.
      File dir = file.getParentFile();
      if (dir != null && dir.getName().startsWith("redis")) {
        dir.deleteOnExit();
      }
      file.deleteOnExit();
      embedded = file.toPath();
    }
    return embedded;
  }

  /** {@code faketime} on PATH, else {@code /usr/bin/faketime}, if executable. */
  static Optional<Path> faketime() {
    Optional<Path> onPath = onPath("faketime");
    if (onPath.isPresent()) {
      return onPath;
    }
    Path debian = Path.of("/usr/bin/faketime");
    return Files.isExecutable(debian) ? Optional.of(debian) : Optional.empty();
  }

  static Optional<Path> onPath(String name) {
    String path = System.getenv("PATH");
    if (path == null) {
      return Optional.empty();
    }
    for (String dir : path.split(File.pathSeparator)) {
      if (dir.isEmpty()) {
        continue;
      }
      Path candidate = Path.of(dir, name);
      if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  /** The first line of {@code <binary> --version}, or a note why there is none; cached. */
  static String version(Path binary) {
    return versions.computeIfAbsent(binary, RedisBinary::readVersion);
  }

  private static String readVersion(Path binary) {
    try {
      Process process =
          new ProcessBuilder(binary.toString(), "--version").redirectErrorStream(true).start();
      process.getOutputStream().close();
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        return "version unknown: --version did not exit within 5 s";
      }
      String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      return out.lines().findFirst().orElse("version unknown: --version printed nothing").strip();
    } catch (IOException e) {
      return "version unknown: " + e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "version unknown: interrupted";
    }
  }
}
