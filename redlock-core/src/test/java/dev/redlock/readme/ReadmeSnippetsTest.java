package dev.redlock.readme;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every block of test code marked {@code // README: name} ... {@code // end README: name}, in any
 * module's test sources, must appear in the README or in a page under {@code docs/} exactly
 * (indentation removed): the documentation shows only code that compiles and runs. A block may hold
 * a whole source file from its imports on (the marker goes after the package line), so a snippet
 * shows its imports too.
 */
class ReadmeSnippetsTest {

  private static final List<String> EXPECTED =
      List.of("QuickStart", "ApiTour", "ShedLock", "Metrics", "Spring", "JUnit5", "RequireQuorum");

  private static final Pattern BLOCK =
      Pattern.compile("// README: (.+?)\\n(.*?)\\n[ \\t]*// end README: \\1", Pattern.DOTALL);

  @Test
  void everyMarkedSnippetAppearsInTheReadmeAsCompiled() throws IOException {
    Path root = Path.of("..").toAbsolutePath().normalize();
    StringBuilder pages = new StringBuilder(Files.readString(root.resolve("README.md")));
    try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
      for (Path page : docs.filter(p -> p.toString().endsWith(".md")).sorted().toList()) {
        pages.append('\n').append(Files.readString(page));
      }
    }
    String readme = pages.toString();
    List<String> missing = new ArrayList<>();
    Set<String> found = new TreeSet<>();
    try (Stream<Path> files = Files.walk(root, 12)) { // deep enough for example packages
      for (Path file :
          files
              .filter(p -> p.toString().endsWith(".java"))
              .filter(p -> p.toString().contains("/src/test/java/"))
              .toList()) {
        Matcher block = BLOCK.matcher(Files.readString(file));
        while (block.find()) {
          found.add(block.group(1));
          if (!readme.contains(dedent(block.group(2)))) {
            missing.add(block.group(1) + " (" + root.relativize(file) + ")");
          }
        }
      }
    }
    // The snippets the README says are checked: one whose marker was lost would go unchecked.
    assertTrue(found.containsAll(EXPECTED), "found the marked snippets " + EXPECTED + ": " + found);
    assertEquals(List.of(), missing, "snippets whose README copy differs from the compiled code");
  }

  private static String dedent(String block) {
    List<String> lines = block.lines().toList();
    int indent =
        lines.stream()
            .filter(l -> !l.isBlank())
            .mapToInt(l -> l.length() - l.stripLeading().length())
            .min()
            .orElse(0);
    StringBuilder out = new StringBuilder();
    for (String line : lines) {
      out.append(line.isBlank() ? "" : line.substring(indent)).append('\n');
    }
    return out.toString().stripTrailing();
  }
}
