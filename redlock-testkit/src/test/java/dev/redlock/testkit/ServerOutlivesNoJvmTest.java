package dev.redlock.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A JVM that is killed outright runs no shutdown hook: PIT kills the minion whose mutant timed out,
 * a CI runner kills a hung fork. Its servers must still end, or each such kill leaves five
 * redis-servers running (PIT over the integration tests once left 250, at a load of 170).
 */
class ServerOutlivesNoJvmTest {

  /** Started in a child JVM: starts a server, pauses it, prints its pid, halts without hooks. */
  static final class HaltingJvm {
    public static void main(String[] args) {
      RedisProcess server = RedisProcess.start();
      server.pause(); // a paused server must end too (SIGKILL ends a stopped process)
      System.out.println(server.pid());
      System.out.flush();
      Runtime.getRuntime().halt(9);
    }
  }

  @Test
  void aServerEndsWithItsJvmEvenWhenTheJvmIsKilledOutright() throws Exception {
    Process jvm =
        new ProcessBuilder(
                List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp",
                    System.getProperty("java.class.path"),
                    HaltingJvm.class.getName()))
            .redirectError(ProcessBuilder.Redirect.DISCARD)
            .start();
    String pid;
    try (BufferedReader out =
        new BufferedReader(new InputStreamReader(jvm.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      String last = null;
      while ((line = out.readLine()) != null) {
        last = line;
      }
      pid = last;
    }
    assertTrue(jvm.waitFor(60, TimeUnit.SECONDS), "the child JVM did not end");
    assertEquals(9, jvm.exitValue(), "the child JVM did not halt as planned; its pid line: " + pid);
    Optional<ProcessHandle> server = ProcessHandle.of(Long.parseLong(pid.strip()));
    Poll.until(
        Duration.ofSeconds(10),
        () -> server.isEmpty() || !server.get().isAlive(),
        () -> "redis-server pid " + pid + " outlived its JVM");
    assertFalse(server.isPresent() && server.get().isAlive());
  }
}
