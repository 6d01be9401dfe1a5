package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The restart guard against real masters that restart the ways Redis can: reloading an older
 * snapshot (RDB save rules, the default persistence), empty, flushed, or with nothing lost (AOF
 * {@code always}). The masters save snapshots to {@code snapshot.rdb} in their own directory, and
 * every {@code FLUSHALL} (each test starts with one) rewrites it empty.
 */
class RestartGuardIT {

  @RegisterExtension
  static final RedisClusterExtension redis =
      RedisClusterExtension.withNodes(
          3,
          i ->
              RedisProcess.builder().arguments("--save", "3600 1", "--dbfilename", "snapshot.rdb"));

  /** The longest lease, and so about how long the guard keeps a restarted master out. */
  private static final Duration MAX_LEASE = Duration.ofSeconds(3);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(500);

  /** The default maxLeaseTime, which the CLI's {@code admit} uses too, and a longer one. */
  private static final Duration MINUTE = Duration.ofMinutes(1);

  private static final Duration TEN_MINUTES = Duration.ofMinutes(10);

  private static RedLock client(List<String> uris) {
    return client(uris, MAX_LEASE);
  }

  private static RedLock client(List<String> uris, Duration maxLeaseTime) {
    // The subject is which outcome each master gives, not how fast: a node timeout far above a
    // loaded machine's stalls, so that no answer becomes TIMED_OUT (its rounds never wait on it).
    return RedLock.builder()
        .nodes(uris)
        .nodeTimeout(NODE_TIMEOUT)
        .maxLeaseTime(maxLeaseTime)
        .build();
  }

  /** The seconds a RESTARTED outcome's detail says the master votes in ({@code votes in N s}). */
  private static long votesIn(NodeOutcome outcome) {
    java.util.regex.Matcher in =
        java.util.regex.Pattern.compile("votes in (\\d+) s").matcher(outcome.detail());
    assertTrue(in.find(), outcome.detail());
    return Long.parseLong(in.group(1));
  }

  @Test
  void anAdmissionHoldsForEveryClientWhateverItsMaxLeaseTime(RedisCluster cluster) {
    try (RedLock minute = client(cluster.uris(), MINUTE);
        RedLock tenMinutes = client(cluster.uris(), TEN_MINUTES)) {
      minute.admitFreshNodes();
      // Both vote at once: the admission is of the server run, not of one client's guard time.
      tenMinutes.tryAcquire("long", TEN_MINUTES).orElseThrow().close();
      minute.tryAcquire("short", MINUTE).orElseThrow().close();
    }
    // And the other way round: admitted by the ten-minute client, the one-minute client votes.
    for (int i = 0; i < 3; i++) {
      cluster.node(i).admin().flushAll();
    }
    try (RedLock tenMinutes = client(cluster.uris(), TEN_MINUTES);
        RedLock minute = client(cluster.uris(), MINUTE)) {
      tenMinutes.admitFreshNodes();
      minute.tryAcquire("short", MINUTE).orElseThrow().close();
      tenMinutes.tryAcquire("long", TEN_MINUTES).orElseThrow().close();
    }
  }

  @Test
  void anAdmittedRunReloadedFromASnapshotStillKeepsTheTenMinuteClientOut(RedisCluster cluster) {
    try (RedLock minute = client(cluster.uris(), MINUTE);
        RedLock a = client(cluster.uris(), TEN_MINUTES);
        RedLock b = client(cluster.uris(), TEN_MINUTES)) {
      minute.admitFreshNodes();
      for (int i = 0; i < 3; i++) {
        cluster.node(i).admin().command("SAVE"); // the marker and the admission are in it
      }
      Lease first = a.tryAcquire("orders:42", TEN_MINUTES).orElseThrow(); // votes at once
      for (int i = 0; i < 2; i++) {
        cluster.node(i).kill();
        cluster.node(i).restart();
        assertTrue(cluster.node(i).admin().exists("redlock:dataset-born"), "snapshot reloaded");
        assertTrue(cluster.node(i).admin().exists("redlock:admitted"), "admission reloaded");
        assertEquals(false, cluster.node(i).admin().exists("orders:42"), "lock key lost");
      }
      // The restarted masters lost A's key: a second lease on it would be a double grant.
      assertTrue(!granted(b, "orders:42", TEN_MINUTES), "B granted while A's lease was valid");
      List<NodeOutcome> seen = untilRestarted(b, "elsewhere", TEN_MINUTES);
      for (int i = 0; i < 2; i++) {
        assertTrue(seen.get(i).detail().contains("restarted"), seen.get(i).detail());
        // The ten-minute client's own guard time, not the admitting client's minute.
        assertTrue(votesIn(seen.get(i)) > 600, seen.get(i).detail());
      }
      assertTrue(first.isValid());
      first.close();
    }
  }

