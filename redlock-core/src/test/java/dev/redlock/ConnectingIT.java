package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Opening connections is bounded by the connect timeout, not by the node timeout: a master whose
 * first handshake is slow is waited for by the build and by the admission, never skipped.
 */
class ConnectingIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  /** The spec's kind of node timeout, far shorter than a slow first handshake. */
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(50);

  private final ScheduledExecutorService faults = Executors.newSingleThreadScheduledExecutor();

  @AfterEach
  void stopFaults() {
    faults.shutdownNow();
  }

  @Test
  void aMasterWhoseFirstHandshakeOutlastsTheNodeTimeoutIsStillAdmitted(RedisCluster cluster) {
    // Master 0 hangs while the RedLock connects, and answers again after 300 ms: six node
    // timeouts, well inside the connect timeout.
    cluster.node(0).pause();
    faults.schedule(() -> cluster.node(0).resume(), 300, TimeUnit.MILLISECONDS);
    try (RedLock redlock =
        RedLock.builder().nodes(cluster.uris()).nodeTimeout(NODE_TIMEOUT).build()) {
      List<NodeOutcome> admitted = redlock.admitFreshNodes();
      for (NodeOutcome outcome : admitted) {
        assertEquals(Status.GRANTED, outcome.status(), admitted::toString);
      }
      Lease lease = redlock.tryAcquire("r", Duration.ofSeconds(5)).orElseThrow();
      lease.close();
    }
  }

  @Test
  void admissionReportsTheMasterItCouldNotReachAndAdmitsTheOthers(RedisCluster cluster) {
    cluster.node(4).kill();
    try (RedLock redlock =
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(NODE_TIMEOUT)
            .connectTimeout(Duration.ofMillis(500))
            .build()) {
      List<NodeOutcome> admitted = redlock.admitFreshNodes();
      for (int i = 0; i < 4; i++) {
        assertEquals(Status.GRANTED, admitted.get(i).status(), admitted::toString);
      }
      assertEquals(Status.FAILED, admitted.get(4).status(), admitted::toString);
      assertTrue(admitted.get(4).detail().contains("onnect"), admitted.get(4).detail());
    }
  }
}
