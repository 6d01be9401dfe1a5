package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A very short benchmark against three real redis-server masters (the black hole replaces the
 * third), to keep it from rotting. The extension flushes the masters before each test, so they are
 * brand new and must be admitted.
 */
class BenchmarkIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void aShortRunPrintsEveryFigureWithNoFailedOperationAndLogsNothingAtWarn(RedisCluster cluster) {
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
      "200"
    };
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    PrintStream originalErr = System.err;
    System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
    Output output;
    try {
      output = run(args);
    } finally {
      System.setErr(originalErr);
    }
    String text = output.text;

    assertEquals(0, output.code, text);
    for (String label :
        new String[] {
          "plain RedLock tryAcquire ",
          "baseline SET NX PX round",
          "default RedLock tryAcquire ",
          "plain RedLock tryAcquire + close",
          "baseline SET round + EVALSHA round",
          "default RedLock tryAcquire + close"
        }) {
      Matcher row =
          Pattern.compile(Pattern.quote(label) + "\\s+[\\d,]+\\s+[\\d,]+\\s+200\\s+0\\n")
              .matcher(text);
      assertTrue(row.find(), label + " row missing or with failures:\n" + text);
    }
    assertTrue(text.contains("ratio plain / baseline"), text);
    assertTrue(text.contains("goal p50 <= 1.15"), text);
    assertTrue(text.contains("fencing cost: default / plain"), text);
    assertTrue(text.contains("masters admitted explicitly (admitFreshNodes): 3 now"), text);
    for (String client : new String[] {"default RedLock", "plain RedLock"}) {
      for (String threads : new String[] {" 8 threads", "32 threads"}) {
        assertTrue(
            Pattern.compile(client + ", " + threads + ", own keys .* 0\\n").matcher(text).find(),
            client + threads + "\n" + text);
      }
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
    String logged = log.toString(StandardCharsets.UTF_8);
    assertFalse(logged.contains("WARN") || logged.contains("ERROR"), logged);
  }

  @Test
  void freshMastersNotAdmittedStopTheRunWithTheHint(RedisCluster cluster) {
    Output output = run(new String[] {"--nodes", String.join(",", cluster.uris())});

    assertEquals(1, output.code, output.text);
    assertTrue(output.text.contains("--admit-fresh-nodes"), output.text);
    assertTrue(
        output.text.contains("benchmark failed: the default RedLock cannot acquire"), output.text);
  }

  @Test
  void theHealSectionRunsAloneOnItsOwnLocalMastersAndPrintsItsFigures() {
    Output output = run(new String[] {"--only", "heal", "--heal-repeats", "2"});
    String text = output.text;

    assertEquals(0, output.code, text);
    assertTrue(text.contains("Starting 5 local redis-server masters"), text);
    assertTrue(text.contains("4. Heal: default RedLock (circuit breakers on"), text);
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

  @Test
  void theHealSectionNeedsLocalMasters(RedisCluster cluster) {
    Output output =
        run(new String[] {"--nodes", String.join(",", cluster.uris()), "--only", "heal"});

    assertEquals(2, output.code, output.text);
    assertTrue(output.text.contains("leave out --nodes"), output.text);
  }

  @Test
  void theBaselineLoadsTheSameReleaseScriptAsTheLibrary() throws Exception {
    String library;
    try (var in = dev.redlock.RedLock.class.getResourceAsStream("release.lua")) {
      library = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertEquals(library, BaselineClient.releaseScript());
  }

  private static Output run(String[] args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int code = Benchmark.run(args, new PrintStream(out, true, StandardCharsets.UTF_8));
    return new Output(code, out.toString(StandardCharsets.UTF_8));
  }

  private record Output(int code, String text) {}
}
