package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The drill against three real redis-server masters. The extension flushes them before each test,
 * so they are brand new each time: the tests that want leases admit them, as the drill does with
 * the local masters it starts.
 */
class DrillIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void aShortDrillPassesWithNoOverlapAndNoLostUpdateAndLogsNothingAtWarn(RedisCluster cluster) {
    DrillPlan config = threeWorkersForTwoSeconds(cluster);
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
    assertTrue(result.fencing().increasing(), text);
    assertEquals(result.acquisitions(), result.fencing().leases(), text);
    assertTrue(
        text.contains(
            String.format(
                Locale.ROOT,
                "fencing tokens: %,d leases, strictly increasing: yes%n",
                result.acquisitions())),
        text);
    assertTrue(text.contains("masters admitted explicitly (restart guard)"), text);
    assertTrue(text.contains("3 of 3 masters trusted"), text);
    assertEquals(0, result.restartedRounds(), text);
    assertFalse(text.contains("Hint:"), text);
    assertTrue(text.strip().endsWith("DRILL PASSED"), text);
    String logged = log.toString(StandardCharsets.UTF_8);
    assertFalse(logged.contains("WARN") || logged.contains("ERROR"), logged);
  }

  /**
   * Eight workers, each with its own RedLock, on three masters and two that are down: each warning
   * about a down master is logged once, not once per worker (nor once per worker's admission).
   */
  @Test
  void eachWarningIsLoggedOnceWhateverTheNumberOfWorkers(RedisCluster cluster, @TempDir Path dir)
      throws Exception {
    java.util.List<String> nodes = new java.util.ArrayList<>(cluster.uris());
    java.util.List<Integer> down = new java.util.ArrayList<>();
    for (int i = 0; i < 2; i++) {
      try (java.net.ServerSocket closed = new java.net.ServerSocket(0)) {
        down.add(closed.getLocalPort()); // closed again: nothing listens there
      }
    }
    down.forEach(port -> nodes.add("redis://127.0.0.1:" + port));
    ByteArrayOutputStream report = new ByteArrayOutputStream();
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    PrintStream originalErr = System.err;
    System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
    try {
      Drill.run(
          new String[] {
            "--nodes",
            String.join(",", nodes),
            "--admit-fresh-nodes",
            "--workers",
            "8",
            "--duration",
            "1",
            "--report",
            dir.resolve("r.html").toString()
          },
          new PrintStream(report, true, StandardCharsets.UTF_8));
    } finally {
      System.setErr(originalErr);
    }
    String logged = log.toString(StandardCharsets.UTF_8);
    java.util.List<String> warnings =
        logged
            .lines()
            .filter(line -> line.contains(" WARN "))
            .map(line -> line.replaceFirst("^\\[[^\\]]*\\] ", "")) // the thread's name
            .toList();
    for (int port : down) {
      assertTrue(
          warnings.stream().anyMatch(w -> w.contains("127.0.0.1:" + port)),
          "the down master is named: " + logged);
    }
    assertEquals(
        warnings.size(), new java.util.HashSet<>(warnings).size(), "each warning once: " + logged);
  }

  @Test
  void eachWorkersWaitForTheLockComesFromItsOwnGrantsAndIsInTheReport(RedisCluster cluster) {
    DrillPlan plan = threeWorkersForTwoSeconds(cluster);
    ByteArrayOutputStream report = new ByteArrayOutputStream();
    DrillResult drill =
        Drill.runRecorded(plan, new PrintStream(report, true, StandardCharsets.UTF_8));
    String text = report.toString(StandardCharsets.UTF_8);
    Result result = drill.checks();

    assertTrue(result.passed(), text);
    assertEquals(3, drill.waits().size(), text);
    long grants = 0;
    long longest = 0;
    for (int w = 0; w < 3; w++) {
      Summary waits = drill.waits().get(w);
      // The worker's own grants: as many as it acquired, and as many as its lane holds.
      assertEquals(result.perWorker().get(w), waits.count(), "worker " + (w + 1) + "\n" + text);
      assertEquals(drill.timeline().leases().get(w).size(), waits.count(), text);
      assertTrue(waits.count() > 0, text);
      assertTrue(0 < waits.p50() && waits.p50() <= waits.p99(), waits.toString());
      assertTrue(waits.p99() <= waits.max(), waits.toString());
      grants += waits.count();
      longest = Math.max(longest, waits.max());
      String row =
          String.format(
              Locale.ROOT,
              "  %6d %,10d %11s %11s %11s%n",
              w + 1,
              waits.count(),
              Percentiles.micros(waits.p50()),
              Percentiles.micros(waits.p99()),
              Percentiles.micros(waits.max()));
      assertTrue(text.contains(row), "no row '" + row + "' in\n" + text);
    }
    // Together they are the run's waits: every grant, and the longest wait of all.
    assertEquals(result.acquisitions(), grants, text);
    assertEquals(result.waitLatency().count(), grants, text);
    assertEquals(result.waitLatency().max(), longest, text);
  }

  @Test
  void aSmallInventorySellsOutExactlyAndEndsEarly(RedisCluster cluster) {
    DrillPlan config =
        DrillPlan.defaults(cluster.uris())
            .withWorkers(4)
            .withDuration(Duration.ofSeconds(30))
            .withInventory(200)
            .withAdmitFreshNodes(true);
    long began = System.nanoTime();
    Result result = Drill.run(config, new PrintStream(new ByteArrayOutputStream()));
    long tookMillis = (System.nanoTime() - began) / 1_000_000;

    assertTrue(result.passed(), result.failures().toString());
    assertTrue(result.soldOut());
    assertEquals(200, result.decrements());
    assertEquals(0, result.finalInventory());
    assertTrue(result.fencing().increasing(), result.fencing().toString());
    assertTrue(tookMillis < 20_000, "sold out, yet ran for " + tookMillis + " ms");
  }

  @Test
  void freshMastersNotAdmittedGrantNothingAndTheReportPointsToTheFlag(
      RedisCluster cluster, @TempDir Path dir) {
    ByteArrayOutputStream report = new ByteArrayOutputStream();
    int code =
        Drill.run(
            new String[] {
              "--nodes",
              String.join(",", cluster.uris()),
              "--workers",
              "2",
              "--duration",
              "0.5",
              "--report",
              dir.resolve("r.html").toString()
            },
            new PrintStream(report, true, StandardCharsets.UTF_8));
    String text = report.toString(StandardCharsets.UTF_8);

    assertEquals(1, code, text);
    assertTrue(text.contains("masters not admitted (--admit-fresh-nodes not given)"), text);
    assertTrue(text.contains("answered RESTARTED"), text);
    assertTrue(text.contains("Hint: in "), text);
    assertTrue(text.contains("with --admit-fresh-nodes."), text);
    assertTrue(text.contains("fencing tokens: 0 leases, strictly increasing: yes"), text);
    assertTrue(text.contains("DRILL FAILED: no lease was granted"), text);
    assertTrue(text.contains("masters answered RESTARTED"), text);
  }

  @Test
  void theSwitchAdmitsFreshMastersGivenByNodes(RedisCluster cluster, @TempDir Path dir) {
    ByteArrayOutputStream report = new ByteArrayOutputStream();
    int code =
        Drill.run(
            new String[] {
              "--nodes",
              String.join(",", cluster.uris()),
              "--admit-fresh-nodes",
              "--workers",
              "2",
              "--duration",
              "0.5",
              "--report",
              dir.resolve("r.html").toString()
            },
            new PrintStream(report, true, StandardCharsets.UTF_8));
    String text = report.toString(StandardCharsets.UTF_8);

    assertEquals(0, code, text);
    assertTrue(text.contains("3 of 3 masters trusted"), text);
    assertTrue(text.contains("(3 admitted by these calls, 0 were already)"), text);
    // The preflight is taken once admitted: the masters the workers meet, not "NO QUORUM".
    assertTrue(text.contains("quorum: 3 of 3 masters vote, 2 needed"), text);
    assertTrue(!text.contains("NO QUORUM"), text);
    assertTrue(text.strip().endsWith("DRILL PASSED"), text);
  }

  @Test
  void mainExitsOneWhenNoMasterAnswers(@TempDir Path dir) throws Exception {
    int port;
    try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
      port = socket.getLocalPort(); // closed again: nothing listens there
    }
    ByteArrayOutputStream report = new ByteArrayOutputStream();
    int code =
        Drill.run(
            new String[] {
              "--nodes",
              "redis://127.0.0.1:" + port,
              "--duration",
              "0.5",
              "--report",
              dir.resolve("r.html").toString()
            },
            new PrintStream(report, true, StandardCharsets.UTF_8));
    String text = report.toString(StandardCharsets.UTF_8);
    assertEquals(1, code, text);
    assertTrue(text.contains("DRILL FAILED: no lease was granted"), text);
  }

  /** Three workers for two seconds on the cluster's masters, admitted as a brand-new cluster. */
  private static DrillPlan threeWorkersForTwoSeconds(RedisCluster cluster) {
    return DrillPlan.defaults(cluster.uris())
        .withWorkers(3)
        .withDuration(Duration.ofSeconds(2))
        .withAdmitFreshNodes(true);
  }
}