  @Test
  void aFlushedAdmittedMasterKeepsTheTenMinuteClientOutForItsOwnGuardTime(RedisCluster cluster) {
    try (RedLock minute = client(cluster.uris(), MINUTE);
        RedLock tenMinutes = client(cluster.uris(), TEN_MINUTES)) {
      minute.admitFreshNodes();
      tenMinutes.tryAcquire("r", TEN_MINUTES).orElseThrow().close(); // votes at once
      cluster.node(0).admin().command("FLUSHALL");
      cluster.node(1).admin().command("FLUSHALL");
      List<NodeOutcome> outcomes = untilRestarted(tenMinutes, "r", TEN_MINUTES);
      for (int i = 0; i < 2; i++) {
        assertTrue(
            outcomes.get(i).detail().contains("dataset-birth marker"), outcomes.get(i).detail());
      }
      // The marker that acquire stored counts only after this client's own guard time.
      outcomes = untilRestarted(tenMinutes, "r", TEN_MINUTES, "dataset ");
      for (int i = 0; i < 2; i++) {
        assertTrue(outcomes.get(i).detail().startsWith("dataset "), outcomes.get(i).detail());
        assertTrue(votesIn(outcomes.get(i)) > 600, outcomes.get(i).detail());
      }
    }
  }

  @Test
  void aMarkerAnAcquireStoredCountsOnlyAfterTheReadersGuardTimeThoughTheRunIsAdmitted(
      RedisCluster cluster) {
    try (RedLock minute = client(cluster.uris(), MINUTE);
        RedLock tenMinutes = client(cluster.uris(), TEN_MINUTES)) {
      minute.admitFreshNodes();
      tenMinutes.tryAcquire("r", TEN_MINUTES).orElseThrow().close();
      // The marker alone goes (evicted, or deleted by hand); the admitted run stays.
      for (int i = 0; i < 2; i++) {
        cluster.node(i).admin().command("DEL", "redlock:dataset-born");
        assertTrue(cluster.node(i).admin().exists("redlock:admitted"));
      }
      // An acquire stores a new marker on each; it counts only after each client's own guard.
      untilRestarted(minute, "r", MINUTE, "dataset ");
      untilRestarted(tenMinutes, "r", TEN_MINUTES, "dataset ");
    }
  }

  @Test
  void aMasterRestartedEmptyAndNotAdmittedWaitsTheLongerGuardTime(RedisCluster cluster) {
    Duration shortLease = Duration.ofSeconds(1);
    try (RedLock shorter = client(cluster.uris(), shortLease);
        RedLock longer = client(cluster.uris(), MAX_LEASE)) {
      for (int i = 0; i < 3; i++) {
        cluster.node(i).admin().command("FLUSHALL"); // an empty snapshot: restarts come back empty
      }
      shorter.admitFreshNodes();
      longer.tryAcquire("r", MAX_LEASE).orElseThrow().close(); // admitted: votes at once
      long killed = System.nanoTime();
      for (int i = 0; i < 2; i++) {
        cluster.node(i).kill();
        cluster.node(i).restart();
      }
      untilRestarted(longer, "r", MAX_LEASE);
      Poll.until(
          Duration.ofSeconds(10),
          () -> granted(longer, "r", MAX_LEASE),
          () -> "granted once the restarted masters are old enough for the longer guard");
      // Never before its own guard time (the longest lease stretched by the drift) has passed.
      assertTrue(
          System.nanoTime() - killed >= MAX_LEASE.toNanos(),
          "granted after " + Duration.ofNanos(System.nanoTime() - killed));
    }
  }

  private static boolean granted(RedLock client, String resource, Duration ttl) {
    try {
      Optional<Lease> lease = client.tryAcquire(resource, ttl);
      lease.ifPresent(Lease::close);
      return lease.isPresent();
    } catch (QuorumUnavailableException stillYoung) {
      return false;
    }
  }

