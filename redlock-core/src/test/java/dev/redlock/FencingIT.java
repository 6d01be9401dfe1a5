package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Fencing tokens and the restart guard on real masters. */
class FencingIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final Duration TTL = Duration.ofSeconds(5);

  /**
   * A fence counter far above any master's clock, which is about 1.76e15 in microseconds (2026) and
   * reaches 8e15 only in the 23rd century. The masters here share one host's clock and leases are
   * milliseconds apart, so tokens rise from the clock alone; a token above the seed can only come
   * from a counter, and one above the token before it, from the counter the earlier lease stored.
   * Below 2^53, though the fence script compares digits and would not need it.
   */
  static final long SEED = 8_000_000_000_000_000L;

  /** Stores {@link #SEED} as the fence counter of {@code masters}, as an earlier lease would. */
  static void seedFenceCounters(RedisCluster cluster, int... masters) {
    for (int i : masters) {
      cluster.node(i).admin().set("redlock:fence", Long.toString(SEED));
    }
  }

  @Test
  void tokensRiseFromTheCountersAcrossClientsAndTheCountersNeverExpire(RedisCluster cluster) {
    seedFenceCounters(cluster, 0, 1, 2); // a bare majority: every granting majority meets it
    try (RedLock a = RedLocks.redlock(cluster, 5);
        RedLock b = RedLocks.redlock(cluster, 5)) {
      long previous = SEED;
      for (int i = 0; i < 10; i++) {
        RedLock client = i % 2 == 0 ? a : b;
        try (Lease lease = client.tryAcquire("account:7", TTL).orElseThrow()) {
          long token = lease.fencingToken();
          assertTrue(token > previous, "lease " + i + ": " + token + " > " + previous);
          previous = token;
        }
      }
      int stored = 0;
      for (int i = 0; i < 5; i++) {
        String counter = cluster.node(i).admin().get("redlock:fence");
        if (counter != null && Long.parseLong(counter) == previous) {
          stored++;
          assertEquals(-1, cluster.node(i).admin().pttl("redlock:fence"), "no expiry");
        }
      }
      assertTrue(stored >= 3, "the last token is stored on a majority: " + stored);
    }
  }

  @Test
  void tokensKeepRisingFromACounterAboveTwoToTheFiftyThree(RedisCluster cluster) {
    // Lua's numbers are doubles, exact only below 2^53 (about 9.007e15), where two tokens a lease
    // apart can compare equal. A counter up there (an earlier version's, raised by hand) must still
    // rise by one a lease: the fence script compares digits, not numbers.
    long high = 1_000_000_000_000_000_000L;
    for (int i = 0; i < 5; i++) {
      cluster.node(i).admin().set("redlock:fence", Long.toString(high));
    }
    try (RedLock a = RedLocks.redlock(cluster, 5);
        RedLock b = RedLocks.redlock(cluster, 5)) {
      long previous = high;
      for (int i = 0; i < 6; i++) {
        RedLock client = i % 2 == 0 ? a : b;
        try (Lease lease = client.tryAcquire("account:7", TTL).orElseThrow()) {
          long token = lease.fencingToken();
          assertTrue(token > previous, "lease " + i + ": " + token + " > " + previous);
          previous = token;
        }
      }
      assertEquals(Long.toString(previous), cluster.node(0).admin().get("redlock:fence"));
    }
  }

  @Test
  void aTokenReadLateIsStoredAndEveryLaterLeaseExceedsIt(RedisCluster cluster) {
    seedFenceCounters(cluster, 2, 3, 4);
    try (RedLock a = RedLocks.redlock(cluster, 5);
        RedLock b = RedLocks.redlock(cluster, 5)) {
      long previous = SEED;
      for (int i = 0; i < 8; i++) {
        RedLock client = i % 2 == 0 ? a : b;
        try (Lease lease = client.tryAcquire("account:7", TTL).orElseThrow()) {
          if (i % 4 == 3) {
            continue; // never asks: stores nothing, and no later lease relies on it
          }
          if (i % 4 != 0) {
            // Some work under the lease before the token is asked for (and stored): the token was
            // chosen by the acquire, the store happens now.
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(30));
          }
          long token = lease.fencingToken();
          assertTrue(token > previous, "lease " + i + ": " + token + " > " + previous);
          previous = token;
        }
      }
    }
  }

  @Test
  void aTokenStoredOnAMajorityOutlivesTheRestartOfAMinority(RedisCluster cluster)
      throws InterruptedException {
    seedFenceCounters(cluster, 0, 1, 2);
    // Without the restart guard the restarted masters vote at once, empty: only the counter kept
    // by the one master that did not restart can carry the token across.
    try (RedLock redlock =
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(Duration.ofMillis(100))
            .restartGuard(false)
            .build()) {
      long first;
      try (Lease lease = redlock.tryAcquire("account:7", TTL).orElseThrow()) {
        first = lease.fencingToken();
      }
      assertTrue(first > SEED, first + " > " + SEED);
      String stored = Long.toString(first);
      RedLocks.eventually(
          "the first token stored on every master",
          () ->
              IntStream.range(0, 5)
                  .allMatch(i -> stored.equals(cluster.node(i).admin().get("redlock:fence"))));
      cluster.node(0).kill();
      cluster.node(0).restart(); // no persistence: its counter is gone
      cluster.node(1).kill();
      cluster.node(1).restart();
      cluster.node(3).kill(); // down: the next majority is 0, 1 and 2
      cluster.node(4).kill();
      assertEquals(null, cluster.node(0).admin().get("redlock:fence"), "lost on restart");

      long second; // granted by masters 0, 1 and 2, once reconnected to 0 and 1
      try (Lease lease = redlock.acquire("account:7", TTL, Duration.ofSeconds(10))) {
        second = lease.fencingToken();
      }
      assertTrue(second > first, second + " > " + first);
    }
  }

  @Test
  void aRestartedMasterDoesNotVoteUntilAdmitted(RedisCluster cluster) {
    try (RedLock redlock = RedLocks.redlock(cluster, 3)) {
      redlock.tryAcquire("job", TTL).orElseThrow().close();
      for (int i = 0; i < 2; i++) {
        cluster.node(i).kill();
        cluster.node(i).restart(); // no persistence: the dataset starts again
      }
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("job", TTL));
      List<Status> statuses = e.outcomes().stream().map(NodeOutcome::status).toList();
      assertTrue(
          statuses.subList(0, 2).stream()
              .allMatch(s -> s == Status.RESTARTED || s == Status.FAILED),
          e::getMessage);
      RedLocks.eventually(
          "the restarted masters are seen as restarted",
          () -> {
            try {
              redlock.tryAcquire("job", TTL);
              return false;
            } catch (QuorumUnavailableException young) {
              return young.outcomes().get(0).status() == Status.RESTARTED
                  && young.outcomes().get(1).status() == Status.RESTARTED;
            }
          });
      // A young master runs the SET too, but its vote does not count, and the failed attempt
      // releases it there as everywhere.
      RedLocks.eventually(
          "only the marker is left on the young master",
          () -> cluster.node(0).admin().dbSize() == 1);

      List<NodeOutcome> admitted = redlock.admitFreshNodes();
      assertEquals(Status.GRANTED, admitted.get(0).status(), "admitted now");
      assertEquals(Status.TAKEN, admitted.get(2).status(), "was already trusted");
      redlock.tryAcquire("job", TTL).orElseThrow().close();
    }
  }

  @Test
  void withoutTheGuardARestartedMasterVotesAtOnce(RedisCluster cluster) {
    try (RedLock redlock =
        RedLock.builder()
            .nodes(cluster.uris().subList(0, 3))
            .nodeTimeout(Duration.ofMillis(100))
            .restartGuard(false)
            .build()) {
      redlock.tryAcquire("job", TTL).orElseThrow().close();
      cluster.node(0).kill();
      cluster.node(0).restart();
      cluster.node(1).kill();
      cluster.node(1).restart();
      RedLocks.eventually(
          "acquires with the restarted masters",
          () -> {
            var lease = redlock.tryAcquire("job", TTL);
            lease.ifPresent(Lease::close);
            return lease.isPresent();
          });
    }
  }

  @Test
  void withoutFencingAndGuardAcquireIsAPlainSetNxPx(RedisCluster cluster) {
    try (RedLock redlock =
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(Duration.ofMillis(100))
            .fencing(false)
            .restartGuard(false)
            .build()) {
      Lease lease = redlock.tryAcquire("plain", TTL).orElseThrow();
      assertThrows(IllegalStateException.class, lease::fencingToken);
      assertTrue(redlock.tryAcquire("plain", TTL).isEmpty());
      lease.close();
      RedLocks.eventually(
          "released everywhere", () -> RedLocks.keysGone(cluster, "plain", 0, 1, 2, 3, 4));
      for (int i = 0; i < 5; i++) {
        assertEquals(List.of(), RedLocks.userKeys(cluster, i));
        assertEquals(0, cluster.node(i).admin().dbSize(), "no marker, no fence counter");
      }
    }
  }

  @Test
  void withFencingOffAndTheGuardOnAcquireStillReadsTheMarker(RedisCluster cluster) {
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(Duration.ofMillis(100))
                .fencing(false)
                .build())) {
      Lease lease = redlock.tryAcquire("guarded", TTL).orElseThrow();
      assertThrows(IllegalStateException.class, lease::fencingToken);
      assertTrue(redlock.tryAcquire("guarded", TTL).isEmpty());
      lease.close();
      RedLocks.eventually(
          "released everywhere", () -> RedLocks.keysGone(cluster, "guarded", 0, 1, 2, 3, 4));
      assertEquals(null, cluster.node(0).admin().get("redlock:fence"), "no counter stored");
    }
  }

  @Test
  void theLibrarysKeysOnAMasterStayAtThreeHoweverManyResourcesAreFenced(RedisCluster cluster) {
    try (RedLock redlock = RedLocks.redlock(cluster, 5)) {
      long previous = 0;
      for (int i = 0; i < 1000; i++) {
        try (Lease lease = redlock.tryAcquire("order:" + i, TTL).orElseThrow()) {
          long token = lease.fencingToken();
          assertTrue(token > previous, token + " after " + previous);
          previous = token;
        }
      }
      for (int i = 0; i < 5; i++) {
        int master = i;
        RedLocks.eventually(
            "every lock released on master " + i,
            () -> RedLocks.userKeys(cluster, master).isEmpty());
        assertTrue(
            cluster.node(i).admin().dbSize() <= 3,
            "fence counter, dataset marker and admission only, on master "
                + i
                + ": "
                + cluster.node(i).admin().dbSize());
      }
    }
  }
}
