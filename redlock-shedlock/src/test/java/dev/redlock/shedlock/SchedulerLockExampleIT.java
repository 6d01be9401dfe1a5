package dev.redlock.shedlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.shedlock.SchedulerLockExample.DailyReport;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.core.env.MapPropertySource;

/** The README's Spring example, as written, on 3 real masters. */
class SchedulerLockExampleIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void theExampleJobRunsUnderAQuorumLockKeptForLockAtLeastFor(RedisCluster cluster) {
    RedLock redLock;
    try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext()) {
      context
          .getEnvironment()
          .getPropertySources()
          .addFirst(
              new MapPropertySource(
                  "test",
                  Map.of(
                      "redlock.nodes",
                      String.join(",", cluster.uris()),
                      // as redlock-core's ITs: the 50 ms default is tight on a loaded test machine
                      "redlock.node-timeout-ms",
                      "200")));
      context.register(SchedulerLockExample.class);
      context.refresh();
      redLock = context.getBean(RedLock.class);
      redLock.admitFreshNodes(); // a brand-new cluster
      DailyReport report = context.getBean(DailyReport.class);

      report.run(); // through ShedLock's proxy, as the scheduler calls it

      assertEquals(1, report.runs());
      for (int i = 0; i < 3; i++) {
        long pttl = cluster.node(i).admin().pttl("shedlock:daily-report");
        assertTrue(pttl > 50_000 && pttl <= 60_000, "kept for lockAtLeastFor on master " + i);
      }
      report.run(); // within lockAtLeastFor: skipped
      assertEquals(1, report.runs());
    }
    // The context closed the RedLock it created.
    assertThrows(
        IllegalStateException.class, () -> redLock.tryAcquire("after", Duration.ofSeconds(1)));
  }
}
