package dev.redlock.benchmark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A very short benchmark against three real redis-server masters (the black hole replaces the
 * third), to keep it from rotting: every row (node-redlock's, where node and npm are missing or the
 * registry cannot be reached, says why it was skipped), every goal, the chart. The extension
 * flushes the masters before each test, so they are brand new and must be admitted.
 */
class BenchmarkIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final String ISOLATION_GOALS =
      "Goals (issue 15, isolation: one master hostile, the others healthy; tryAcquire)";

  /**
   * Every row, goal and section of a short run, with no failed operation. The node timeout is a
   * generous 1 s: on a starved machine (2 cores, other builds running) the default 50 ms trips in
   * the 32-thread blocks, and a failed operation there says nothing about the library.
   */
  @Test
  void aShortRunPrintsEveryFigureWithNoFailedOperationAndLogsNothingAtWarn(
      RedisCluster cluster, @TempDir Path dir) throws Exception {
    Path chart = dir.resolve("charts").resolve("bench.svg");
    String[] args = {
      "--nodes",
      String.join(",", cluster.uris()),
      "--admit-fresh-nodes",
      "--iterations",
      "200",
      "--warmup",
      "50",
      "--rounds",
      "2",
      "--throughput-seconds",
      "0.6",
      "--blackhole-iterations",
      "200",
      "--node-timeout",
      "1000",
      "--skip",
      "isolation,handoff,async-load",
      "--chart",
      chart.toString()
    };
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    PrintStream originalErr = System.err;
    System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
    BenchmarkOutput output;
    try {
      output = BenchmarkOutput.run(args);
    } finally {
      System.setErr(originalErr);
    }
    String text = output.text();

    assertEquals(0, output.code(), text);
    assertTrue(text.contains("node timeout 1000 ms"), text);
    List<String> measured =
        new ArrayList<>(
            List.of(
                "floor (hand-written)",
                "plain RedLock",
                "default RedLock",
                "default RedLock + fencingToken()",
                "Redisson RedLock 3."));
    Matcher nodeSkipped = Pattern.compile("(?m)^  node-redlock +skipped: (\\S.*)$").matcher(text);
    if (nodeSkipped.find()) {
      // No node or npm here, or npm ci failed (offline): the row says why, and that goal waits.
      assertTrue(nodeSkipped.group(1).length() > 10, nodeSkipped.group(0));
      assertTrue(
          Pattern.compile("default p50 <= node-redlock +not judged: node-redlock skipped: ")
              .matcher(text)
              .find(),
          text);
    } else {
      measured.add("node-redlock 5.");
      assertTrue(text.contains("npm ci in") || text.contains("installed in"), text);
    }
    for (String row : measured) {
      // name, p50, p99, 200 samples, 0 failed, ops/s with 8 and 32 threads, 0 failed
      Matcher line =
          Pattern.compile(
                  "(?m)^  "
                      + Pattern.quote(row)
                      + "\\S* +[\\d,]+ +[\\d,]+ +200 +0 +[\\d,]+ +[\\d,]+ +0$")
              .matcher(text);
      assertTrue(line.find(), row + " row missing or with failures:\n" + text);
    }
    for (String label :
        new String[] {
          "floor SET NX PX round", "plain RedLock tryAcquire", "default RedLock tryAcquire"
        }) {
      Matcher row =
          Pattern.compile("(?m)^  " + Pattern.quote(label) + " +[\\d,]+ +[\\d,]+ +200 +0$")
              .matcher(text);
      assertTrue(row.find(), label + " row missing or with failures:\n" + text);
    }
    assertTrue(
        Pattern.compile(
                "(?m)^  default RedLock over TLS +skipped: needs the local masters \\(leave out"
                    + " --nodes\\)$")
            .matcher(text)
            .find(),
        text);
    assertTrue(text.contains("masters admitted explicitly (admitFreshNodes): 3 now"), text);
    assertTrue(
        text.contains("the goals are stated for 5 masters on loopback; this run has 3"), text);
    String verdict = " += +\\d+\\.\\d\\d  (met|NOT met) ";
    for (String goal :
        new String[] {
          "default p50 <= 1.15 x floor +[\\d,]+ / [\\d,]+ us",
          "default 32 threads >= 2 x floor +[\\d,]+ / [\\d,]+ ops/s",
          "plain p50 <= floor +[\\d,]+ / [\\d,]+ us",
          "token read p50 <= 1.6 x floor +[\\d,]+ / [\\d,]+ us"
        }) {
      assertTrue(
          Pattern.compile("(?m)^  " + goal + verdict + " *per round ").matcher(text).find(),
          goal + "\n" + text);
    }
    if (!nodeSkipped.reset().find()) {
      assertTrue(
          Pattern.compile("(?m)^  default p50 <= node-redlock +[\\d,]+ / [\\d,]+ us" + verdict)
              .matcher(text)
              .find(),
          text);
    }
    for (String label :
        new String[] {
          "3 healthy masters",
          "2 healthy + black hole, breakers on",
          "2 healthy + black hole, breakers off"
        }) {
      Matcher row =
          Pattern.compile(Pattern.quote(label) + "(\\s+[\\d,]+){4}\\s+200\\s+0\\n").matcher(text);
      assertTrue(row.find(), label + " row missing or with failures:\n" + text);
    }
    assertTrue(text.contains("reported OPEN after"), text);
    assertTrue(text.contains("p99 ratio black hole with breakers / healthy"), text);
    assertTrue(text.contains("p99 ratio black hole without breakers / healthy"), text);
    assertTrue(text.contains("not one byte answered"), text);
    assertTrue(text.contains("breakers of the healthy masters: no transitions"), text);
    // The isolation section has a test of its own (below); here it is skipped, and says so.
    assertTrue(text.contains("4. isolation: skipped (--skip isolation)"), text);
    assertTrue(text.contains("tryAcquire): not judged, --skip isolation"), text);
    assertTrue(text.contains("4. Isolation: skipped (--skip isolation)"), text);

    assertTrue(text.contains("Chart written to " + chart.toAbsolutePath()), text);
    String svg = Files.readString(chart);
    assertTrue(svg.startsWith("<svg "), svg);
    assertTrue(svg.strip().endsWith("</svg>"), svg);
    for (String row : measured) {
      assertTrue(svg.contains("<polyline"), svg);
      assertTrue(svg.contains("<title>" + BenchmarkChart.escape(row)), row + "\n" + svg);
    }
    String logged = log.toString(StandardCharsets.UTF_8);
    // The one WARN the run causes on purpose: the library saying the circuit-breaker section's
    // black hole (accepts, never answers) is unreachable, once per RedLock that meets it.
    String others =
        logged
            .lines()
            .filter(line -> !line.matches(".* - master [^ ]+: unreachable: handshake timed out.*"))
            .collect(java.util.stream.Collectors.joining("\n"));
    assertFalse(others.contains("WARN") || others.contains("ERROR"), logged);
  }

  @Test
  void skippedRowsSayWhyAndLeaveTheirGoalUnjudged(RedisCluster cluster) {
    BenchmarkOutput output =
        quickRun(
            "--nodes",
            String.join(",", cluster.uris()),
            "--admit-fresh-nodes",
            "--iterations",
            "20",
            "--warmup",
            "5",
            "--rounds",
            "1");
    String text = output.text();

    assertEquals(0, output.code(), text);
    assertTrue(
        Pattern.compile("(?m)^  Redisson RedLock +skipped: --skip redisson$").matcher(text).find(),
        text);
    assertTrue(
        Pattern.compile("(?m)^  node-redlock +skipped: --skip node-redlock$").matcher(text).find(),
        text);
    assertTrue(
        Pattern.compile(
                "(?m)^  default p50 <= node-redlock +not judged: node-redlock skipped: --skip"
                    + " node-redlock$")
            .matcher(text)
            .find(),
        text);
    assertFalse(text.contains("npm ci"), text);
  }

  @Test
  void onLocalMastersTheDefaultRedLockIsMeasuredOverTlsToo() {
    BenchmarkOutput output =
        quickRun("--iterations", "200", "--warmup", "50", "--rounds", "2", "--heal-repeats", "1");
    String text = output.text();

    assertEquals(0, output.code(), text);
    if (text.contains("Starting 5 local redis-server masters, each with a TLS port too")) {
      assertTrue(
          Pattern.compile(
                  "(?m)^  default RedLock over TLS +[\\d,]+ +[\\d,]+ +200 +0 +[\\d,]+ +[\\d,]+ +0$")
              .matcher(text)
              .find(),
          "the TLS row, with no failed operation:\n" + text);
    } else {
      // CI installs openssl; a machine without it says so in the row, and the test is skipped.
      assertTrue(
          Pattern.compile("(?m)^  default RedLock over TLS +skipped: needs openssl on the PATH")
              .matcher(text)
              .find(),
          text);
      Assumptions.abort("no openssl on the PATH: the TLS row was not measured");
    }
  }

  @Test
  void freshMastersNotAdmittedStopTheRunWithTheHint(RedisCluster cluster) {
    BenchmarkOutput output = BenchmarkOutput.run("--nodes", String.join(",", cluster.uris()));

    assertEquals(1, output.code(), output.text());
    assertTrue(output.text().contains("--admit-fresh-nodes"), output.text());
    assertTrue(
        output.text().contains("benchmark failed: the default RedLock cannot acquire"),
        output.text());
  }

  @Test
  void theHealSectionRunsAloneOnItsOwnLocalMastersAndPrintsItsFigures() {
    BenchmarkOutput output = BenchmarkOutput.run("--only", "heal", "--heal-repeats", "2");
    String text = output.text();

    assertEquals(0, output.code(), text);
    assertTrue(text.contains("Starting 5 local redis-server masters"), text);
    assertTrue(text.contains("5. Heal: default RedLock (circuit breakers on"), text);
    assertFalse(text.contains("4. Isolation"), text);
    assertFalse(text.contains("1. Latency"), text);
    for (String round : new String[] {"1/2", "2/2"}) {
      assertTrue(
          Pattern.compile(
                  Pattern.quote(round)
                      + " +hung: \\d+ of 15 tryAcquire threw QuorumUnavailableException")
              .matcher(text)
              .find(),
          round + "\n" + text);
    }
    String figure = "([\\d,]+\\.\\d ms|none within 5 s)";
    Matcher firstLeases =
        Pattern.compile(
                "(?m)^ {8}first lease ([\\d,]+\\.\\d ms after the last master resumed|none within"
                    + " 5 s) \\([\\d,]+ tryAcquire calls\\)$")
            .matcher(text);
    assertEquals(2, firstLeases.results().count(), text);
    assertEquals(
        2,
        Pattern.compile("(?m)^ {8}tryAcquire 1\\.5 s after the heal: \\S.*$")
            .matcher(text)
            .results()
            .count(),
        text);
    assertTrue(
        Pattern.compile(
                "first lease after every master resumed: " + figure + " / " + figure + "\\n")
            .matcher(text)
            .find(),
        text);
    assertTrue(
        Pattern.compile(
                "median "
                    + figure
                    + ", max "
                    + figure
                    + "; goal: every first lease within 100 ms: (met|NOT met) \\(\\d of 2\\)")
            .matcher(text)
            .find(),
        text);
    assertTrue(
        Pattern.compile("tryAcquire 1\\.5 s after the heal: granted in \\d of 2")
            .matcher(text)
            .find(),
        text);
    assertTrue(text.contains("Keys left on the masters"), text);
  }

  /**
   * The isolation section alone on its own 5 local masters, a few cycles per block: every case
   * prints its figures, its hostile master was met (it counted a connection that sent a lock
   * command) and its three goals have a verdict. The verdicts themselves are the lead's to read on
   * a quiet machine, not this test's: here the machine is shared and the transport may be the one
   * that issue 15 is about.
   */
  @Test
  void theIsolationSectionRunsAloneAndHoldsEveryCaseAgainstItsGoals() {
    BenchmarkOutput output =
        BenchmarkOutput.run(
            "--only", "isolation", "--isolation-iterations", "30", "--warmup", "50");
    String text = output.text();

    assertEquals(0, output.code(), text);
    assertTrue(text.contains("Starting 5 local redis-server masters...\n"), text);
    assertTrue(text.contains("(--only isolation)"), text);
    assertTrue(text.contains("4. Isolation: default RedLock (circuit breakers on)"), text);
    assertFalse(text.contains("1. Latency"), text);
    assertFalse(text.contains("Heal"), text);
    assertTrue(
        Pattern.compile("(?m)^  healthy +\\d+ of 30 granted in ").matcher(text).find(), text);
    assertTrue(
        Pattern.compile(
                "(?m)^ +masters admitted explicitly \\(admitFreshNodes\\): \\d now, \\d already"
                    + " trusted( \\(\\d+ calls\\))?$")
            .matcher(text)
            .find(),
        "every master admitted\n" + text);
    String verdict = " += +-?\\d+\\.\\d\\d  (met|NOT met)$";
    for (String mode : List.of("flood", "garbage", "slowloris", "oversize", "reset")) {
      assertTrue(
          Pattern.compile("(?m)^  " + mode + " +\\d+ of \\d+ granted( \\(.*\\))? in ")
              .matcher(text)
              .find(),
          mode + "\n" + text);
      Matcher hostile =
          Pattern.compile(
                  "(?m)^  "
                      + mode
                      + " .*\\n.*\\n +hostile 127\\.0\\.0\\.1:\\d+ \\(pid \\d+\\):\\n"
                      + " +([\\d,]+) connections, ([\\d,]+) met the mode, [\\d,]+ bytes sent")
              .matcher(text);
      assertTrue(hostile.find(), mode + "\n" + text);
      assertTrue(Long.parseLong(hostile.group(2).replace(",", "")) >= 1, hostile.group());
      for (String goal :
          List.of(
              mode + ": all granted +[\\d,]+ / [\\d,]+ tryAcquire",
              mode + ": p99 <= 1\\.5x healthy\\+1ms +[\\d,]+ / [\\d,]+ us",
              mode + ": heap growth <= 16 MiB +[-+]\\d+\\.\\d / 16 MiB")) {
        assertTrue(
            Pattern.compile("(?m)^  " + goal + verdict).matcher(text).find(), goal + "\n" + text);
      }
      assertTrue(
          Pattern.compile(
                  "(?m)^  4 healthy \\+ "
                      + mode
                      + " +[\\d,]+/[\\d,]+( +[\\d,]+){3} +[-+]\\d+\\.\\d"
                      + " +[\\d,]+ +[\\d,]+$")
              .matcher(text)
              .find(),
          mode + " row\n" + text);
    }
    assertTrue(text.contains("p99 allowed: 1.5 x the healthy p99 + 1 ms = "), text);
    assertTrue(text.contains("Keys left on the masters"), text);
  }

  /**
   * With the other sections, on masters given by {@code --nodes}: the isolation section replaces
   * the last of them, comes between the breakers and the summary, and its goals join the goals
   * block.
   */
  @Test
  void theIsolationSectionRunsAfterTheBreakersOnMastersGivenByNodes(RedisCluster cluster) {
    List<String> uris = cluster.uris();
    BenchmarkOutput output =
        BenchmarkOutput.run(
            "--nodes",
            String.join(",", uris),
            "--admit-fresh-nodes",
            "--iterations",
            "20",
            "--warmup",
            "5",
            "--rounds",
            "1",
            "--throughput-seconds",
            "0.3",
            "--blackhole-iterations",
            "20",
            "--isolation-iterations",
            "10",
            "--skip",
            "redisson,node-redlock,handoff,async-load");
    String text = output.text();

    assertEquals(0, output.code(), text);
    assertTrue(text.contains("4. isolation: the last master hostile in turn (flood,"), text);
    int breakers = text.indexOf("3. Circuit breakers: default RedLock");
    int isolation = text.indexOf("4. Isolation: default RedLock");
    int summary = text.indexOf("\nSummary\n");
    assertTrue(0 < breakers && breakers < isolation && isolation < summary, text);
    assertTrue(
        text.contains("with the last master (" + uris.get(uris.size() - 1) + ") replaced"), text);
    int goals = text.indexOf(ISOLATION_GOALS);
    assertTrue(goals > summary, text);
    assertTrue(
        text.startsWith(
            ISOLATION_GOALS
                + "\n  (this run has 3 masters: the verdicts below are for its figures, not the"
                + " goals')\n  flood: all granted ",
            goals),
        text);
    assertTrue(
        Pattern.compile("(?m)^  2 healthy \\+ reset +[\\d,]+/[\\d,]+ ").matcher(text).find(), text);
    assertTrue(text.contains("5. Heal: skipped"), text);
  }

  @Test
  void theHealSectionNeedsLocalMasters(RedisCluster cluster) {
    BenchmarkOutput output =
        BenchmarkOutput.run("--nodes", String.join(",", cluster.uris()), "--only", "heal");

    assertEquals(2, output.code(), output.text());
    assertTrue(output.text().contains("leave out --nodes"), output.text());
  }

  @Test
  void theHandOffSectionRunsAloneAndPrintsItsTablesAndGoals() {
    BenchmarkOutput output =
        BenchmarkOutput.run("--only", "handoff", "--handoff-seconds", "1", "--skip", "redisson");
    String text = output.text();

    assertEquals(0, output.code(), text);
    assertTrue(text.contains("Hand-off section alone (--only handoff)"), text);
    assertTrue(text.contains("Pause 5 ms between holds"), text);
    assertTrue(text.contains("No pause between holds"), text);
    assertTrue(text.contains("RedLock, defaults (wake-ups on)"), text);
    assertTrue(text.contains("RedLock, wakeUps(false)"), text);
    assertFalse(text.contains("Redisson RLock"), text);
    assertTrue(text.matches("(?s).*overlapping holds = 0 \\(no pause\\) +0 +met\n.*"), text);
    // Both floors ran in both tables, held the lock in turn (no overlapping holds, no failure),
    // and their utilization is printed beside the goal's.
    for (String floor : List.of(HandOffRun.FLOOR_TWO_ROUNDS, HandOffRun.FLOOR_ONE_ROUND)) {
      Matcher rows =
          Pattern.compile(
                  "(?m)^" + Pattern.quote(floor) + " .* ([\\d.]+) +\\d+ / \\d+ +(\\d+)(.*)$")
              .matcher(text);
      for (int table = 0; table < 2; table++) {
        assertTrue(rows.find(), floor + " row " + table + " in\n" + text);
        assertTrue(Double.parseDouble(rows.group(1)) > 0, rows.group());
        assertEquals("0", rows.group(2), rows.group());
        assertEquals("", rows.group(3), rows.group());
      }
    }
    assertTrue(
        text.contains("the hand-written floors' utilization (no pause): release, then acquire 0."),
        text);
    assertTrue(text.contains("fewest grants >= 0.6 x most (pause 5 ms)"), text);
    for (String which : List.of("pause 5 ms", "no pause")) {
      assertTrue(text.contains("utilization (" + which + ") >= 0.9 x the two-round floor's"), text);
    }
    assertFalse(text.contains("utilization (no pause) >= 0.8"), "issue 18's withdrawn goal");
    // The row with every pub/sub connection killed every 200 ms (on the benchmark's own masters):
    // in both tables, killing connections, without an overlapping hold or a failure, and its goal.
    Matcher resets =
        Pattern.compile(
                "(?m)^"
                    + Pattern.quote(HandOffRun.PUBSUB_KILLED)
                    + " .* \\d+ / \\d+ +(\\d+)  \\((\\d+) kills of every master's pub/sub,"
                    + " (\\d+) connections\\)$")
            .matcher(text);
    for (int table = 0; table < 2; table++) {
      assertTrue(resets.find(), "the reset row in table " + table + " in\n" + text);
      assertEquals("0", resets.group(1), resets.group());
      assertTrue(Integer.parseInt(resets.group(2)) > 0, resets.group());
      assertTrue(Integer.parseInt(resets.group(3)) > 0, resets.group());
    }
    assertTrue(
        text.matches(
            "(?s).*p99 wait \\(pause 5 ms\\) <= 2 x healthy \\+ 10 ms +[\\d.]+ ms vs [\\d.]+ ms +"
                + "(met|NOT met)\n.*"),
        text);
    assertTrue(
        text.matches("(?s).*overlapping holds = 0, resets \\(pause 5 ms\\) +0 +met\n.*"), text);
    assertFalse(text.contains("could not run"), text);
    assertFalse(text.contains("Heal"), text);
  }

  @Test
  void theBaselineLoadsTheSameReleaseScriptAsTheLibrary() throws Exception {
    String library;
    try (var in = dev.redlock.RedLock.class.getResourceAsStream("internal/transport/release.lua")) {
      library = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertEquals(library, BaselineClient.releaseScript());
  }

  /**
   * A short run, without Redisson, node-redlock and the isolation section, a brief throughput block
   * and a few black-hole cycles, with a generous node timeout (see the first test): {@code args}
   * come first.
   */
  private static BenchmarkOutput quickRun(String... args) {
    return quickRunSkipping("redisson,node-redlock,isolation,handoff,async-load", args);
  }

  private static BenchmarkOutput quickRunSkipping(String skip, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(
        List.of(
            "--throughput-seconds",
            "0.3",
            "--blackhole-iterations",
            "20",
            "--node-timeout",
            "1000",
            "--skip",
            skip));
    return BenchmarkOutput.run(all.toArray(String[]::new));
  }
}
