package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLocks;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A master that loses its script cache ({@code SCRIPT FLUSH}, a restart) costs no step of a lease
 * its vote, and breaks not the rule that no command overtakes an earlier one of the same lease on
 * the same master; a master that cannot load the scripts while a connection opens (busy, loading)
 * gets them by SHA-1 once it can. {@link CommandPipelineTest} has the cases no real master can be
 * made to produce on cue.
 */
class ScriptCacheIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @Test
  void anAcquireRunsNoScriptSoAFlushedCacheCostsItNoVote(RedisCluster cluster) {
    try (RedLock redlock = RedLocks.redlock(cluster, 5)) {
      for (int i = 0; i < 5; i++) {
        cluster.node(i).admin().scriptFlush();
      }
      Lease lease = redlock.tryAcquire("job", RedLocks.TTL).orElseThrow();
      for (int i = 0; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        RedLocks.eventually("the key on master " + i, () -> admin.exists("job"));
      }
      lease.close();
    }
  }

  @Test
  void everyStepOfALeaseSucceedsInTheSameCallThoughEveryMasterLostItsScriptsJustBefore(
      RedisCluster cluster) {
    try (RedLock redlock = RedLocks.redlock(cluster, 5)) {
      flushScripts(cluster);
      Lease lease = redlock.tryAcquire("job", RedLocks.TTL).orElseThrow();
      for (int i = 0; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        RedLocks.eventually("the key on master " + i, () -> admin.exists("job"));
      }

      flushScripts(cluster);
      long token = lease.fencingToken(); // throws unless a majority stored it in this call
      for (int i = 0; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        RedLocks.eventually(
            "the fencing token stored on master " + i,
            () -> String.valueOf(token).equals(admin.get("redlock:fence")));
      }

      flushScripts(cluster);
      assertTrue(lease.extend(Duration.ofSeconds(30)), "extended in the same call");
      for (int i = 0; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        RedLocks.eventually("extended on master " + i, () -> admin.pttl("job") > 20_000);
      }

      flushScripts(cluster);
      lease.release();
      // release returns once a majority answered: the keys are gone there already.
      int released = 0;
      for (int i = 0; i < 5; i++) {
        released += cluster.node(i).admin().exists("job") ? 0 : 1;
      }
      assertTrue(released >= 3, "released on a majority in the same call: " + released);
      for (int i = 0; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        RedLocks.eventually("released on master " + i, () -> !admin.exists("job"));
      }
    }
  }

  @Test
  void aReleaseAfterSucceedsInTheSameCallThoughEveryMasterLostItsScriptsJustBefore(
      RedisCluster cluster) {
    try (RedLock redlock = RedLocks.redlock(cluster, 5)) {
      Lease lease = redlock.tryAcquire("job", Duration.ofSeconds(30)).orElseThrow();
      flushScripts(cluster);
      assertTrue(lease.releaseAfter(Duration.ofSeconds(3)), "shortened by a majority in this call");
      for (int i = 0; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        RedLocks.eventually(
            "shortened on master " + i, () -> admin.pttl("job") > 0 && admin.pttl("job") <= 3000);
      }
    }
  }

  @Test
  void commandsOfOneLeaseSentBackToBackAfterAFlushRunInTheOrderTheyWereSent(RedisCluster cluster)
      throws Exception {
    byte[] key = bytes("job");
    byte[] token = bytes("0123456789abcdef0123456789abcdef");
    try (Clients clients = Clients.open(cluster)) {
      for (int i = 0; i < 5; i++) {
        assertEquals(
            Vote.GRANTED,
            answer(
                clients
                    .get(i)
                    .send(new Command.Acquire(LockKey.of(key), token, 10_000, false, 0))));
      }

      // Extend, extend, shorten: each written before any answer came back.
      flushScripts(cluster);
      List<List<CompletableFuture<NodeReply>>> sent = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        NodeClient client = clients.get(i);
        sent.add(
            List.of(
                client.send(new Command.Extend(LockKey.of(key), token, 60_000)),
                client.send(new Command.Extend(LockKey.of(key), token, 60_000)),
                client.send(new Command.Shorten(LockKey.of(key), token, 2_000))));
      }
      for (int i = 0; i < 5; i++) {
        for (CompletableFuture<NodeReply> reply : sent.get(i)) {
          assertEquals(Vote.GRANTED, answer(reply), "answered on master " + i);
        }
        long pttl = cluster.node(i).admin().pttl("job");
        assertTrue(pttl > 0 && pttl <= 2_000, "shortened last on master " + i + ": " + pttl);
      }

      // Extend, then release: the extend runs first, so it finds the key and the release deletes.
      flushScripts(cluster);
      sent.clear();
      for (int i = 0; i < 5; i++) {
        NodeClient client = clients.get(i);
        sent.add(
            List.of(
                client.send(new Command.Extend(LockKey.of(key), token, 60_000)),
                client.send(Command.release(LockKey.of(key), token))));
      }
      for (int i = 0; i < 5; i++) {
        assertEquals(Vote.GRANTED, answer(sent.get(i).get(0)), "extended on master " + i);
        assertEquals(Vote.GRANTED, answer(sent.get(i).get(1)), "released on master " + i);
        assertFalse(cluster.node(i).admin().exists("job"), "no key left on master " + i);
      }
    }
  }

  @Test
  void aHandshakeThatFindsTheMasterBusyWithAScriptIsTriedAgainAndThenCallsScriptsBySha(
      RedisCluster cluster) throws Exception {
    RedisProcess node = cluster.node(0);
    RedisAdmin admin = node.admin();
    admin.assumeAtLeast(7, "per-subcommand command stats (script|load) and busy-reply-threshold");
    admin.command("CONFIG", "SET", "busy-reply-threshold", "10");
    admin.command("CONFIG", "RESETSTAT");
    CountDownLatch scriptEnded = new CountDownLatch(1);
    Thread busy =
        new Thread(
            () -> {
              try (RedisAdmin other = RedisAdmin.connect(node.host(), node.port())) {
                other.command("EVAL", BUSY_SCRIPT, "0");
              } catch (RuntimeException e) {
                // killed by SCRIPT KILL, as intended
              } finally {
                scriptEnded.countDown();
              }
            },
            "busy-script");
    busy.start();
    try {
      RedLocks.eventually("master 0 answers BUSY", () -> answersBusy(admin));
      try (RedLock redlock = redlock(cluster.uris())) { // its handshakes run now
        admin.command("SCRIPT", "KILL");
        assertTrue(scriptEnded.await(5, TimeUnit.SECONDS), "the busy script ended");
        assertTrue(
            ScriptMasters.stat(admin, "script|load", "rejected_calls") >= LuaScript.ALL.size(),
            "the handshake's SCRIPT LOADs met BUSY: " + admin.command("INFO", "commandstats"));
        assertLaterScriptsGoBySha(redlock, admin);
      }
    } finally {
      try {
        admin.command("SCRIPT", "KILL");
      } catch (RuntimeException e) {
        // NOTBUSY: it ended
      }
      scriptEnded.await(15, TimeUnit.SECONDS);
      admin.command("CONFIG", "SET", "busy-reply-threshold", "5000");
    }
  }

  @Test
  void aHandshakeThatFindsTheMasterLoadingItsDatasetIsTriedAgainAndThenCallsScriptsBySha(
      RedisCluster cluster) throws Exception {
    RedisProcess node = cluster.node(0);
    RedisProcess source = cluster.node(4);
    RedisAdmin admin = node.admin();
    // Master 0 loads 5,000 keys from master 4, 100 us or more each, answering clients meanwhile.
    source
        .admin()
        .command(
            "EVAL",
            "for i = 1, tonumber(ARGV[1]) do redis.call('SET', 'fill:' .. i, 'x') end",
            "0",
            "5000");
    admin.assumeAtLeast(7, "CONFIG SET loading-process-events-interval-bytes");
    admin.command("CONFIG", "SET", "key-load-delay", "100");
    admin.command("CONFIG", "SET", "loading-process-events-interval-bytes", "1024");
    admin.command("CONFIG", "RESETSTAT");
    try {
      admin.command("REPLICAOF", source.host(), Integer.toString(source.port()));
      Poll.until(
          Duration.ofSeconds(10), () -> loading(admin), () -> "master 0 loading its dataset");
      try (RedLock redlock = redlock(cluster.uris())) { // its handshakes run now
        assertTrue(loading(admin), "still loading after the first handshakes");
        assertTrue(
            ScriptMasters.stat(admin, "script|load", "rejected_calls") >= LuaScript.ALL.size(),
            "the handshake's SCRIPT LOADs met LOADING: " + admin.command("INFO", "commandstats"));
        Poll.until(
            Duration.ofSeconds(30),
            () ->
                String.valueOf(admin.command("INFO", "replication"))
                        .contains("master_link_status:up")
                    && !loading(admin),
            () -> "master 0 loaded its dataset");
        admin.command("REPLICAOF", "NO", "ONE");
        assertLaterScriptsGoBySha(redlock, admin);
      }
    } finally {
      admin.command("REPLICAOF", "NO", "ONE");
      admin.command("CONFIG", "SET", "key-load-delay", "0");
      admin.command("CONFIG", "SET", "loading-process-events-interval-bytes", "2097152");
    }
  }

  @Test
  void aMasterWhoseAclRefusesScriptLoadGetsEveryScriptWhole(RedisCluster cluster) {
    RedisProcess node = cluster.node(0);
    RedisAdmin admin = node.admin();
    admin.command("ACL", "SETUSER", "noscripts", "on", ">s3cret", "~*", "+@all", "-script");
    admin.command("CONFIG", "RESETSTAT");
    List<String> uris = new ArrayList<>(cluster.uris());
    uris.set(0, "redis://noscripts:s3cret@" + node.host() + ":" + node.port());
    try (RedLock redlock = RedLocks.redlock(uris)) {
      Lease lease = redlock.tryAcquire("job", RedLocks.TTL).orElseThrow();
      assertTrue(lease.extend(Duration.ofSeconds(30)));
      lease.close();
      RedLocks.eventually("released on master 0", () -> !admin.exists("job"));
      assertTrue(
          ScriptMasters.stat(admin, "eval", "calls") >= 2,
          "the extend and the release went by EVAL");
      assertEquals(0, ScriptMasters.stat(admin, "evalsha", "calls"), "and nothing by EVALSHA");
    } finally {
      admin.command("ACL", "DELUSER", "noscripts");
    }
  }

  @Test
  void scriptFlushesBetweenRoundsLeaveNoLockBehind(RedisCluster cluster) {
    Random random = new Random(42);
    int granted = 0;
    try (RedLock redlock = RedLocks.redlock(cluster, 5)) {
      for (int round = 0; round < 60; round++) {
        if (round % 3 == 0) {
          for (int i = 0; i < 5; i++) {
            if (random.nextBoolean()) {
              cluster.node(i).admin().scriptFlush();
            }
          }
        }
        Optional<Lease> lease;
        try {
          lease = redlock.tryAcquire("job-" + round, RedLocks.TTL);
        } catch (QuorumUnavailableException e) {
          continue; // a majority had just lost its scripts: a failed vote each, reloaded now
        }
        if (lease.isPresent()) {
          granted++;
          lease.get().extend(RedLocks.TTL);
          lease.get().close();
        }
      }
      assertTrue(granted >= 30, "most rounds were granted: " + granted);
      RedLocks.eventually(
          "no lock key is left on any master",
          () -> {
            for (int i = 0; i < 5; i++) {
              if (!RedLocks.userKeys(cluster, i).isEmpty()) {
                return false;
              }
            }
            return true;
          });
    }
  }

  /**
   * Runs on the server until {@code SCRIPT KILL} (read-only, so killable), or for at most 20 s
   * should the test fail to kill it.
   */
  private static final String BUSY_SCRIPT =
      "local t = redis.call('TIME') local s = tonumber(t[1])"
          + " while tonumber(redis.call('TIME')[1]) < s + 20 do end return 1";

  /** A RedLock whose handshakes have time to hear a master's answers, however slow. */
  private static RedLock redlock(List<String> uris) {
    return RedLock.builder().nodes(uris).nodeTimeout(Duration.ofMillis(500)).build();
  }

  private static void flushScripts(RedisCluster cluster) {
    for (int i = 0; i < cluster.nodes().size(); i++) {
      cluster.node(i).admin().scriptFlush();
    }
  }

  /**
   * Once master 0 takes commands again, its connection is opened anew and its scripts go by
   * EVALSHA: they were loaded by the handshake that succeeded.
   */
  private static void assertLaterScriptsGoBySha(RedLock redlock, RedisAdmin admin) {
    Poll.until(
        Duration.ofSeconds(10),
        () -> {
          Status status = redlock.admitFreshNodes().get(0).status();
          return status == Status.GRANTED || status == Status.TAKEN;
        },
        () -> "master 0 answers scripts");
    long byBody = ScriptMasters.stat(admin, "eval", "calls");
    long bySha = ScriptMasters.stat(admin, "evalsha", "calls");
    Lease lease = redlock.tryAcquire("job", RedLocks.TTL).orElseThrow();
    for (int i = 0; i < 3; i++) {
      assertTrue(lease.extend(Duration.ofSeconds(30)));
    }
    lease.close();
    RedLocks.eventually("released on master 0", () -> !admin.exists("job"));
    assertEquals(
        byBody, ScriptMasters.stat(admin, "eval", "calls"), "no script sent whole to master 0");
    assertTrue(
        ScriptMasters.stat(admin, "evalsha", "calls") >= bySha + 4,
        "extends and release by EVALSHA on master 0");
  }

  private static boolean answersBusy(RedisAdmin admin) {
    try {
      admin.command("EXISTS", "anything");
      return false;
    } catch (RuntimeException e) {
      return String.valueOf(e.getMessage()).startsWith("BUSY");
    }
  }

  private static boolean loading(RedisAdmin admin) {
    return String.valueOf(admin.command("INFO", "persistence")).contains("loading:1");
  }

  private static Vote answer(CompletableFuture<NodeReply> reply) throws Exception {
    return reply.get(5, TimeUnit.SECONDS).status();
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** One client per master on the transport under test, as a RedLock makes them; no breakers. */
  private static final class Clients implements AutoCloseable {
    private final SelectorLoop loop;
    private final List<NodeClient> clients = new ArrayList<>();

    private Clients(SelectorLoop loop) {
      this.loop = loop;
    }

    static Clients open(RedisCluster cluster) {
      boolean jedis = dev.redlock.TransportUnderTest.jedis();
      Clients opened = new Clients(jedis ? null : new SelectorLoop());
      long timeout = TimeUnit.SECONDS.toNanos(1);
      for (int i = 0; i < cluster.nodes().size(); i++) {
        NodeAddress address = NodeAddress.parse(cluster.node(i).uri());
        NodeClient client =
            jedis
                ? new PipelinedNodeClient(address, i, timeout, timeout, Ticker.system(), null)
                : new SelectorNodeClient(address, timeout, timeout, Ticker.system(), opened.loop);
        opened.clients.add(client);
        client.awaitFirstConnect(System.nanoTime() + 2 * timeout);
      }
      return opened;
    }

    NodeClient get(int i) {
      return clients.get(i);
    }

    @Override
    public void close() {
      clients.forEach(NodeClient::close);
      if (loop != null) {
        assertTrue(loop.close(TimeUnit.SECONDS.toNanos(5)), "the selector thread stopped");
      }
    }
  }

  static String script(String name) throws IOException {
    try (InputStream in = LuaScript.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
