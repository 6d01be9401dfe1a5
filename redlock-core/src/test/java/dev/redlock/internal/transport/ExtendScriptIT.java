package dev.redlock.internal.transport;

import static dev.redlock.internal.transport.ScriptMasters.OTHER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.RedLocks;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * extend.lua on five real masters, through {@code Lease.extend}: it lengthens a key only while it
 * holds our token, never shortens one, never re-creates one, and tells a key that is gone from one
 * another token holds.
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
        // The TTL is in ms: a key lengthened by that many seconds (EXPIRE) would outlive its
        // lease a thousandfold.
        assertTrue(
            left <= TTL.toMillis(), "master " + i + ": lengthened past the TTL: " + left + " ms");
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

  /**
   * An extend tells a key that is gone (expired, deleted) from one that another token holds: each
   * master's outcome in the lost lease's report says which, for whoever reads why it was lost.
   */
  @Test
  void anExtendTellsAKeyThatIsGoneFromAnothers(RedisCluster cluster) {
    AtomicReference<List<NodeOutcome>> lostWith = new AtomicReference<>();
    RedLockListener listener =
        new RedLockListener() {
          @Override
          public void lost(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
            lostWith.set(outcomes);
          }
        };
    try (RedLock redlock =
            RedLocks.admitted(
                RedLock.builder()
                    .nodes(cluster.uris())
                    .nodeTimeout(ScriptMasters.NODE_TIMEOUT)
                    .listener(listener)
                    .build());
        Lease lease = redlock.tryAcquire("extend-lost", TTL).orElseThrow()) {
      cluster.node(0).admin().command("DEL", "extend-lost");
      cluster.node(1).admin().command("DEL", "extend-lost");
      ScriptMasters.takenByAnother(cluster, "extend-lost", 10_000, 2);
      assertFalse(lease.extend(TTL), "extended with a majority gone or another's");
      Poll.until("the loss reported", () -> lostWith.get() != null);
      Map<String, Status> status = new HashMap<>();
      for (NodeOutcome outcome : lostWith.get()) {
        status.put(outcome.node(), outcome.status());
      }
      for (int i = 0; i < 3; i++) {
        RedisProcess node = cluster.node(i);
        assertEquals(
            i < 2 ? Status.GONE : Status.TAKEN,
            status.get(node.host() + ":" + node.port()),
            "master " + i + " in " + lostWith.get());
      }
    }
  }
}
