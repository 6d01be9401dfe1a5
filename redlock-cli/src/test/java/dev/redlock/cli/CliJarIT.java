package dev.redlock.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The executable jar as a user runs it, {@code java -jar redlock-cli-<version>.jar}: built by the
 * package phase before the integration tests, its path given by the build.
 */
class CliJarIT {

  private static Path jar;

  @BeforeAll
  static void findTheJar() {
    String path = System.getProperty("redlock.cli.jar");
    assertTrue(path != null, "the build passes -Dredlock.cli.jar");
    jar = Path.of(path);
    assertTrue(Files.isRegularFile(jar), "no jar at " + jar + ": run the package phase first");
  }

  @Test
  void helpListsTheCommandsAndTheVersionIsTheBuilds() throws Exception {
    Run help = java("--help");
    assertEquals(0, help.code, help.output);
    assertTrue(help.output.startsWith("Usage: redlock [-hV] COMMAND"), help.output);
    assertTrue(help.output.contains("inspect"), help.output);
    Run version = java("--version");
    assertEquals(0, version.code, version.output);
    assertTrue(
        version.output.startsWith("redlock " + System.getProperty("redlock.version")),
        version.output);
  }

  @Test
  void drillHelpPrintsTheOptionsAndThePlanGrammar() throws Exception {
    Run run = java("drill", "--help");
    assertEquals(0, run.code, run.output);
    assertTrue(run.output.contains("\nUsage: redlock drill "), run.output);
    assertTrue(run.output.contains("--plan=FILE"), run.output);
    assertTrue(run.output.contains("at 40s kill master 3 and restart it after 2s"), run.output);
  }

  @Test
  void aBadPlanExitsTwoWithTheFaultAndTheReason() throws Exception {
    Run run = java("drill", "--faults", "at 1s pause master 9 for 1s");
    assertEquals(2, run.code, run.output);
    assertTrue(
        run.output.contains("--faults fault 1: no master 9: the drill has 5 masters (1 to 5)"),
        run.output);
  }

  @Test
  void aShortFailoverDrillRunsFromTheJarAlone(@TempDir Path dir) throws Exception {
    Path report = dir.resolve("report.html");
    Run run =
        java(
            "drill",
            "--workers",
            "2",
            "--duration",
            "1.5",
            "--faults",
            "at 0.3s partition master 1 for 0.5s; at 0.5s pause master 3 for 0.5s",
            "--report",
            report.toString());
    assertEquals(0, run.code, run.output);
    assertTrue(run.output.strip().endsWith("DRILL PASSED"), run.output);
    assertTrue(run.output.contains("fault ended: pause master 3 (fault 2)"), run.output);
    assertTrue(Files.size(report) > 0, run.output);
    // The library's INFO lines stay out of the output (simplelogger.properties in the jar).
    assertTrue(!run.output.contains(" INFO "), run.output);
  }

  private record Run(int code, String output) {}

  private static Run java(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-jar");
    command.add(jar.toString());
    command.addAll(List.of(args));
    Path log = Files.createTempFile("redlock-cli-jar-", ".log");
    try {
      Process process =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      process.getOutputStream().close();
      boolean exited = process.waitFor(60, TimeUnit.SECONDS);
      if (!exited) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
      }
      String output = Files.readString(log, StandardCharsets.UTF_8);
      if (!exited) {
        throw new AssertionError("java -jar did not exit within 60 s:\n" + output);
      }
      return new Run(process.exitValue(), output);
    } finally {
      Files.deleteIfExists(log);
    }
  }
}
