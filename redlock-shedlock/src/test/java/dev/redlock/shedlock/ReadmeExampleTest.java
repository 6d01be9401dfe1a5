package dev.redlock.shedlock;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The README shows the ShedLock example exactly as it is compiled and run. */
class ReadmeExampleTest {

  static final Path EXAMPLE =
      Path.of("src/test/java/dev/redlock/shedlock/SchedulerLockExample.java");
  static final Path README = Path.of("../README.md"); // tests run in the module's directory

  @Test
  void theReadmeShowsTheCompiledExampleAsItIs() throws IOException {
    String source = Files.readString(EXAMPLE);
    String example =
        source.substring(
            source.indexOf("// README:begin\n") + "// README:begin\n".length(),
            source.indexOf("// README:end"));

    String readme = Files.readString(README);

    assertTrue(
        readme.contains("```java\n" + example + "```\n"),
        "README.md must show " + EXAMPLE + " between its README markers, as it is:\n" + example);
  }
}
