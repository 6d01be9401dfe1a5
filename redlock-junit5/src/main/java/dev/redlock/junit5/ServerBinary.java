package dev.redlock.junit5;

import java.io.File;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Chooses the {@code redis-server} executable; the order is documented on {@link RedLockMasters}.
 */
final class ServerBinary {
  static final String PROPERTY = "redlock.redis.server";
  static final String ENV = "REDIS_SERVER";
  static final String EMBEDDED = "embedded";
  static final String EMBEDDED_PROVIDER = "redis.embedded.core.ExecutableProvider";

  /** An executable and why it was chosen. */
  record Choice(Path path, String reason) {
    @Override
    public String toString() {
      return path + " (" + reason + ")";
    }
  }

  /** The bundled binary, copied out of embedded-redis' jar at most once per JVM. */
  private static final AtomicReference<Path> embedded = new AtomicReference<>();

  private ServerBinary() {}

  static Choice select() {
    return select(System.getProperty(PROPERTY), System.getenv(ENV), System.getenv("PATH"));
  }

  static Choice select(String property, String env, String path) {
    if (property != null && !property.isBlank()) {
      return fromSetting(property.strip(), "system property " + PROPERTY);
    }
    if (env != null && !env.isBlank()) {
      return fromSetting(env.strip(), "environment variable " + ENV);
    }
    Optional<Path> onPath = onPath(path, "redis-server");
    if (onPath.isPresent()) {
      return new Choice(onPath.get(), "redis-server found on PATH");
    }
    if (embeddedAvailable()) {
      return new Choice(embedded(), "the binary bundled in embedded-redis (none on PATH)");
    }
    throw new IllegalStateException(
        "no redis-server to start: none on PATH, no system property "
            + PROPERTY
            + ", no environment variable "
            + ENV
            + ". Install Redis (apt-get install redis-server, brew install redis), point "
            + PROPERTY
            + " at a redis-server executable, or add com.github.codemonstur:embedded-redis"
            + " to the test class path to use the Redis 6.2 it bundles");
  }

  private static Choice fromSetting(String value, String source) {
    if (value.equalsIgnoreCase(EMBEDDED)) {
      if (!embeddedAvailable()) {
        throw new IllegalStateException(
            source
                + " is 'embedded', but com.github.codemonstur:embedded-redis is not on the class"
                + " path");
      }
      return new Choice(embedded(), "the binary bundled in embedded-redis (" + source + ")");
    }
    Path path = Path.of(value);
    if (!Files.isRegularFile(path) || !Files.isExecutable(path)) {
      throw new IllegalStateException(
          source + " is '" + value + "', which is neither an executable file nor 'embedded'");
    }
    return new Choice(path, source);
  }

  static Optional<Path> onPath(String path, String name) {
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

  private static boolean embeddedAvailable() {
    try {
      Class.forName(EMBEDDED_PROVIDER, false, ServerBinary.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /**
   * Copies the bundled binary out of embedded-redis' jar, through reflection so that embedded-redis
   * stays an optional dependency; deleted at JVM exit. Two threads racing may both copy it; one
   * copy wins.
   */
  private static Path embedded() {
    Path known = embedded.get();
    if (known != null) {
      return known;
    }
    File file;
    try {
      Class<?> provider =
          Class.forName(EMBEDDED_PROVIDER, true, ServerBinary.class.getClassLoader());
      Method factory = provider.getMethod("newJarResourceProvider");
      Object jarProvider = factory.invoke(null);
      Method get = provider.getMethod("get");
      file = (File) get.invoke(jarProvider);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      throw new IllegalStateException(
          "cannot extract the redis-server bundled in embedded-redis for "
              + System.getProperty("os.name")
              + "/"
              + System.getProperty("os.arch"),
          e);
    }
    File dir = file.getParentFile();
    if (dir != null && dir.getName().startsWith("redis")) {
      dir.deleteOnExit(); // deleteOnExit runs in reverse order: the file first, then its directory
    }
    file.deleteOnExit();
    return embedded.compareAndSet(null, file.toPath()) ? file.toPath() : embedded.get();
  }
}
