package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What the drill's "fencing tokens strictly increasing" check can see. A token is never below a
 * granting master's clock in microseconds, and the drill's masters share one host's clock, so on
 * fresh masters the tokens of leases milliseconds apart rise from the clock alone: the check stays
 * green with fence counters that are never read or never stored. Started from counters far above
 * that clock on a majority, as a cluster that has fenced for long may hold them, the drill's own
 * check sees a counter that is not stored (every lease then gets the same token, the seed plus
 * one); a counter that is not read it still cannot see (clock tokens below the seed rise too),
 * which only the counters the masters hold after the run show.
 */
class DrillFencingIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  /**
   * Far above any master's clock (about 1.76e15 µs in 2026, 8e15 in the 23rd century), below 2^53
   * where the fence script's Lua numbers still compare exactly.
   */
  private static final long SEED = 8_000_000_000_000_000L;

  @Test
  void fromCountersAboveTheClockTheTokensRiseFromTheCounters(RedisCluster cluster) {
    for (int i = 0; i < 2; i++) { // a bare majority of the three: every granting majority meets it
      cluster.node(i).admin().set("redlock:fence", Long.toString(SEED));
    }
    DrillPlan config =
        DrillPlan.defaults(cluster.uris())
            .withWorkers(3)
            .withDuration(Duration.ofSeconds(2))
            .withAdmitFreshNodes(true);
    ByteArrayOutputStream report = new ByteArrayOutputStream();
    Result result = Drill.run(config, new PrintStream(report, true, StandardCharsets.UTF_8));
    String text = report.toString(StandardCharsets.UTF_8);

    assertTrue(result.acquisitions() > 10, "enough leases to mean something: " + text);
    assertEquals(result.acquisitions(), result.fencing().leases(), text);
    assertTrue(result.fencing().increasing(), result.fencing().toString());
    assertTrue(result.passed(), text);
    // Every lease stored its token on a majority; the last one's is the highest. Above the seed
    // only if the tokens came from the counters: clock tokens never raise a counter above it.
    int aboveTheSeed = 0;
    for (int i = 0; i < 3; i++) {
      String counter = cluster.node(i).admin().get("redlock:fence");
      if (counter != null && Long.parseLong(counter) > SEED) {
        aboveTheSeed++;
      }
    }
    assertTrue(aboveTheSeed >= 2, "counters above the seed after the drill: " + aboveTheSeed);
  }
}
