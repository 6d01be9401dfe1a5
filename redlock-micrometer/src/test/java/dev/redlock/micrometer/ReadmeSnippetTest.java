package dev.redlock.micrometer;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The README shows the code of {@link ReadmeExample} word for word, so its snippet compiles. */
class ReadmeSnippetTest {

  @Test
  void theReadmeShowsTheCompiledSnippet() throws IOException {
    Path module = Path.of(System.getProperty("basedir", "."));
    List<String> source =
        Files.readAllLines(
            module.resolve("src/test/java/dev/redlock/micrometer/ReadmeExample.java"));
    int begin = source.indexOf("  // README:begin");
    int end = source.indexOf("  // README:end");
    assertTrue(begin >= 0 && end > begin, "markers in ReadmeExample.java");
    String snippet =
        source.subList(begin + 1, end).stream()
            .map(line -> line.startsWith("  ") ? line.substring(2) : line)
            .collect(Collectors.joining("\n"));

    String readme = Files.readString(module.resolve("../README.md"));

    assertTrue(
        readme.contains(snippet),
        "README.md must contain the code of ReadmeExample.java, as formatted:\n" + snippet);
  }
}
