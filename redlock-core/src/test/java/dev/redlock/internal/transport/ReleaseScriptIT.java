package dev.redlock.internal.transport;

import static dev.redlock.internal.transport.ScriptMasters.OTHER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLocks;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * release.lua on five real masters, through {@code Lease.release}: it deletes a key only while it
 * holds our token, and its wake-up notice comes only from a master where it deleted the key, so a
 * waiter woken by it finds the key gone there.
 */
class ReleaseScriptIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  /** A release that deleted another lease's key would free the lock under its holder. */
  @Test
  void aReleaseLeavesAKeyAnotherTokenHoldsUntouched(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquire("released", RedLocks.TTL).orElseThrow();
      ScriptMasters.takenByAnother(cluster, "released", 10_000, 3, 4);
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      lease.release();
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      for (int i = 0; i < 3; i++) {
        assertEquals(null, cluster.node(i).admin().get("released"), "master " + i + ": ours");
      }
      for (int i : new int[] {3, 4}) {
        assertEquals(OTHER, cluster.node(i).admin().get("released"), "master " + i + ": another's");
      }
    }
  }

  /**
   * Every notice on the resource's channel comes from a master where the key is already gone when
   * the subscriber reads it: a woken waiter that finds the key still there would be refused and
   * sleep on its timer. Masters 3 and 4 hold the key for another client, so a notice from either
   * came from a release that deleted nothing.
   */
  @Test
  void aNoticeComesOnlyFromAMasterWhereTheKeyIsGone(RedisCluster cluster) throws Exception {
    try (Notices notices = new Notices(cluster, "noticed");
        RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquire("noticed", RedLocks.TTL).orElseThrow();
      ScriptMasters.takenByAnother(cluster, "noticed", 10_000, 3, 4);
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      lease.release();
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      List<String> heard = notices.heard();
      // Of masters 0 to 2, where it deleted the key, at most one (the master after the resource's
      // gate by name) releases quietly: at least two notices.
      assertTrue(heard.size() >= 2, "two notices at least: " + heard);
      for (String notice : heard) {
        assertTrue(notice.endsWith(": gone"), "a notice from master " + notice + "; all: " + heard);
        assertTrue(
            notice.startsWith("0") || notice.startsWith("1") || notice.startsWith("2"),
            "a notice from a master that deleted nothing: " + heard);
      }
    }
  }
}
