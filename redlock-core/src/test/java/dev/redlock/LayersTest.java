package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shape of the core, read from its sources as {@link NoMonitorWaitsTest} reads them: the API
 * package on top, then one unexported package per layer, each referring only to the layers below
 * it; each dependency behind its one class; no source file longer than 700 lines; and a module that
 * exports the API alone.
 */
class LayersTest {

  private static final Path SOURCES = Path.of("src/main/java");

  /**
   * Every package of the core and its layer: a package may refer to its own layer and the ones
   * below (lower numbers), never to one above. A new package must be placed here.
   */
  private static final Map<String, Integer> LAYERS =
      Map.of(
          "dev.redlock", 3,
          "dev.redlock.internal.lease", 2,
          "dev.redlock.internal.preflight", 1,
          "dev.redlock.internal.transport", 0);

  /** A reference to a type of the library, by import or by full name: its package, group 1. */
  private static final Pattern REFERENCE =
      Pattern.compile("\\b(dev\\.redlock(?:\\.[a-z]\\w*)*)\\.(?:[A-Z]\\w*|\\*)");

  private static final Pattern JEDIS = Pattern.compile("\\bredis\\.clients\\.jedis\\b");
  private static final Pattern RESILIENCE4J = Pattern.compile("\\bio\\.github\\.resilience4j\\b");
  private static final Pattern EXPORTS = Pattern.compile("\\bexports\\s+([\\w.]+)([^;]*);");

  private static final int MAX_LINES = 700;

  private static List<Path> files;

  @BeforeAll
  static void readTheSources() throws IOException {
    assertTrue(Files.isDirectory(SOURCES), "run from the module directory: " + SOURCES);
    try (Stream<Path> paths = Files.walk(SOURCES)) {
      files = paths.filter(p -> p.toString().endsWith(".java")).sorted().toList();
    }
    assertTrue(files.size() > 40, "found the sources: " + files.size());
  }

  @Test
  void everyPackageRefersOnlyToItsOwnLayerAndTheOnesBelow() throws IOException {
    List<String> found = new ArrayList<>();
    for (Path file : sources()) {
      String from = packageOf(file);
      Integer layer = LAYERS.get(from);
      if (layer == null) {
        found.add(name(file) + " is in " + from + ", which has no layer");
        continue;
      }
      Matcher reference = REFERENCE.matcher(Files.readString(file));
      while (reference.find()) {
        String to = reference.group(1);
        Integer below = LAYERS.get(to);
        if (below == null || below > layer) {
          found.add(name(file) + " refers to " + reference.group() + " (" + to + ")");
        }
      }
    }
    assertEquals(List.of(), found);
  }

  @Test
  void onlyJedisLinkImportsJedis() throws IOException {
    assertEquals(List.of(), filesMentioning(JEDIS, "JedisLink.java"));
  }

  @Test
  void onlyBreakerNodeClientImportsResilience4j() throws IOException {
    assertEquals(List.of(), filesMentioning(RESILIENCE4J, "BreakerNodeClient.java"));
  }

  @Test
  void noMainSourceFileIsLongerThan700Lines() throws IOException {
    List<String> found = new ArrayList<>();
    for (Path file : files) {
      int lines = Files.readAllLines(file).size();
      if (lines > MAX_LINES) {
        found.add(name(file) + ": " + lines + " lines");
      }
    }
    assertEquals(List.of(), found);
  }

  @Test
  void theModuleExportsTheApiAlone() throws IOException {
    String module = Files.readString(SOURCES.resolve("module-info.java"));
    List<String> exported = new ArrayList<>();
    for (Matcher exports = EXPORTS.matcher(module); exports.find(); ) {
      exported.add((exports.group(1) + exports.group(2)).strip());
    }
    assertEquals(List.of("dev.redlock"), exported);
  }

  /** The files that mention {@code library}, but for {@code owner} and the module declaration. */
  private static List<String> filesMentioning(Pattern library, String owner) throws IOException {
    List<String> found = new ArrayList<>();
    for (Path file : sources()) {
      if (!file.getFileName().toString().equals(owner)
          && library.matcher(Files.readString(file)).find()) {
        found.add(name(file));
      }
    }
    return found;
  }

  /** Every source file but the module declaration. */
  private static List<Path> sources() {
    return files.stream()
        .filter(f -> !f.getFileName().toString().equals("module-info.java"))
        .toList();
  }

  private static String packageOf(Path file) {
    return SOURCES
        .relativize(file.getParent())
        .toString()
        .replace(file.getFileSystem().getSeparator(), ".");
  }

  private static String name(Path file) {
    return SOURCES.relativize(file).toString();
  }
}
