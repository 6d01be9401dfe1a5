package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * On JDK 21 to 23 a virtual thread that waits inside {@code synchronized} pins its carrier. The
 * library parks only on {@code java.util.concurrent} locks, so none of its code may hold a monitor
 * or wait on one; this checks the sources on every JDK (the virtual-threads profile checks what
 * actually happens at run time on a JDK 21+).
 */
class NoMonitorWaitsTest {

  private static final Pattern MONITOR =
      Pattern.compile("\\bsynchronized\\b|\\.wait\\(|\\.notify(All)?\\(|\\btimedWait\\(");

  @Test
  void libraryCodeNeverHoldsOrWaitsOnAMonitor() throws IOException {
    Path sources = Path.of("src/main/java/dev/redlock");
    assertTrue(Files.isDirectory(sources), "run from the module directory: " + sources);
    List<String> found = new ArrayList<>();
    int files = 0;
    try (Stream<Path> paths = Files.walk(sources)) { // the API and every internal package
      for (Path file : paths.filter(p -> p.toString().endsWith(".java")).toList()) {
        files++;
        List<String> lines = Files.readAllLines(file);
        for (int i = 0; i < lines.size(); i++) {
          String code = lines.get(i).replaceAll("//.*", "").replaceAll("^\\s*\\*.*", "");
          if (MONITOR.matcher(code).find()) {
            found.add(sources.relativize(file) + ":" + (i + 1) + ": " + lines.get(i).strip());
          }
        }
      }
    }
    assertTrue(files > 10, "found the sources: " + files);
    assertEquals(List.of(), found);
  }
}
