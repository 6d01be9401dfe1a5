package dev.redlock.drill;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Debian's headless Chromium, for rendering the drill's HTML report to a PNG, with the flags that
 * keep it off the network (it fetches nothing for a file:// page, and must not phone home).
 */
final class Chromium {

  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  private Chromium() {}

  /** {@code chromium} (or {@code chromium-browser}) on {@code PATH}, if any. */
  static Optional<Path> find() {
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(File.pathSeparator)) {
      for (String name : List.of("chromium", "chromium-browser")) {
        Path candidate = Path.of(dir.isEmpty() ? "." : dir, name);
        if (Files.isExecutable(candidate)) {
          return Optional.of(candidate);
        }
      }
    }
    return Optional.empty();
  }

  /**
   * Renders {@code html} in a window of {@code width} x {@code height} and writes the screenshot to
   * {@code png}.
   *
   * @throws IOException if Chromium fails, times out or writes no picture; the message has its
   *     output
   */
  static void screenshot(Path chromium, Path html, Path png, int width, int height)
      throws IOException, InterruptedException {
    Path profile = Files.createTempDirectory("redlock-chromium-");
    Path log = Files.createTempFile("redlock-chromium-", ".log");
    try {
      Process process =
          new ProcessBuilder(
                  chromium.toString(),
                  "--headless",
                  "--no-sandbox",
                  "--disable-gpu",
                  "--disable-quic",
                  "--no-first-run",
                  "--disable-background-networking",
                  "--disable-component-update",
                  "--disable-sync",
                  "--hide-scrollbars",
                  "--force-device-scale-factor=1",
                  "--user-data-dir=" + profile,
                  "--window-size=" + width + "," + height,
                  "--screenshot=" + png.toAbsolutePath(),
                  html.toAbsolutePath().toUri().toString())
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      process.getOutputStream().close();
      if (!process.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        throw new IOException("chromium took over " + TIMEOUT.toSeconds() + " s:\n" + read(log));
      }
      if (process.exitValue() != 0 || !Files.isRegularFile(png) || Files.size(png) == 0) {
        throw new IOException(
            "chromium exited with " + process.exitValue() + " and no picture:\n" + read(log));
      }
    } finally {
      deleteRecursively(profile);
      Files.deleteIfExists(log);
    }
  }

  private static String read(Path log) throws IOException {
    return Files.readString(log, StandardCharsets.UTF_8);
  }

  private static void deleteRecursively(Path root) throws IOException {
    try (Stream<Path> paths = Files.walk(root)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
