package dev.redlock.internal.transport;

import static dev.redlock.internal.transport.ScriptMasters.OTHER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLocks;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * shorten.lua on five real masters, through {@code Lease.releaseAfter}: a release that takes effect
 * later shortens a key only while it holds our token, never lengthens it, and never re-creates it.
 */
class ShortenScriptIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @Test
  void releaseAfterShortensTheKeysToTheDelay(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquire("later", RedLocks.TTL).orElseThrow();
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      assertTrue(lease.releaseAfter(Duration.ofSeconds(2)), "confirmed by a majority");
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      for (int i = 0; i < 5; i++) {
        long left = cluster.node(i).admin().pttl("later");
        assertTrue(left > 0 && left <= 2_000, "master " + i + ": the key's PTTL is " + left);
      }
    }
  }

  /**
   * "Keep it at least until" is not "keep it until": a lease whose keys expire sooner than the
   * delay must not outlive its TTL, which is all its holder was granted (and all that a later
   * client's wait was told).
   */
  @Test
  void releaseAfterNeverLengthensAKey(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquire("later", Duration.ofSeconds(3)).orElseThrow();
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      assertTrue(lease.releaseAfter(Duration.ofSeconds(30)), "confirmed by a majority");
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      for (int i = 0; i < 5; i++) {
        long left = cluster.node(i).admin().pttl("later");
        assertTrue(left <= 3_000, "master " + i + ": the key was lengthened to " + left + " ms");
      }
    }
  }

  /** A key of ours with no expiry at all (a PERSIST by hand) is given the delay too. */
  @Test
  void releaseAfterGivesAKeyWithNoExpiryTheDelay(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquire("later", RedLocks.TTL).orElseThrow();
      cluster.node(0).admin().command("PERSIST", "later");
      long[] before = ScriptMasters.scriptCalls(cluster, 0);
      assertTrue(lease.releaseAfter(Duration.ofSeconds(2)), "confirmed by a majority");
      ScriptMasters.awaitScripts(cluster, before, 1, 0);
      long left = cluster.node(0).admin().pttl("later");
      assertTrue(left > 0 && left <= 2_000, "the persisted key's PTTL is " + left);
    }
  }

  /** Another lease's key is that lease's: shortening it would end the lock under its holder. */
  @Test
  void releaseAfterLeavesAKeyAnotherTokenHoldsUntouched(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquire("later", RedLocks.TTL).orElseThrow();
      ScriptMasters.takenByAnother(cluster, "later", 10_000, 3, 4);
      cluster.node(2).admin().command("DEL", "later");
      long[] before = ScriptMasters.scriptCalls(cluster, 2, 3, 4);
      lease.releaseAfter(Duration.ofMillis(500));
      ScriptMasters.awaitScripts(cluster, before, 1, 2, 3, 4);
      for (int i : new int[] {3, 4}) {
        RedisAdmin admin = cluster.node(i).admin();
        assertEquals(OTHER, admin.get("later"), "master " + i + ": another's key");
        long left = admin.pttl("later");
        assertTrue(left > 5_000, "master " + i + ": another's key was shortened to " + left);
      }
      assertEquals(null, cluster.node(2).admin().get("later"), "a key that was gone re-created");
    }
  }

  /**
   * shorten.lua's answer says whose the key is: 1 ours (shortened, or already expiring sooner), 0
   * another token's, -1 gone: the lock changed hands there, or it expired.
   */
  @Test
  void theShortenAnswersWhoseTheKeyIs(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    String token = ScriptMasters.TOKEN;
    List<String> key = List.of("shorten-codes");
    admin.command("SET", "shorten-codes", token, "PX", "10000");
    assertEquals(1L, ScriptMasters.eval(admin, "shorten.lua", key, token, "2000"), "ours");
    admin.command("SET", "shorten-codes", OTHER, "PX", "10000");
    assertEquals(0L, ScriptMasters.eval(admin, "shorten.lua", key, token, "2000"), "another's");
    admin.command("DEL", "shorten-codes");
    assertEquals(-1L, ScriptMasters.eval(admin, "shorten.lua", key, token, "2000"), "gone");
    assertEquals(null, admin.get("shorten-codes"), "re-created");
  }
}
