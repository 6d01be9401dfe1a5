package dev.redlock.internal.transport;

import static dev.redlock.internal.transport.ScriptMasters.OTHER;
import static dev.redlock.internal.transport.ScriptMasters.TOKEN;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
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
 * keyset.lua on five real masters, through the multi-resource lease ({@code tryAcquireAll}): each
 * master holds all of a set's keys or none of them, and the set's release, extend, shorten and
 * fence act only on keys that hold our token (extend and fence only where every key does).
 */
class KeySetScriptIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final List<String> SET = List.of("set-a", "set-b", "set-c");
  private static final String COUNTER = "redlock:fence";

  /**
   * A master where one key of the set is another's sets none of them: a master holding part of a
   * set would be a vote no other set's acquire could count on, and would keep out the single
   * resources it holds.
   */
  @Test
  void aMasterWhereOneKeyIsTakenSetsNoneOfThem(RedisCluster cluster) {
    ScriptMasters.takenByAnother(cluster, "set-b", 10_000, 0, 1);
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1);
      Lease lease = redlock.tryAcquireAll(SET, RedLocks.TTL).orElseThrow();
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1);
      for (int i : new int[] {0, 1}) {
        RedisAdmin admin = cluster.node(i).admin();
        assertNull(admin.get("set-a"), "master " + i + ": set-a set beside another's set-b");
        assertEquals(OTHER, admin.get("set-b"), "master " + i + ": another's set-b");
        assertNull(admin.get("set-c"), "master " + i + ": set-c set beside another's set-b");
      }
      for (int i = 2; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        for (String key : SET) {
          long left = admin.pttl(key);
          assertTrue(left > 0 && left <= RedLocks.TTL.toMillis(), key + "'s PTTL " + left);
        }
        String token = admin.get("set-a");
        assertNotNull(token, "master " + i);
        assertEquals(token, admin.get("set-b"), "master " + i);
        assertEquals(token, admin.get("set-c"), "master " + i);
      }
      lease.release();
    }
  }

  /** As extend.lua: an extend shorter than the time left never cuts a key. */
  @Test
  void anExtendShorterThanTheTimeLeftNeverShortensTheKeys(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Lease lease = redlock.tryAcquireAll(SET, RedLocks.TTL).orElseThrow()) {
      assertTrue(lease.extend(Duration.ofSeconds(1)), "extended (already long enough)");
      for (int i = 0; i < 5; i++) {
        for (String key : SET) {
          long left = cluster.node(i).admin().pttl(key);
          assertTrue(left > 5_000, "master " + i + ": " + key + "'s PTTL was cut to " + left);
        }
      }
    }
  }

  /**
   * Where one key is another's or gone, the extend lengthens none: not the other's key, and not
   * ours beside it (that master no longer holds the set; lengthening the rest would keep resources
   * locked that no valid lease holds there).
   */
  @Test
  void anExtendLengthensNothingOnAMasterWhereOneKeyIsAnothers(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Lease lease = redlock.tryAcquireAll(SET, Duration.ofSeconds(2)).orElseThrow()) {
      ScriptMasters.takenByAnother(cluster, "set-b", 2_000, 3);
      cluster.node(4).admin().command("DEL", "set-a"); // gone: not every key holds ours either
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      assertTrue(lease.extend(RedLocks.TTL), "extended on the other three");
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      for (int i = 0; i < 5; i++) {
        for (String key : SET) {
          long left = cluster.node(i).admin().pttl(key);
          if (i < 3) {
            assertTrue(left > 5_000, "master " + i + ": " + key + " not lengthened: " + left);
          } else {
            assertTrue(left <= 2_000, "master " + i + ": " + key + " lengthened to " + left);
          }
        }
      }
      assertEquals(OTHER, cluster.node(3).admin().get("set-b"));
      assertNull(cluster.node(4).admin().get("set-a"), "re-created");
    }
  }

  /** The set's release deletes our keys and leaves another's. */
  @Test
  void aReleaseLeavesAKeyAnotherTokenHoldsUntouched(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquireAll(SET, RedLocks.TTL).orElseThrow();
      ScriptMasters.takenByAnother(cluster, "set-b", 10_000, 3, 4);
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      lease.release();
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      for (int i = 0; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        assertNull(admin.get("set-a"), "master " + i + ": set-a kept");
        assertEquals(i < 3 ? null : OTHER, admin.get("set-b"), "master " + i + ": set-b");
        assertNull(admin.get("set-c"), "master " + i + ": set-c kept");
      }
    }
  }

  /**
   * As release.lua: the set's release tells the waiters of each resource it deleted, and only from
   * a master where it deleted it (masters 3 and 4 hold one resource for another client).
   */
  @Test
  void aNoticeComesOnlyFromAMasterWhereTheKeyIsGone(RedisCluster cluster) throws Exception {
    try (Notices notices = new Notices(cluster, "set-b");
        RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquireAll(SET, RedLocks.TTL).orElseThrow();
      ScriptMasters.takenByAnother(cluster, "set-b", 10_000, 3, 4);
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      lease.release();
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      List<String> heard = notices.heard();
      assertEquals(List.of("0: gone", "1: gone", "2: gone"), heard.stream().sorted().toList());
    }
  }

  /** As shorten.lua: the set's release after a delay shortens our keys, never lengthens them. */
  @Test
  void releaseAfterShortensOurKeysOnlyAndNeverLengthensThem(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquireAll(SET, Duration.ofSeconds(3)).orElseThrow();
      // Another's, for longer than the delay: a release of ours must not cut it.
      ScriptMasters.takenByAnother(cluster, "set-b", 60_000, 4);
      cluster.node(0).admin().command("PERSIST", "set-c"); // ours, with no expiry
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      assertTrue(lease.releaseAfter(Duration.ofSeconds(30)), "confirmed by a majority");
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      for (int i = 0; i < 5; i++) {
        for (String key : SET) {
          long left = cluster.node(i).admin().pttl(key);
          if (i == 4 && key.equals("set-b")) {
            assertTrue(left > 40_000, "another's set-b shortened to " + left);
          } else if (i == 0 && key.equals("set-c")) {
            assertTrue(left > 0 && left <= 30_000, "our key with no expiry: " + left);
          } else {
            assertTrue(left <= 3_000, "master " + i + ": " + key + " lengthened to " + left);
          }
        }
      }
    }
  }

  /** As fence.lua: the set's token is stored only where every key of the set still holds ours. */
  @Test
  void aTokenIsStoredOnlyWhereEveryKeyStillHolds(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Lease lease = redlock.tryAcquireAll(SET, RedLocks.TTL).orElseThrow()) {
      ScriptMasters.takenByAnother(cluster, "set-c", 10_000, 3); // changed hands
      cluster.node(4).admin().command("DEL", "set-a"); // gone
      // Higher, and kept: a longer counter, and one as long as the token (16 digits) but greater
      // (a counter that fell would let an older token through at the resource).
      cluster.node(2).admin().set(COUNTER, "99999999999999999");
      cluster.node(1).admin().set(COUNTER, "9999999999999999");
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      long token = lease.fencingToken();
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      assertEquals(16, Long.toString(token).length(), "the token " + token + " has 16 digits");
      assertEquals(Long.toString(token), cluster.node(0).admin().get(COUNTER));
      assertEquals(
          "9999999999999999",
          cluster.node(1).admin().get(COUNTER),
          "lowered, as long as the token");
      assertEquals("99999999999999999", cluster.node(2).admin().get(COUNTER), "lowered");
      assertNull(cluster.node(3).admin().get(COUNTER), "stored where one key is another's");
      assertNull(cluster.node(4).admin().get(COUNTER), "stored where one key is gone");
    }
  }

  /**
   * On fresh masters the set's token comes from the clock the script reads: at least the masters'
   * {@code TIME} in microseconds.
   */
  @Test
  void onFreshMastersTheTokenIsAtLeastTheMastersClockInMicroseconds(RedisCluster cluster) {
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      long before = Long.MAX_VALUE;
      for (int i = 0; i < 5; i++) {
        before = Math.min(before, ScriptMasters.timeMicros(cluster.node(i).admin()));
      }
      try (Lease lease = redlock.tryAcquireAll(SET, RedLocks.TTL).orElseThrow()) {
        long token = lease.fencingToken();
        assertTrue(token >= before, "the token " + token + " is below the clock in µs " + before);
        assertNotEquals(0, token);
      }
    }
  }

  /**
   * Keys of their own, for the tests that run keyset.lua directly (no other test listens there).
   */
  private static final List<String> CODES = List.of("codes-a", "codes-b", "codes-c");

  /**
   * The set's release answers as release.lua does: 2 when it deleted a key of ours and some client
   * heard its notice (the SHA-1 of the token, on each deleted key's channel), 1 when it deleted one
   * and no one heard, or quietly ('quiet': the cleanup of a failed acquire tells no one); with none
   * of ours, 0 if another token holds a key, else -1. It deletes only our keys.
   */
  @Test
  void theSetsReleaseAnswersWhatItDidAndWhoHeard(RedisCluster cluster) throws Exception {
    RedisAdmin admin = cluster.node(0).admin();
    holdAll(admin, TOKEN);
    assertEquals(1L, keySet(admin, "release", "0"), "released, no one to hear");
    assertGone(admin, CODES);
    holdAll(admin, TOKEN);
    admin.command("SET", "codes-b", OTHER, "PX", "10000");
    admin.command("DEL", "codes-c");
    assertEquals(1L, keySet(admin, "release", "0"), "ours released beside another's and gone");
    assertNull(admin.get("codes-a"), "ours kept");
    assertEquals(OTHER, admin.get("codes-b"), "another's deleted");
    assertEquals(0L, keySet(admin, "release", "0"), "none ours, one another's");
    assertEquals(OTHER, admin.get("codes-b"), "another's deleted");
    admin.command("DEL", "codes-b");
    assertEquals(-1L, keySet(admin, "release", "0"), "all gone");

    try (Notices notices = new Notices(cluster, "codes-b")) {
      holdAll(admin, TOKEN);
      assertEquals(2L, keySet(admin, "release", "0"), "released, and heard");
      assertGone(admin, CODES);
      holdAll(admin, TOKEN);
      assertEquals(1L, keySet(admin, "release", "0", "quiet"), "a quiet release");
      assertGone(admin, CODES);
      assertEquals(
          List.of("0 redlock:wake:codes-b " + ScriptMasters.sha1hex(TOKEN)),
          notices.messages(),
          "told: the plain release only");
    }
  }

  /**
   * The set's extend and fence act only where every key holds our token, and answer 1 then; 0 where
   * another token holds a key, -1 where none does and one is gone. Its shorten acts on each key of
   * ours and answers 1 if one was; else 0 or -1 likewise. Whoever reads a master's outcome learns
   * from it whether the set changed hands there or expired.
   */
  @Test
  void theSetsExtendShortenAndFenceAnswerWhoseTheKeysAre(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    admin.command("DEL", COUNTER); // lower than any token: "7" is stored where the set is ours
    holdAll(admin, TOKEN);
    assertEquals(1L, keySet(admin, "extend", "10000"), "extend, all ours");
    assertEquals(1L, keySet(admin, "fence", "7"), "fence, all ours");
    assertEquals(1L, keySet(admin, "shorten", "9000"), "shorten, all ours");

    admin.command("SET", "codes-b", OTHER, "PX", "10000"); // a, c ours
    assertEquals(0L, keySet(admin, "extend", "10000"), "extend, one another's");
    assertEquals(0L, keySet(admin, "fence", "8"), "fence, one another's");
    assertEquals(1L, keySet(admin, "shorten", "9000"), "shorten, two ours");

    admin.command("DEL", "codes-b"); // a, c ours, b gone
    assertEquals(-1L, keySet(admin, "extend", "10000"), "extend, one gone");
    assertEquals(-1L, keySet(admin, "fence", "9"), "fence, one gone");
    assertEquals(1L, keySet(admin, "shorten", "9000"), "shorten, two ours");
    assertEquals("7", admin.get(COUNTER), "fenced where not all ours");

    admin.command("DEL", "codes-a");
    admin.command("SET", "codes-c", OTHER, "PX", "10000"); // a, b gone, c another's
    assertEquals(0L, keySet(admin, "extend", "10000"), "extend, one another's, two gone");
    assertEquals(0L, keySet(admin, "fence", "10"), "fence, one another's, two gone");
    assertEquals(0L, keySet(admin, "shorten", "9000"), "shorten, none ours, one another's");

    admin.command("DEL", "codes-c"); // all gone
    assertEquals(-1L, keySet(admin, "extend", "10000"), "extend, all gone");
    assertEquals(-1L, keySet(admin, "fence", "11"), "fence, all gone");
    assertEquals(-1L, keySet(admin, "shorten", "9000"), "shorten, all gone");
    assertGone(admin, CODES);
    assertEquals("7", admin.get(COUNTER), "fenced where not all ours");
  }

  private static void holdAll(RedisAdmin admin, String token) {
    for (String key : CODES) {
      admin.command("SET", key, token, "PX", "10000");
    }
  }

  private static void assertGone(RedisAdmin admin, List<String> keys) {
    for (String key : keys) {
      assertNull(admin.get(key), key + " kept or re-created");
    }
  }

  /** keyset.lua on {@link #CODES}: {@code op}, our token, {@code number}, and {@code more}. */
  private static Object keySet(RedisAdmin admin, String op, String number, String... more) {
    List<String> keys = new java.util.ArrayList<>(CODES);
    if (op.equals("fence")) {
      keys.add(COUNTER);
    }
    String[] args = new String[4 + more.length];
    args[0] = op;
    args[1] = TOKEN;
    args[2] = number;
    args[3] = Integer.toString(CODES.size());
    System.arraycopy(more, 0, args, 4, more.length);
    return ScriptMasters.eval(admin, "keyset.lua", keys, args);
  }
}
