package dev.redlock.internal.transport;

import static dev.redlock.internal.transport.ScriptMasters.OTHER;
import static dev.redlock.internal.transport.ScriptMasters.TOKEN;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLocks;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
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
    // A resource whose gate is one of masters 0 to 2: the release tells the key's waiters there
    // (and, if the gate does not take it, at the master after it), and is quiet elsewhere.
    String resource = "noticed";
    for (int i = 1; ScriptMasters.findGate(cluster, resource) > 2; i++) {
      resource = "noticed-" + i;
    }
    for (int i = 0; i < 5; i++) {
      cluster.node(i).admin().command("DEL", resource); // findGate left it held by another
    }
    try (Notices notices = new Notices(cluster, resource);
        RedLock redlock = ScriptMasters.redlock(cluster)) {
      Lease lease = redlock.tryAcquire(resource, RedLocks.TTL).orElseThrow();
      ScriptMasters.takenByAnother(cluster, resource, 10_000, 3, 4);
      long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
      lease.release();
      ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
      List<String> heard = notices.heard();
      assertTrue(heard.size() >= 1, "the gate's notice at least: " + heard);
      for (String notice : heard) {
        assertTrue(notice.endsWith(": gone"), "a notice from master " + notice + "; all: " + heard);
        assertTrue(
            notice.startsWith("0") || notice.startsWith("1") || notice.startsWith("2"),
            "a notice from a master that deleted nothing: " + heard);
      }
    }
  }

  /**
   * At the resource's gate master the release tells only the first queued waiter, on its client's
   * own channel ({@code redlock:wake:@} and the waiter's first 16 hex digits; the message {@code
   * turn:}, the waiter and the key): one release, one notice there, however many clients wait. If
   * no one hears it there (the client is not subscribed yet, or gone), the turn goes out on the
   * resource's channel, {@code turn:} and the waiter.
   */
  @Test
  void theReleaseAtTheGateTellsTheFirstWaiterOnItsClientsChannel(RedisCluster cluster)
      throws Exception {
    String resource = "turns";
    int gate = ScriptMasters.findGate(cluster, resource);
    for (int i = 0; i < 5; i++) {
      cluster.node(i).admin().command("DEL", resource);
    }
    RedisAdmin admin = cluster.node(gate).admin();
    String client = "aaaaaaaaaaaaaaaa";
    String waiter = client + "bbbbbbbbbbbbbbbb";
    admin.command("ZADD", "redlock:queue:" + resource, "0", waiter);
    admin.command( // stale a minute from now (queue.lua scores a waiter with when it goes stale)
        "ZADD",
        "redlock:queue-seen:" + resource,
        Long.toString(ScriptMasters.timeMicros(admin) + 60_000_000L),
        waiter);
    String clientChannel = "redlock:wake:@" + client;
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      try (Notices notices = new Notices(cluster, resource, clientChannel)) {
        releaseOnEveryMaster(cluster, redlock, resource);
        assertEquals(
            List.of(gate + " " + clientChannel + " turn:" + waiter + resource),
            atGate(notices.messages(), gate),
            "told at the gate");
      }
      try (Notices notices = new Notices(cluster, resource)) { // the client not subscribed
        releaseOnEveryMaster(cluster, redlock, resource);
        assertEquals(
            List.of(gate + " redlock:wake:" + resource + " turn:" + waiter),
            atGate(notices.messages(), gate),
            "told at the gate, with no one on the client's channel");
      }
    }
  }

  /**
   * With no one queued, the release at the gate reads no queue: it asks the queue's {@code PTTL}
   * (an integer) and skips the {@code ZRANGE} (a table built for nothing), the costliest part of
   * the uncontended release there (issue 32: 4.0 against 3.4 microseconds a call). The queue is
   * still read, and its first waiter named, once someone queues.
   */
  @Test
  void anUncontendedReleaseAtTheGateReadsNoQueue(RedisCluster cluster) throws Exception {
    String resource = "uncontended";
    int gate = ScriptMasters.findGate(cluster, resource);
    for (int i = 0; i < 5; i++) {
      cluster.node(i).admin().command("DEL", resource);
    }
    RedisAdmin admin = cluster.node(gate).admin();
    try (RedLock redlock = ScriptMasters.redlock(cluster)) {
      admin.command("CONFIG", "RESETSTAT");
      releaseOnEveryMaster(cluster, redlock, resource);
      assertEquals(
          1L, ScriptMasters.stat(admin, "pttl", "calls"), "the queue's PTTL asked at the gate");
      assertEquals(
          0L, ScriptMasters.stat(admin, "zrange", "calls"), "the queue read with no one in it");
      String waiter = "aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbb";
      admin.command("ZADD", "redlock:queue:" + resource, "0", waiter);
      releaseOnEveryMaster(cluster, redlock, resource);
      assertEquals(
          1L, ScriptMasters.stat(admin, "zrange", "calls"), "the queue read once someone queued");
    }
  }

  /**
   * The release on the master after the gate by name (where the waiters listen too) is quiet, and
   * says whether clients listen there; the waiters are told there only if the gate did not take the
   * release (here: its key was already gone), by a notice after the delete.
   */
  @Test
  void theMasterAfterTheGateTellsTheWaitersOnlyIfTheGateDidNot(RedisCluster cluster)
      throws Exception {
    String resource = "fallback";
    int gate = ScriptMasters.findGate(cluster, resource);
    for (int i = 0; i < 5; i++) {
      cluster.node(i).admin().command("DEL", resource);
    }
    List<Integer> byName = new ArrayList<>(List.of(0, 1, 2, 3, 4));
    byName.sort(Comparator.comparing(i -> cluster.node(i).host() + ":" + cluster.node(i).port()));
    int next = byName.get((byName.indexOf(gate) + 1) % 5);
    String channel = "redlock:wake:" + resource;
    try (RedLock redlock = ScriptMasters.redlock(cluster);
        Notices notices = new Notices(cluster, resource)) {
      // The gate takes the release, and a client hears it there: nothing at the next master.
      releaseOnEveryMaster(cluster, redlock, resource);
      List<String> heard = notices.messages();
      assertEquals(1, at(heard, gate).size(), "told at the gate: " + heard);
      assertEquals(List.of(), at(heard, next), "told at the next master too: " + heard);

      // The gate does not take it (its key was gone): the next master tells the waiters.
      Lease lease = redlock.tryAcquire(resource, RedLocks.TTL).orElseThrow();
      // The grant came from a majority: the gate's SET may still be on its way, and landing after
      // the DEL below, it would take the release (CI failed so once under load).
      RedisAdmin gateAdmin = cluster.node(gate).admin();
      Poll.until(
          Duration.ofSeconds(5),
          () -> gateAdmin.get(resource) != null,
          () -> "the gate set the lease's key");
      gateAdmin.command("DEL", resource);
      long[] before = ScriptMasters.scriptCalls(cluster, next);
      lease.release();
      ScriptMasters.awaitScripts(cluster, before, 2, next); // the release, then the notice
      List<String> later = notices.messages().subList(heard.size(), notices.messages().size());
      assertEquals(1, at(later, next).size(), "told at the next master: " + later);
      assertTrue(at(later, next).get(0).startsWith(next + " " + channel + " "), later.toString());
      assertTrue(notices.heard().contains(next + ": gone"), "the key still there at the notice");
    }
  }

  /**
   * release.lua's answer says what it did and whether a waiter heard: a plain release answers 2
   * when some client heard its notice (the SHA-1 of its token, on the resource's channel), else 1;
   * a 'quiet' one (the cleanup of a failed acquire) and a 'next' one tell no one, and 'next'
   * answers 3 when some client listens there, else 1; a 'notice' deletes nothing and answers as a
   * plain release; a key another token holds is left, 0, and a key that is gone, -1. The library's
   * wake-ups read these: 2 and 3 say a waiter heard, or will need telling.
   */
  @Test
  void theReleaseAnswersWhatItDidAndWhoHeard(RedisCluster cluster) throws Exception {
    RedisAdmin admin = cluster.node(0).admin();
    String alone = "release-alone"; // no one listens
    holdAt(admin, alone, TOKEN);
    assertEquals(1L, release(admin, alone, TOKEN), "released, no one to hear");
    assertNull(admin.get(alone), "not deleted");
    holdAt(admin, alone, TOKEN);
    assertEquals(1L, release(admin, alone, TOKEN, "next"), "'next' with no one listening");
    assertNull(admin.get(alone), "not deleted by 'next'");
    assertEquals(1L, release(admin, alone, TOKEN, "notice"), "a notice no one heard");
    admin.command("SET", alone, OTHER, "PX", "10000");
    assertEquals(0L, release(admin, alone, TOKEN), "another's key");
    assertEquals(OTHER, admin.get(alone), "another's key deleted");
    admin.command("DEL", alone);
    assertEquals(-1L, release(admin, alone, TOKEN), "a key that is gone");

    String heard = "release-heard";
    try (Notices notices = new Notices(cluster, heard)) {
      holdAt(admin, heard, TOKEN);
      assertEquals(2L, release(admin, heard, TOKEN), "released, and heard");
      assertNull(admin.get(heard), "not deleted");
      holdAt(admin, heard, TOKEN);
      assertEquals(1L, release(admin, heard, TOKEN, "quiet"), "a quiet release");
      assertNull(admin.get(heard), "not deleted quietly");
      holdAt(admin, heard, TOKEN);
      assertEquals(3L, release(admin, heard, TOKEN, "next"), "'next' with a client listening");
      assertNull(admin.get(heard), "not deleted by 'next'");
      holdAt(admin, heard, TOKEN);
      assertEquals(2L, release(admin, heard, TOKEN, "notice"), "a notice heard");
      assertEquals(TOKEN, admin.get(heard), "a notice deleted the key");
      String notice = "0 redlock:wake:" + heard + " " + ScriptMasters.sha1hex(TOKEN);
      assertEquals(
          List.of(notice, notice), notices.messages(), "told: the plain release, the notice");
    }
  }

  /**
   * With the resource's queue (at its gate), a plain release tells the first waiter's client on its
   * own channel and no one else, 2; if that client does not hear it, the resource's channel hears
   * {@code turn:} and the waiter, 2; if no one hears, 1. With the queue empty it tells the
   * resource's channel as anywhere else.
   */
  @Test
  void atTheGateTheReleaseAnswersWhetherTheFirstWaiterWasTold(RedisCluster cluster)
      throws Exception {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "gate-codes";
    String queue = "redlock:queue:" + resource;
    String client = "cccccccccccccccc";
    String waiter = client + "dddddddddddddddd";
    String clientChannel = "redlock:wake:@" + client;
    String channel = "redlock:wake:" + resource;
    admin.command("ZADD", queue, "0", waiter);
    admin.command("ZADD", queue, "1", "eeeeeeeeeeeeeeeeffffffffffffffff"); // second in line
    holdAt(admin, resource, TOKEN);
    assertEquals(1L, releaseAtGate(admin, resource, TOKEN), "no one heard");
    assertNull(admin.get(resource), "not deleted");
    try (Notices notices = new Notices(cluster, resource, clientChannel)) {
      holdAt(admin, resource, TOKEN);
      assertEquals(2L, releaseAtGate(admin, resource, TOKEN), "the first waiter's client heard");
      assertEquals(
          List.of("0 " + clientChannel + " turn:" + waiter + resource),
          notices.messages(),
          "told at the gate");
    }
    try (Notices notices = new Notices(cluster, resource)) { // the client not listening
      holdAt(admin, resource, TOKEN);
      assertEquals(2L, releaseAtGate(admin, resource, TOKEN), "a waiter heard");
      assertEquals(
          List.of("0 " + channel + " turn:" + waiter), notices.messages(), "told the waiters");
      admin.command("DEL", queue);
      holdAt(admin, resource, TOKEN);
      assertEquals(2L, releaseAtGate(admin, resource, TOKEN), "a waiter heard, no queue");
      assertEquals(
          List.of(
              "0 " + channel + " turn:" + waiter,
              "0 " + channel + " " + ScriptMasters.sha1hex(TOKEN)),
          notices.messages(),
          "told the waiters with no queue");
    }
  }

  /**
   * The release at the gate names the first waiter not stale by its own window: a waiter ahead of
   * it that went stale (crashed without leaving) is dropped, with its note, and not named, so the
   * turn goes to a waiter that is there to take it instead of waiting for the next ask to sweep.
   */
  @Test
  void atTheGateTheReleaseSkipsAndDropsAStaleFirstWaiter(RedisCluster cluster) throws Exception {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "stale-head";
    String queue = "redlock:queue:" + resource;
    String seen = "redlock:queue-seen:" + resource;
    String ghost = "aaaaaaaaaaaaaaaa0000000000000001";
    String waiter = "bbbbbbbbbbbbbbbb0000000000000002";
    long now = ScriptMasters.timeMicros(admin);
    admin.command("ZADD", queue, "0", ghost, "1", waiter);
    admin.command("ZADD", seen, Long.toString(now - 1_000_000), ghost); // stale a second ago
    admin.command("ZADD", seen, Long.toString(-(now - 5_000_000)), ">" + ghost);
    admin.command("ZADD", seen, Long.toString(now + 60_000_000), waiter); // live
    holdAt(admin, resource, TOKEN);
    String ghostChannel = "redlock:wake:@aaaaaaaaaaaaaaaa";
    String waiterChannel = "redlock:wake:@bbbbbbbbbbbbbbbb";
    try (Notices notices = new Notices(cluster, resource, ghostChannel, waiterChannel)) {
      assertEquals(2L, releaseAtGate(admin, resource, TOKEN), "the live waiter's client heard");
      assertEquals(
          List.of("0 " + waiterChannel + " turn:" + waiter + resource), notices.messages(), "told");
    }
    assertEquals(List.of(waiter), admin.command("ZRANGE", queue, "0", "-1"), "the queue");
    assertEquals(List.of(waiter), admin.command("ZRANGE", seen, "0", "-1"), "the last-asked set");
  }

  private static void holdAt(RedisAdmin admin, String key, String token) {
    admin.command("SET", key, token, "PX", "10000");
  }

  private static Object release(RedisAdmin admin, String key, String token, String... how) {
    String[] args = new String[1 + how.length];
    args[0] = token;
    System.arraycopy(how, 0, args, 1, how.length);
    return ScriptMasters.eval(admin, "release.lua", List.of(key), args);
  }

  private static Object releaseAtGate(RedisAdmin admin, String key, String token) {
    return ScriptMasters.eval(
        admin,
        "release.lua",
        List.of(key, "redlock:queue:" + key, "redlock:queue-seen:" + key),
        token);
  }

  private static List<String> at(List<String> messages, int master) {
    return messages.stream().filter(m -> m.startsWith(master + " ")).toList();
  }

  private static void releaseOnEveryMaster(RedisCluster cluster, RedLock redlock, String resource) {
    Lease lease = redlock.tryAcquire(resource, RedLocks.TTL).orElseThrow();
    long[] before = ScriptMasters.scriptCalls(cluster, 0, 1, 2, 3, 4);
    lease.release();
    ScriptMasters.awaitScripts(cluster, before, 1, 0, 1, 2, 3, 4);
  }

  private static List<String> atGate(List<String> messages, int gate) {
    return messages.stream().filter(m -> m.startsWith(gate + " ")).toList();
  }
}
