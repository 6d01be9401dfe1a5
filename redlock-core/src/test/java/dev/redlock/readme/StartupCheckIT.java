package dev.redlock.readme;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The startup check of docs/troubleshooting.md refuses unadmitted masters, starts on admitted. */
class StartupCheckIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void refusesToStartUntilTheMastersAreAdmittedThenStarts(RedisCluster cluster) {
    IllegalStateException refused =
        assertThrows(
            IllegalStateException.class,
            () -> StartupCheckExample.startOrRefuse(cluster.uris()).close());
    assertTrue(refused.getMessage().contains("admitFreshNodes()"), refused.getMessage());
    try (RedLock operator = RedLock.builder().nodes(cluster.uris()).build()) {
      operator.admitFreshNodes();
    }
    try (RedLock started = StartupCheckExample.startOrRefuse(cluster.uris())) {
      assertTrue(started.tryAcquire("r", Duration.ofSeconds(5)).isPresent());
    }
  }
}