  @Test
  void mastersThatReloadAnOlderSnapshotDoNotVoteWhileALeaseTheyHadGrantedMayBeValid(
      RedisCluster cluster) {
    try (RedLock a = client(cluster.uris());
        RedLock b = client(cluster.uris())) {
      a.admitFreshNodes();
      for (int i = 0; i < 3; i++) {
        cluster.node(i).admin().command("SAVE"); // the marker and the admission are in it
      }
      Lease first = a.tryAcquire("orders:42", MAX_LEASE).orElseThrow();
      // Two masters crash and come back from the snapshot: the marker is back, the lock key is not.
      for (int i = 0; i < 2; i++) {
        cluster.node(i).kill();
        cluster.node(i).restart();
        assertTrue(cluster.node(i).admin().exists("redlock:dataset-born"), "snapshot reloaded");
        assertEquals(false, cluster.node(i).admin().exists("orders:42"), "lock key lost");
      }

      // Until the first lease runs out, B is never granted; once the restarted masters have
      // reconnected, each round says why.
      List<NodeOutcome> seen = List.of();
      while (first.isValid()) {
        try {
          Lease second = b.tryAcquire("orders:42", MAX_LEASE).orElse(null);
          assertTrue(second == null || !first.isValid(), "B granted while A's lease was valid");
        } catch (QuorumUnavailableException refused) {
          if (first.isValid()) {
            seen = refused.outcomes();
          }
        }
        if (restarted(seen, 0) && restarted(seen, 1)) {
          break;
        }
      }
      assertTrue(first.isValid(), "the restarted masters were seen while A's lease was valid");
      for (int i = 0; i < 2; i++) {
        assertTrue(seen.get(i).detail().contains("restarted"), seen.get(i).detail());
      }

      // Once the guard's time has passed since the restart, they vote again on their own.
      Poll.until(
          Duration.ofSeconds(10),
          () -> {
            try {
              return b.tryAcquire("orders:42", MAX_LEASE).isPresent();
            } catch (QuorumUnavailableException stillYoung) {
              return false;
            }
          },
          () -> "B granted once the restarted masters are old enough");
      assertTrue(!first.isValid(), "and by then the first lease had run out");
    }
  }

  private static boolean restarted(List<NodeOutcome> outcomes, int i) {
    return outcomes.size() > i && outcomes.get(i).status() == Status.RESTARTED;
  }

  /** Tries {@code resource} until a round finds masters 0 and 1 RESTARTED; returns that round. */
  private static List<NodeOutcome> untilRestarted(RedLock redlock, String resource) {
    return untilRestarted(redlock, resource, MAX_LEASE);
  }

  private static List<NodeOutcome> untilRestarted(RedLock redlock, String resource, Duration ttl) {
    return untilRestarted(redlock, resource, ttl, "");
  }

  /** As above, until both details start with {@code why}. */
  private static List<NodeOutcome> untilRestarted(
      RedLock redlock, String resource, Duration ttl, String why) {
    List<List<NodeOutcome>> last = new java.util.ArrayList<>(List.of(List.of()));
    Poll.until(
        Duration.ofSeconds(2),
        () -> {
          try {
            redlock.tryAcquire(resource, ttl).ifPresent(Lease::close);
            throw new AssertionError("granted by masters that should not vote");
          } catch (QuorumUnavailableException refused) {
            last.set(0, refused.outcomes());
            return restarted(refused.outcomes(), 0)
                && restarted(refused.outcomes(), 1)
                && refused.outcomes().get(0).detail().startsWith(why)
                && refused.outcomes().get(1).detail().startsWith(why);
          }
        },
        () -> "masters 0 and 1 seen RESTARTED: " + last.get(0));
    return last.get(0);
  }

  @Test
  void masterRestartedEmptyDoesNotVoteUntilAdmitted(RedisCluster cluster) {
    try (RedLock redlock = client(cluster.uris())) {
      redlock.admitFreshNodes();
      for (int i = 0; i < 3; i++) {
        cluster.node(i).admin().command("FLUSHALL"); // an empty snapshot: restarts come back empty
      }
      redlock.admitFreshNodes();
      cluster.node(0).kill();
      cluster.node(0).restart();
      cluster.node(1).kill();
      cluster.node(1).restart();
      untilRestarted(redlock, "r");

      List<NodeOutcome> admitted = redlock.admitFreshNodes();
      assertEquals(Status.GRANTED, admitted.get(0).status(), admitted::toString);
      assertEquals(Status.TAKEN, admitted.get(2).status(), "already admitted: " + admitted);
      redlock.tryAcquire("r", MAX_LEASE).orElseThrow().close();
    }
  }

