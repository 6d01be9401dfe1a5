package dev.redlock.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The masters, and the password in their URIs, given to {@code inspect} and {@code admit} without
 * putting them on the command line (where {@code ps} and the shell's history would show them): in
 * the environment variable {@code REDLOCK_NODES}, or in a file read as picocli's {@code @FILE}.
 * Three masters whose ACL user {@code app} has a password.
 */
class MastersOffTheCommandLineIT {

  private static final String PASSWORD = "s3cret-off-the-command-line";
  private static List<RedisProcess> masters;
  private static String nodes;

  @BeforeAll
  static void startMasters() {
    masters = List.of(withPassword(), withPassword(), withPassword()); // default user stays open
    nodes =
        String.join(
            ",",
            masters.stream()
                .map(m -> "redis://app:" + PASSWORD + "@" + m.host() + ":" + m.port())
                .toList());
  }

  @AfterAll
  static void stopMasters() {
    masters.forEach(RedisProcess::close);
  }

  private static RedisProcess withPassword() {
    return RedisProcess.builder()
        .arguments("--user", "app", "on", ">" + PASSWORD, "~*", "&*", "+@all")
        .start();
  }

  /** inspect reached every master as user app: reachable PASSes on each, nothing FAILs. */
  private static void assertInspectedEveryMaster(Cli cli) {
    assertEquals(RedLockCli.EXIT_ATTENTION, cli.code(), cli.text()); // brand new: uptime WARNs
    for (RedisProcess master : masters) {
      assertTrue(
          cli.out().contains("  " + master.host() + ":" + master.port() + ": WARN\n"), cli.text());
    }
    assertEquals(3, cli.out().split("PASS    reachable", -1).length - 1, cli.text());
    assertFalse(cli.text().contains(PASSWORD), cli.text());
  }

  @Test
  void theEnvironmentVariableRedlockNodesNamesTheMasters() {
    assertInspectedEveryMaster(Cli.withEnvironment(Map.of("REDLOCK_NODES", nodes), "inspect"));
  }

  @Test
  void nodesOnTheCommandLineWinOverTheEnvironment() {
    Cli cli =
        Cli.withEnvironment(
            Map.of("REDLOCK_NODES", "redis://127.0.0.1:1"), "inspect", "--nodes", nodes);
    assertInspectedEveryMaster(cli);
    assertFalse(cli.out().contains("127.0.0.1:1:"), cli.text());
  }

  @Test
  void anAtFileHoldsTheNodesOption(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("masters");
    Files.writeString(file, "--nodes=" + nodes + "\n");
    assertInspectedEveryMaster(Cli.run("inspect", "@" + file));
  }

  @Test
  void admitTakesTheMastersFromTheEnvironmentToo() {
    Cli cli = Cli.withEnvironment(Map.of("REDLOCK_NODES", nodes), "admit", "--yes");
    assertEquals(RedLockCli.EXIT_OK, cli.code(), cli.text());
    assertTrue(cli.out().contains("admitted"), cli.text());
    assertFalse(cli.text().contains(PASSWORD), cli.text());
  }
}
