package dev.redlock.internal.transport;

import static dev.redlock.internal.transport.ScriptMasters.OTHER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * extend.lua on five real masters, through {@code Lease.extend}: it lengthens a key only while it
 * holds our token, and never shortens one.
 */
class ExtendScriptIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final Duration TTL = Duration.ofSeconds(10);

  /**
   * The client's deadline never moves back, so a key cut to less than the lease's time left would
   * expire while the client still trusts its lease: another client could take it in that gap.
   */
  @Test
  void anExtendShorterThanTheTimeLeftNeverShortensTheKeys(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Lease lease = redlock.tryAcquire("extend-short", TTL).orElseThrow()) {
      assertTrue(lease.extend(Duration.ofSeconds(1)), "extended (already long enough)");
      for (int i = 0; i < 5; i++) {
        long left = cluster.node(i).admin().pttl("extend-short");
        // Every master the round heard from ran the script; the late ones leave the key at 10 s.
        assertTrue(left > 5_000, "master " + i + ": the key's PTTL was cut to " + left + " ms");
      }
    }
  }

  @Test
  void anExtendLengthensTheKeysItHolds(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Lease lease = redlock.tryAcquire("extend-long", Duration.ofSeconds(2)).orElseThrow()) {
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      assertTrue(lease.extend(TTL), "extended");
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      for (int i = 0; i < 5; i++) {
        long left = cluster.node(i).admin().pttl("extend-long");
        assertTrue(left > 5_000, "master " + i + ": the key was not lengthened: " + left + " ms");
      }
    }
  }

  /** A key another lease holds is that lease's: lengthening it would keep it past its holder. */
  @Test
  void anExtendLeavesAKeyAnotherTokenHoldsUntouched(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Lease lease = redlock.tryAcquire("extend-other", Duration.ofSeconds(2)).orElseThrow()) {
      ScriptMasters.takenByAnother(cluster, "extend-other", 2_000, 3, 4);
      long[] before = ScriptMasters.scriptCalls(cluster, 3, 4);
      assertTrue(lease.extend(TTL), "extended on the other three");
      ScriptMasters.awaitScripts(cluster, before, 1, 3, 4);
      for (int i : new int[] {3, 4}) {
        RedisAdmin admin = cluster.node(i).admin();
        assertEquals(OTHER, admin.get("extend-other"), "master " + i + ": the other's key");
        long left = admin.pttl("extend-other");
        assertTrue(left <= 2_000, "master " + i + ": the other's key was lengthened: " + left);
      }
    }
  }

  /** A key that is gone is never re-created: it may be another client's turn there. */
  @Test
  void anExtendNeverRecreatesAKeyThatIsGone(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Lease lease = redlock.tryAcquire("extend-gone", Duration.ofSeconds(2)).orElseThrow()) {
      cluster.node(3).admin().command("DEL", "extend-gone");
      cluster.node(4).admin().command("DEL", "extend-gone");
      long[] before = ScriptMasters.scriptCalls(cluster, 3, 4);
      assertTrue(lease.extend(TTL), "extended on the other three");
      ScriptMasters.awaitScripts(cluster, before, 1, 3, 4);
      for (int i : new int[] {3, 4}) {
        assertEquals(null, cluster.node(i).admin().get("extend-gone"), "master " + i);
      }
    }
  }
}