  @Test
  void aFlushedMasterDoesNotVoteThoughItsServerRunIsOld(RedisCluster cluster) {
    try (RedLock redlock = client(cluster.uris())) {
      redlock.admitFreshNodes();
      redlock.tryAcquire("r", MAX_LEASE).orElseThrow().close();
      cluster.node(0).admin().command("FLUSHALL");
      cluster.node(1).admin().command("FLUSHALL");
      List<NodeOutcome> outcomes = untilRestarted(redlock, "r");
      for (int i = 0; i < 2; i++) {
        assertTrue(
            outcomes.get(i).detail().contains("dataset-birth marker"), outcomes.get(i).detail());
      }
    }
  }

  @Test
  void mastersThatLoseNothingOnARestartVoteAtOnceAndStillHoldTheLock() {
    try (RedisCluster lossless =
            RedisCluster.start(3, i -> RedisProcess.builder().persistence(true));
        RedLock a = client(lossless.uris());
        RedLock b = client(lossless.uris())) {
      a.admitFreshNodes();
      Lease first = a.tryAcquire("orders:42", MAX_LEASE).orElseThrow();
      for (int i = 0; i < 2; i++) {
        lossless.node(i).kill();
        lossless.node(i).restart(); // replays its append-only file: the lock key is back
      }
      Poll.until(
          Duration.ofSeconds(5),
          () -> {
            try {
              return b.tryAcquire("orders:42", MAX_LEASE).isEmpty();
            } catch (QuorumUnavailableException reconnecting) {
              return false;
            }
          },
          () -> "B refused by a majority that holds A's key, not by the guard");
      assertTrue(first.isValid());
      first.close();
      b.tryAcquire("orders:42", MAX_LEASE).orElseThrow().close();
    }
  }

  /**
   * A master that restarts configured to lose nothing, after a run that lost writes (here: {@code
   * appendfsync everysec} when this client first saw it), does not vote at once: what the old run
   * had not fsynced is gone, whatever the new run's configuration says. The same masters, admitted
   * and seen losing nothing, vote at once after a restart (the test above).
   */
  @Test
  void aMasterSwitchedToAppendfsyncAlwaysAtItsRestartDoesNotVoteAtOnce() {
    try (RedisCluster cluster =
        RedisCluster.start(3, i -> RedisProcess.builder().persistence(true))) {
      for (int i = 0; i < 2; i++) {
        cluster.node(i).admin().command("CONFIG", "SET", "appendfsync", "everysec");
      }
      try (RedLock redlock = client(cluster.uris())) {
        redlock.admitFreshNodes();
        redlock.tryAcquire("r", MAX_LEASE).orElseThrow().close();
        for (int i = 0; i < 2; i++) {
          cluster.node(i).kill();
          cluster.node(i).restart(); // its command line says appendfsync always
        }
        List<NodeOutcome> outcomes = untilRestarted(redlock, "r");
        for (int i = 0; i < 2; i++) {
          assertTrue(outcomes.get(i).detail().startsWith("restarted "), outcomes.get(i).detail());
        }
      }
    }
  }

  @Test
  void aUserWhoMayNotReadInfoCannotBeVouchedForSoItsMasterDoesNotVote(RedisCluster cluster) {
    RedisProcess node = cluster.node(0);
    node.admin().command("ACL", "SETUSER", "locker", "on", ">secret", "~*", "+@all", "-info");
    String uri = "redis://locker:secret@" + node.host() + ":" + node.port();
    try (RedLock redlock =
        RedLock.builder().node(uri).nodeTimeout(NODE_TIMEOUT).maxLeaseTime(MAX_LEASE).build()) {
      List<NodeOutcome> admitted = redlock.admitFreshNodes();
      assertEquals(Status.FAILED, admitted.get(0).status(), admitted::toString);
      assertTrue(admitted.get(0).detail().contains("INFO"), admitted.get(0).detail());
      QuorumUnavailableException refused =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", MAX_LEASE));
      NodeOutcome outcome = refused.outcomes().get(0);
      assertEquals(Status.RESTARTED, outcome.status());
      assertTrue(outcome.detail().contains("INFO refused"), outcome.detail());
    } finally {
      node.admin().command("ACL", "DELUSER", "locker");
    }
  }
}
