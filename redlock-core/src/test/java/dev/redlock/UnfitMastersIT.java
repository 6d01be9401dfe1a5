package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Masters unfit for Redlock (a replica listed as a master, an evicting {@code maxmemory} policy) on
 * real redis-server: named at WARN once per episode whatever the settings, kept from voting by
 * default and by every path (a waiter's round in turn at its gate too), and counted apart in the
 * quorum arithmetic of the errors and the inspection. The log is slf4j-simple's, on System.err.
 */
class UnfitMastersIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final Duration TTL = Duration.ofSeconds(10);

  @RegisterExtension final CapturedLog captured = new CapturedLog();

  @AfterEach
  void restoreTheLog(RedisCluster cluster) {
    for (RedisProcess node : cluster.nodes()) {
      fit(node);
    }
  }

  private String log() {
    return captured.text();
  }

  private static int count(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }

  private static String name(RedisProcess node) {
    return node.host() + ":" + node.port();
  }

  /** {@code maxmemory 64mb} with {@code allkeys-lru}: it may evict lock keys. */
  private static void evicting(RedisProcess node) {
    node.admin().command("CONFIG", "SET", "maxmemory", "64mb");
    node.admin().command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
  }

  private static void fit(RedisProcess node) {
    node.admin().command("CONFIG", "SET", "maxmemory", "0");
    node.admin().command("CONFIG", "SET", "maxmemory-policy", "noeviction");
  }

  /**
   * A new server that replicates {@code master}: a replica from the command on, whether or not its
   * first sync (delayed 5 s by a diskless master) is done.
   */
  private static RedisProcess replicaOf(RedisProcess master) {
    RedisProcess replica = RedisProcess.start();
    replica.admin().command("REPLICAOF", master.host(), Integer.toString(master.port()));
    assertTrue(
        String.valueOf(replica.admin().command("INFO", "replication")).contains("role:slave"));
    return replica;
  }

  @Test
  void anEvictingMasterDoesNotVoteByDefault(RedisCluster cluster) {
    RedisProcess evicting = cluster.node(2);
    evicting(evicting);
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder().nodes(cluster.uris()).nodeTimeout(RedLocks.NODE_TIMEOUT).build())) {
      try (Lease lease = redlock.tryAcquire("job", TTL).orElseThrow()) {
        assertTrue(cluster.node(0).admin().exists("job"));
        assertTrue(cluster.node(1).admin().exists("job"));
        assertFalse(evicting.admin().exists("job"), "the evicting master was asked to vote");
      }
    }
  }

  /**
   * A replica and an evicting master, beside three fit masters, are named at WARN once however many
   * rounds and re-checks meet them; the evicting master corrected, then made unfit again, is a
   * second episode: a second WARN.
   */
  @ParameterizedTest(name = "excludeUnfitMasters({0})")
  @ValueSource(booleans = {false, true})
  void unfitMastersAreWarnedOncePerEpisodeWhateverTheSetting(
      boolean exclude, RedisCluster cluster) {
    RedisProcess evicting = RedisProcess.start();
    evicting(evicting);
    try (RedisProcess replica = replicaOf(cluster.node(0));
        evicting;
        RedLock redlock =
            RedLocks.admitted(
                RedLock.builder()
                    .nodes(cluster.uris())
                    .node(replica.uri())
                    .node(evicting.uri())
                    .nodeTimeout(RedLocks.NODE_TIMEOUT)
                    .excludeUnfitMasters(exclude)
                    .preflightInterval(Duration.ofMillis(20))
                    .build())) {
      String replicaWarned = "WARN .*master " + Pattern.quote(name(replica)) + ".*a replica of";
      String evictingWarned =
          "WARN .*master " + Pattern.quote(name(evicting)) + ".*maxmemory-policy allkeys-lru";
      // Rounds until each unfit master has been checked again at least 3 times.
      long configs = configGets(evicting);
      Poll.until(
          Duration.ofSeconds(10),
          () -> {
            redlock.tryAcquire("job", TTL).orElseThrow().close();
            return configGets(evicting) >= configs + 3 * 4;
          },
          () -> "the evicting master checked again 3 times");
      Poll.until("both are warned", () -> count(log(), evictingWarned) >= 1);
      Poll.until("both are warned", () -> count(log(), replicaWarned) >= 1);
      assertEquals(1, count(log(), evictingWarned), log());
      assertEquals(1, count(log(), replicaWarned), log());
      assertTrue(
          log().contains(exclude ? "it does not vote" : "it still votes"),
          "says whether it votes: " + log());

      // Corrected: the episode ends (INFO); unfit again: a new episode, a second WARN.
      fit(evicting);
      Poll.until(
          Duration.ofSeconds(10),
          () -> {
            redlock.tryAcquire("job", TTL).orElseThrow().close();
            return log().contains("master " + name(evicting) + " is fit for Redlock again");
          },
          () -> "the correction logged: " + log());
      evicting(evicting);
      Poll.until(
          Duration.ofSeconds(10),
          () -> {
            redlock.tryAcquire("job", TTL).orElseThrow().close();
            return count(log(), evictingWarned) >= 2;
          },
          () -> "the second episode warned: " + log());
      assertEquals(1, count(log(), replicaWarned), log());
    }
  }

  /** How many {@code CONFIG} commands the master has run: 4 per preflight. */
  private static long configGets(RedisProcess node) {
    String stats = String.valueOf(node.admin().command("INFO", "commandstats"));
    // Redis 7 counts CONFIG GET apart; Redis 6.2 counts every CONFIG call as one command.
    Matcher calls = Pattern.compile("cmdstat_config(?:\\|get)?:calls=(\\d+)").matcher(stats);
    return calls.find() ? Long.parseLong(calls.group(1)) : 0;
  }

  /**
   * A waiter queued at its resource's gate; the gate then becomes unfit (and the waiter's client
   * sees it), and a second master is unfit from the start: when the release names the waiter, its
   * round asks every master at once, probing the two it may not count, the gate in turn. Only one
   * fit master grants: no lease, where a gate that voted through its in-turn acquire would make
   * two.
   */
  @Test
  void anUnfitGateNeverVotesInAWaitersRoundInTurn(RedisCluster cluster) throws Exception {
    String resource = "turn";
    try (RedLock holder =
            RedLocks.admitted(
                RedLock.builder()
                    .nodes(cluster.uris())
                    .nodeTimeout(RedLocks.NODE_TIMEOUT)
                    .excludeUnfitMasters(true)
                    .build());
        Lease held = holder.tryAcquire(resource, TTL).orElseThrow()) {
      // Which master is the gate shows once a waiter queues there; the third master by elimination.
      RedisProcess gate;
      RedisProcess other;
      try (RedLock probe =
          RedLock.builder().nodes(cluster.uris()).nodeTimeout(RedLocks.NODE_TIMEOUT).build()) {
        CompletableFuture<Lease> queued = probe.acquireAsync(resource, TTL, Duration.ofSeconds(5));
        gate = gateOf(cluster, resource);
        queued.cancel(true);
      }
      Poll.until("the probe left the queue", () -> queued(gate, resource) == 0);
      List<RedisProcess> others = cluster.nodes().stream().filter(n -> n != gate).toList();
      other = others.get(1);
      evicting(other); // unfit from the start: the waiter's client never counts it
      try (RedLock waiter =
          RedLock.builder()
              .nodes(cluster.uris())
              .nodeTimeout(RedLocks.NODE_TIMEOUT)
              .retryDelay(Duration.ofSeconds(2)) // queued for 4 s after its last round
              .excludeUnfitMasters(true)
              .preflightInterval(Duration.ofMillis(1))
              .build()) {
        CompletableFuture<Lease> waiting =
            waiter.acquireAsync(resource, TTL, Duration.ofSeconds(8));
        Poll.until("the waiter is queued at the gate", () -> queued(gate, resource) == 1);
        evicting(gate);
        // Its next round (1 to 3 s on) asks the gate in turn, keeping its place, and re-checks it.
        Poll.until(
            Duration.ofSeconds(10),
            () -> count(log(), "WARN .*master " + Pattern.quote(name(gate)) + ".*maxmemory") >= 1,
            () -> "the waiter's client saw the gate unfit: " + log());
        held.close(); // names the waiter at the gate: its next round asks every master at once
        ExecutionException refused =
            assertThrows(
                ExecutionException.class, () -> waiting.get(20, TimeUnit.SECONDS), this::log);
        assertInstanceOf(QuorumUnavailableException.class, refused.getCause(), log());
        assertFalse(gate.admin().exists(resource), "the unfit gate voted");
      }
    }
  }

  /** The master where a waiter on {@code resource} is queued, once one is. */
  private static RedisProcess gateOf(RedisCluster cluster, String resource) {
    RedisProcess[] found = new RedisProcess[1];
    Poll.until(
        "a waiter queued at the gate",
        () -> {
          for (RedisProcess node : cluster.nodes()) {
            if (queued(node, resource) > 0) {
              found[0] = node;
              return true;
            }
          }
          return false;
        });
    return found[0];
  }

  private static long queued(RedisProcess node, String resource) {
    return (Long) node.admin().command("ZCARD", "redlock:queue:" + resource);
  }

  @Test
  void theErrorSaysHowManyMastersVoteAndNamesTheExcludedOnesWithTheRemedy(RedisCluster cluster) {
    RedisProcess evicting = cluster.node(2);
    evicting(evicting);
    try (RedisProcess replica = replicaOf(cluster.node(0));
        RedLock redlock =
            RedLocks.admitted(
                RedLock.builder()
                    .node(cluster.uris().get(0))
                    .node(replica.uri())
                    .node(evicting.uri())
                    .nodeTimeout(RedLocks.NODE_TIMEOUT)
                    .build())) {
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("job", TTL));
      String message = e.getMessage();
      assertTrue(message.contains("1 of 3 masters can vote, 2 needed"), message);
      assertTrue(message.contains(name(replica) + ": a replica of"), message);
      assertTrue(message.contains(name(evicting) + ": maxmemory"), message);
      assertTrue(message.contains("noeviction"), "the remedy: " + message);
      assertFalse(evicting.admin().exists("job"));
      Inspection inspection = redlock.inspect();
      assertTrue(
          inspection.summary().startsWith("1 of 3 masters vote, 2 needed: NO QUORUM"),
          inspection.summary());
      String refused =
          assertThrows(IllegalStateException.class, inspection::requireQuorum).getMessage();
      assertTrue(refused.contains(name(evicting) + ": eviction FAIL: maxmemory"), refused);
      assertTrue(refused.contains("unfit masters: list only standalone masters"), refused);
    }
  }

  @Test
  void inspectSaysHowManyMastersVoteAndHowManyAreNeeded(RedisCluster cluster) throws Exception {
    List<String> uris = new java.util.ArrayList<>(cluster.uris());
    for (int i = 0; i < 2; i++) {
      try (java.net.ServerSocket closed =
          new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
        uris.add("redis://127.0.0.1:" + closed.getLocalPort());
      }
    }
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder().nodes(uris).nodeTimeout(RedLocks.NODE_TIMEOUT).build())) {
      Inspection inspection = redlock.inspect();
      String shown = inspection.toString();
      assertTrue(shown.contains("3 of 5 masters vote, 3 needed: a quorum"), shown);
      assertEquals(3, inspection.voting());
    }
  }
}
