package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.drill.Drill.Config;
import dev.redlock.drill.Drill.Result;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The drill against three real redis-server masters. */
class DrillIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void aShortDrillPassesWithNoOverlapAndNoLostUpdateAndLogsNothingAtWarn(RedisCluster cluster) {
    Config config =
        Config.defaults(cluster.uris()).withWorkers(3).withDuration(Duration.ofSeconds(2));
    ByteArrayOutputStream report = new ByteArrayOutputStream();
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    Result result;
    PrintStream originalErr = System.err;
    System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
    try {
      result = Drill.run(config, new PrintStream(report, true, StandardCharsets.UTF_8));
    } finally {
      System.setErr(originalErr);
    }
    String text = report.toString(StandardCharsets.UTF_8);

    assertTrue(result.passed(), text);
    assertTrue(result.acquisitions() > 0, text);
    assertEquals(0, result.violations(), text);
    assertEquals(result.expectedInventory(), result.finalInventory(), text);
    assertEquals(result.acquisitions(), result.decrements(), text);
    assertEquals(3, result.perWorker().size(), text);
    assertTrue(text.contains("overlap violations   0 among"), text);
    assertTrue(text.strip().endsWith("DRILL PASSED"), text);
    String logged = log.toString(StandardCharsets.UTF_8);
    assertFalse(logged.contains("WARN") || logged.contains("ERROR"), logged);
  }

  @Test
  void aSmallInventorySellsOutExactlyAndEndsEarly(RedisCluster cluster) {
    Config config =
        Config.defaults(cluster.uris())
            .withWorkers(4)
            .withDuration(Duration.ofSeconds(30))
            .withInventory(200);
    long began = System.nanoTime();
    Result result = Drill.run(config, new PrintStream(new ByteArrayOutputStream()));
    long tookMillis = (System.nanoTime() - began) / 1_000_000;

    assertTrue(result.passed(), result.failures().toString());
    assertTrue(result.soldOut());
    assertEquals(200, result.decrements());
    assertEquals(0, result.finalInventory());
    assertTrue(tookMillis < 20_000, "sold out, yet ran for " + tookMillis + " ms");
  }

  @Test
  void mainExitsOneWhenNoMasterAnswers() throws Exception {
    int port;
    try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
      port = socket.getLocalPort(); // closed again: nothing listens there
    }
    ByteArrayOutputStream report = new ByteArrayOutputStream();
    int code =
        Drill.run(
            new String[] {"--nodes", "redis://127.0.0.1:" + port, "--duration", "0.5"},
            new PrintStream(report, true, StandardCharsets.UTF_8));
    String text = report.toString(StandardCharsets.UTF_8);
    assertEquals(1, code, text);
    assertTrue(text.contains("DRILL FAILED: no lease was granted"), text);
  }
}
