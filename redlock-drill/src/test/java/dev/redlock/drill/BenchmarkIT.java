package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
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

/** A very short benchmark against three real redis-server masters, to keep it from rotting. */
class BenchmarkIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void aShortRunPrintsEveryFigureWithNoFailedOperation(RedisCluster cluster) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    String[] args = {
      "--nodes", String.join(",", cluster.uris()),
      "--iterations", "200",
      "--warmup", "50",
      "--rounds", "2",
      "--throughput-seconds", "0.6"
    };
    int code = Benchmark.run(args, new PrintStream(out, true, StandardCharsets.UTF_8));
    String text = out.toString(StandardCharsets.UTF_8);

    assertEquals(0, code, text);
    for (String label :
        new String[] {
          "RedLock tryAcquire ",
          "baseline SET NX PX round",
          "RedLock tryAcquire + close",
          "baseline SET round + EVALSHA round"
        }) {
      Matcher row =
          Pattern.compile(Pattern.quote(label) + "\\s+[\\d,]+\\s+[\\d,]+\\s+200\\s+0\\n")
              .matcher(text);
      assertTrue(row.find(), label + " row missing or with failures:\n" + text);
    }
    assertTrue(text.contains("ratio RedLock / baseline"), text);
    assertTrue(Pattern.compile("8 threads, new key per op .* 0\\n").matcher(text).find(), text);
    assertTrue(Pattern.compile("32 threads, new key per op .* 0\\n").matcher(text).find(), text);
  }

  @Test
  void theBaselineLoadsTheSameReleaseScriptAsTheLibrary() throws Exception {
    String library;
    try (var in = dev.redlock.RedLock.class.getResourceAsStream("release.lua")) {
      library = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertEquals(library, BaselineClient.RELEASE_SCRIPT);
  }
}
