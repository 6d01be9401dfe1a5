package dev.redlock.readme;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The quick start's pom.xml in the README is {@code src/test/resources/readme/quickstart-pom.xml}
 * exactly, and that file stays a complete pom for the build's own versions: this project's BOM, the
 * SLF4J provider of the SLF4J the library is built with, and the exec plugin on {@code QuickStart},
 * the README's class.
 */
class QuickStartPomTest {

  private static String quickStartPom() throws IOException {
    try (InputStream in =
        QuickStartPomTest.class.getResourceAsStream("/readme/quickstart-pom.xml")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
    }
  }

  private static String property(String pom, String name) {
    Matcher m = Pattern.compile("<" + Pattern.quote(name) + ">([^<]+)</").matcher(pom);
    assertTrue(m.find(), name + " in the parent pom");
    return m.group(1);
  }

  @Test
  void theReadmeShowsTheQuickStartPomAsTested() throws IOException {
    String readme = Files.readString(Path.of("..", "README.md"));
    assertTrue(
        readme.contains("```xml\n" + quickStartPom() + "\n```"),
        "README.md's quick start pom differs from src/test/resources/readme/quickstart-pom.xml");
  }

  @Test
  void theQuickStartPomUsesTheBuildsVersions() throws IOException {
    String parent = Files.readString(Path.of("..", "pom.xml"));
    String pom = quickStartPom();
    // The project's version is its parent's, the BOM's.
    String version = property(parent.substring(parent.indexOf("<parent>")), "version");
    assertTrue(
        pom.contains("<artifactId>redlock-bom</artifactId>\n        <version>" + version + "<"),
        "the BOM's version is the project's, " + version);
    assertTrue(
        pom.contains(
            "<artifactId>slf4j-simple</artifactId>\n      <version>"
                + property(parent, "slf4j.version")
                + "<"),
        "slf4j-simple is the build's SLF4J version");
    assertTrue(
        pom.contains("<mainClass>" + QuickStart.class.getSimpleName() + "</mainClass>"), pom);
  }
}
