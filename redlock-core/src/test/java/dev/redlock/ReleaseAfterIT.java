package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link Lease#releaseAfter}: a quorum "shorten if still ours" that never lengthens a key. */
class ReleaseAfterIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void shortensEveryMastersExpiryAndEndsTheHandleAtOnce(RedisCluster cluster) {
    try (RedLock redlock = RedLocks.redlock(cluster, 3)) {
      Lease lease = redlock.tryAcquire("job", Duration.ofSeconds(10)).orElseThrow();
      assertEquals(1, redlock.leasesHeld());
      assertTrue(lease.releaseAfter(Duration.ofMillis(500)));
      assertFalse(lease.isValid());
      assertFalse(lease.extend(Duration.ofSeconds(10)), "a released handle is never extended");
      assertEquals(0, redlock.leasesHeld());
      for (int i = 0; i < 3; i++) {
        long left = cluster.node(i).admin().pttl("job");
        assertTrue(left > 0 && left <= 500, "master " + i + " keeps it for " + left + " ms");
      }
      assertTrue(redlock.tryAcquire("job", Duration.ofSeconds(10)).isEmpty(), "kept meanwhile");
      RedLocks.eventually("expired after the delay", () -> keysGone(cluster));
      redlock.tryAcquire("job", Duration.ofSeconds(10)).orElseThrow().close();
    }
  }

  @Test
  void neverLengthensAKey(RedisCluster cluster) {
    try (RedLock redlock = RedLocks.redlock(cluster, 3)) {
      Lease lease = redlock.tryAcquire("job", Duration.ofSeconds(1)).orElseThrow();
      assertTrue(lease.releaseAfter(Duration.ofSeconds(30)), "already expiring sooner");
      for (int i = 0; i < 3; i++) {
        assertTrue(cluster.node(i).admin().pttl("job") <= 1000);
      }
    }
  }

  @Test
  void neverRecreatesAnExpiredKeyNorTouchesAnotherClients(RedisCluster cluster) {
    try (RedLock redlock = RedLocks.redlock(cluster, 3)) {
      Lease expired = redlock.tryAcquire("gone", Duration.ofMillis(300)).orElseThrow();
      RedLocks.eventually("expired everywhere", () -> RedLocks.keysGone(cluster, "gone", 0, 1, 2));
      assertFalse(expired.releaseAfter(Duration.ofSeconds(5)));
      assertTrue(RedLocks.keysGone(cluster, "gone", 0, 1, 2), "not re-created");

      Lease replaced = redlock.tryAcquire("job", Duration.ofSeconds(10)).orElseThrow();
      for (int i = 0; i < 3; i++) {
        cluster.node(i).admin().command("SET", "job", "another-client", "PX", "10000");
      }
      assertFalse(replaced.releaseAfter(Duration.ofMillis(100)));
      for (int i = 0; i < 3; i++) {
        assertTrue(cluster.node(i).admin().pttl("job") > 5000, "the other client's key is intact");
      }
    }
  }

  private static boolean keysGone(RedisCluster cluster) {
    return RedLocks.keysGone(cluster, "job", 0, 1, 2);
  }
}
