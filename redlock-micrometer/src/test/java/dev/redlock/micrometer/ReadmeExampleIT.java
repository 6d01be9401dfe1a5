package dev.redlock.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The README's snippet does what the README says, on real masters. */
class ReadmeExampleIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @Test
  void theInstrumentedRedLockTimesItsRounds(RedisCluster cluster) throws Exception {
    try (RedLock redlock = ReadmeExample.instrumented(cluster.uris(), registry)) {
      redlock.admitFreshNodes();
      try (Lease lease =
          redlock.acquire("orders:42", Duration.ofSeconds(10), Duration.ofSeconds(5))) {
        assertTrue(lease.isValid());
        assertEquals(1, registry.get("redlock.leases.held").gauge().value());
      }
    }

    assertEquals(1, registry.get("redlock.acquire").tag("result", "acquired").timer().count());
    assertEquals(1, registry.get("redlock.release").timer().count());
    assertEquals(0, registry.get("redlock.leases.held").gauge().value());
  }

  @Test
  void theOptedInResourceTagIsThePrefix(RedisCluster cluster) throws Exception {
    RedLockMetrics metrics = ReadmeExample.withResourceTags();
    try (RedLock redlock = metrics.build(RedLock.builder().nodes(cluster.uris()))) {
      metrics.bindTo(registry);
      redlock.admitFreshNodes();
      redlock.acquire("orders:42", Duration.ofSeconds(10), Duration.ofSeconds(5)).close();
    }

    assertEquals(
        1,
        registry
            .get("redlock.acquire")
            .tags("cluster", "orders", "resource", "orders", "result", "acquired")
            .timer()
            .count());
  }
}
