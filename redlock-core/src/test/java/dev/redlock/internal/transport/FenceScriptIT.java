package dev.redlock.internal.transport;

import static dev.redlock.internal.transport.ScriptMasters.OTHER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLocks;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * fence.lua on five real masters, through {@code Lease.fencingToken}: a token is stored only where
 * our key still holds, and the counter never falls. And the token itself is never below the
 * masters' clock in microseconds: on fresh masters, with no counter, the clock is what makes tokens
 * rise from one lease to the next.
 */
class FenceScriptIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final String COUNTER = "redlock:fence";

  /**
   * A later lease's acquire reads the counter on its majority; a token stored on a master where
   * another lease already holds the key would order this lease after that one there. And a token
   * stored where the key is gone would claim an order the lease no longer has.
   */
  @Test
  void aTokenIsStoredOnlyWhereOurKeyStillHolds(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Lease lease = redlock.tryAcquire("fenced", RedLocks.TTL).orElseThrow()) {
      ScriptMasters.takenByAnother(cluster, "fenced", 10_000, 3); // changed hands
      cluster.node(4).admin().command("DEL", "fenced"); // gone
      long[] before = ScriptMasters.scriptCalls(cluster, 3, 4);
      long token = lease.fencingToken();
      ScriptMasters.awaitScripts(cluster, before, 1, 3, 4);
      for (int i = 0; i < 3; i++) {
        assertEquals(Long.toString(token), cluster.node(i).admin().get(COUNTER), "master " + i);
      }
      assertNull(cluster.node(3).admin().get(COUNTER), "stored where another token holds the key");
      assertNull(cluster.node(4).admin().get(COUNTER), "stored where the key is gone");
    }
  }

  /**
   * The counter is one per master, shared by every resource, and compared as decimal digits: a
   * higher one (longer, or as long and greater, leading zeros aside) stays; a lower one (shorter,
   * or as long and smaller) is raised to the token.
   */
  @Test
  void theCounterNeverFalls(RedisCluster cluster) {
    // A token is about 1.8e15 (the clock in µs): 16 digits.
    String longer = "10000000000000000"; // 17 digits
    String asLongAndGreater = "9999999999999999";
    String asLongAndSmaller = "1000000000000000";
    String shorter = "5";
    String zeroPadded = "00000000000000000009"; // 20 digits, but 9

    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Lease lease = redlock.tryAcquire("fenced", RedLocks.TTL).orElseThrow()) {
      // Raised after the acquire read them, as another resource's leases do.
      cluster.node(0).admin().set(COUNTER, longer);
      cluster.node(1).admin().set(COUNTER, asLongAndGreater);
      cluster.node(2).admin().set(COUNTER, asLongAndSmaller);
      cluster.node(3).admin().set(COUNTER, shorter);
      cluster.node(4).admin().set(COUNTER, zeroPadded);
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      String token = Long.toString(lease.fencingToken());
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      assertEquals(16, token.length(), "the token " + token + " has 16 digits");
      assertEquals(longer, cluster.node(0).admin().get(COUNTER), "a longer counter");
      assertEquals(asLongAndGreater, cluster.node(1).admin().get(COUNTER), "a greater counter");
      assertEquals(token, cluster.node(2).admin().get(COUNTER), "a smaller counter is raised");
      assertEquals(token, cluster.node(3).admin().get(COUNTER), "a shorter counter is raised");
      assertEquals(token, cluster.node(4).admin().get(COUNTER), "9, zero-padded, is raised");
      for (int i = 0; i < 5; i++) {
        assertEquals(-1, cluster.node(i).admin().pttl(COUNTER), "master " + i + ": no expiry");
      }
    }
  }

  /**
   * On fresh masters (no counter anywhere, as after a new cluster) the token comes from the
   * masters' clocks: at least every granting master's {@code TIME} in microseconds at the grant,
   * which is at least what it said before the acquire. Every other real-Redis test keeps a seeded
   * counter, so none would see a clock decoded in milliseconds (1000 times smaller).
   */
  @Test
  void onFreshMastersTheTokenIsAtLeastTheMastersClockInMicroseconds(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      for (int round = 0; round < 3; round++) {
        long before = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
          RedisAdmin admin = cluster.node(i).admin();
          admin.command("DEL", COUNTER); // fresh: no counter
          before = Math.min(before, ScriptMasters.timeMicros(admin));
        }
        try (Lease lease = redlock.tryAcquire("clocked", RedLocks.TTL).orElseThrow()) {
          long token = lease.fencingToken();
          assertTrue(
              token >= before,
              "the token " + token + " is below the masters' clock in µs, " + before);
        }
      }
    }
  }

  /**
   * fence.lua's answer says whose the key is: 1 ours (stored, or the counter already higher), 0
   * another token's, -1 gone. The two refusals mean different things to whoever reads a master's
   * outcome: the lock changed hands there, or it expired.
   */
  @Test
  void theFenceAnswersWhoseTheKeyIs(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    String token = ScriptMasters.TOKEN;
    List<String> keys = List.of("fence-codes", COUNTER);
    admin.command("DEL", COUNTER);
    admin.command("SET", "fence-codes", token, "PX", "10000");
    assertEquals(1L, ScriptMasters.eval(admin, "fence.lua", keys, token, "42"), "ours");
    assertEquals("42", admin.get(COUNTER), "stored where ours");
    admin.command("SET", "fence-codes", OTHER, "PX", "10000");
    assertEquals(0L, ScriptMasters.eval(admin, "fence.lua", keys, token, "43"), "another's");
    admin.command("DEL", "fence-codes");
    assertEquals(-1L, ScriptMasters.eval(admin, "fence.lua", keys, token, "44"), "gone");
    assertEquals("42", admin.get(COUNTER), "stored where not ours");
  }
}
