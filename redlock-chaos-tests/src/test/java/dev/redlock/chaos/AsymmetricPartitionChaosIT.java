package dev.redlock.chaos;

import static dev.redlock.NodeOutcome.Status.FAILED;
import static dev.redlock.NodeOutcome.Status.GRANTED;
import static dev.redlock.NodeOutcome.Status.TAKEN;
import static dev.redlock.NodeOutcome.Status.TIMED_OUT;
import static dev.redlock.chaos.NetworkChaos.assertStatuses;
import static dev.redlock.chaos.NetworkChaos.awaitDrained;
import static dev.redlock.chaos.NetworkChaos.awaitHolders;
import static dev.redlock.chaos.NetworkChaos.awaitNoHolder;
import static dev.redlock.chaos.NetworkChaos.awaitTrue;
import static dev.redlock.chaos.NetworkChaos.holders;
import static dev.redlock.chaos.NetworkChaos.millisSince;
import static dev.redlock.chaos.NetworkChaos.resource;
import static dev.redlock.chaos.NetworkChaos.warmUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.LockTakenException;
import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockException;
import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Asymmetric partitions: requests reach a master and it executes them, but its replies are lost.
 * The client must never count such a master's vote (it granted, but the client cannot know), and
 * the key it set there must be removed by the release queued behind the SET on the same connection.
 */
class AsymmetricPartitionChaosIT {

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(50);
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration SETTLE = Duration.ofSeconds(5);

  /** Two ways to lose a master's replies while its requests still arrive. */
  enum ReplyLoss {
    /** A downstream {@code timeout} toxic with timeout 0: replies are dropped. */
    DROPPED {
      @Override
      void apply(Proxy proxy) throws IOException {
        proxy.toxics().timeout("replies-lost", ToxicDirection.DOWNSTREAM, 0);
      }
    },
    /** A downstream {@code bandwidth} toxic with rate 0: replies are held until heal. */
    HELD {
      @Override
      void apply(Proxy proxy) throws IOException {
        proxy.toxics().bandwidth("replies-held", ToxicDirection.DOWNSTREAM, 0);
      }
    };

    abstract void apply(Proxy proxy) throws IOException;

    void apply(ChaosCluster cluster, int... nodes) throws IOException {
      for (int node : nodes) {
        apply(cluster.proxy(node));
      }
    }
  }

  @ParameterizedTest
  @EnumSource(ReplyLoss.class)
  void aMinorityThatCannotAnswerStillGetsTheKeyAndTheReleaseRemovesIt(
      ReplyLoss loss, ChaosCluster cluster) throws IOException {
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      loss.apply(cluster, 0, 1);
      String key = resource("mute-minority-" + loss);

      Lease lease = redlock.tryAcquire(key, TTL).orElseThrow();

      // The mute masters executed the SET although the client never heard back from them.
      awaitHolders(cluster, key, List.of(0, 1, 2, 3, 4), SETTLE);
      lease.release();
      // The release went out behind the SET on each connection, so it removes the key there too,
      // long before the 10 s TTL, with the replies still lost.
      awaitNoHolder(cluster, key, SETTLE);
    }
  }

  @ParameterizedTest
  @EnumSource(ReplyLoss.class)
  void aVoteThatWasGrantedButNeverHeardIsNotCounted(ReplyLoss loss, ChaosCluster cluster)
      throws IOException, InterruptedException {
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      loss.apply(cluster, 0, 1);
      String key = resource("unheard-vote-" + loss);
      // Another client holds master 2: two heard grants plus two unheard ones would be a majority
      // only if the unheard ones counted.
      cluster.admin(2).set(key, "another client's token");

      LockTakenException e =
          assertThrows(
              LockTakenException.class,
              () -> redlock.acquire(key, TTL, Duration.ofMillis(1)).close());

      assertStatuses(List.of(TIMED_OUT, TIMED_OUT, TAKEN, GRANTED, GRANTED), e);
      // Its own SETs are cleaned up everywhere, including on the mute masters; the other client's
      // key is left alone.
      awaitHolders(cluster, key, List.of(2), SETTLE);
      assertEquals("another client's token", cluster.admin(2).get(key));
    }
  }

  @ParameterizedTest
  @EnumSource(ReplyLoss.class)
  void aMajorityThatCannotAnswerFailsTheAcquireAndKeepsNoKey(ReplyLoss loss, ChaosCluster cluster)
      throws IOException {
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      loss.apply(cluster, 0, 1, 2);
      String key = resource("mute-majority-" + loss);

      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire(key, TTL));

      assertStatuses(List.of(TIMED_OUT, TIMED_OUT, TIMED_OUT, GRANTED, GRANTED), e);
      // While the replies are still lost, the queued releases have already removed every SET.
      awaitNoHolder(cluster, key, SETTLE);

      cluster.heal();
      awaitDrained(cluster, redlock, SETTLE);
      assertEquals(List.of(), holders(cluster, key), "nothing came back after heal");
    }
  }

  @ParameterizedTest
  @EnumSource(ReplyLoss.class)
  void repliesThatArriveLateAreNeverMistakenForNewerOnes(ReplyLoss loss, ChaosCluster cluster)
      throws IOException {
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      loss.apply(cluster, 0, 1, 2);
      for (int round = 0; round < 3; round++) {
        String key = resource("late-grant-" + loss);
        assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire(key, TTL));
      }
      String taken = resource("taken-" + loss);
      for (int i = 0; i < cluster.size(); i++) {
        cluster.admin(i).set(taken, "another client's token");
      }

      // Held replies ("OK" to old SETs) now flood in, or the dropped ones' connections are closed.
      cluster.heal();
      awaitDrained(cluster, redlock, SETTLE);
      Optional<Lease> stolen = redlock.tryAcquire(taken, TTL);

      assertTrue(stolen.isEmpty(), "a late OK was matched to a newer SET: " + stolen);
      for (int i = 0; i < cluster.size(); i++) {
        assertEquals("another client's token", cluster.admin(i).get(taken), "master " + i);
      }
    }
  }

  @Test
  void aSetHeldInTheNetworkPastTheStallLimitLandsAfterItsReleaseAndExpiresWithItsTtl(
      ChaosCluster cluster) throws IOException {
    Duration ttl = Duration.ofMillis(2500);
    // Without circuit breakers: this is about the connection's own stall limit, which a breaker
    // (opening on the timeouts first) would hide.
    try (RedLock redlock =
        NetworkChaos.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(NODE_TIMEOUT)
                .circuitBreakers(false)
                .build())) {
      warmUp(cluster, redlock);
      // The other asymmetry: master 0's replies would flow, but requests to it are held.
      cluster.proxy(0).toxics().bandwidth("requests-held", ToxicDirection.UPSTREAM, 0);
      String key = resource("held-set");
      Lease lease = redlock.tryAcquire(key, ttl).orElseThrow();
      long acquiredAt = System.nanoTime();
      assertEquals(List.of(1, 2, 3, 4), holders(cluster, key));

      // Past the stall limit (2 s here) the next command drops master 0's connection; reconnecting
      // is held too, so master 0 turns from TIMED_OUT to FAILED. Probe rounds on a resource two
      // other masters hold make each round wait for master 0 and report it.
      String probe = resource("stall-probe");
      cluster.admin(1).set(probe, "another client's token");
      cluster.admin(2).set(probe, "another client's token");
      awaitTrue(
          SETTLE,
          () -> probeStatusOfMaster0(redlock, probe) == FAILED,
          () -> "master 0's connection was never dropped");
      assertTrue(
          millisSince(acquiredAt) >= 2000, "dropped only after the stall limit, not at once");

      // The release reaches masters 1-4; master 0 cannot be reached, and the SET is still held.
      lease.release();
      // Decided once three of masters 1-4 answered; the fourth follows.
      awaitNoHolder(cluster, key, SETTLE);

      cluster.heal();
      if (cluster.backend() == ChaosCluster.Backend.LOCAL) {
        // The fault proxy delivers what the dropped connection had sent: the SET lands after its
        // release, an orphan holding this lease's token. (Toxiproxy may drop it instead.)
        awaitHolders(cluster, key, List.of(0), SETTLE);
        long pttl = cluster.admin(0).pttl(key);
        assertTrue(pttl > 0 && pttl <= ttl.toMillis(), "orphan with the lease's TTL: " + pttl);
      }
      // Nothing removes it but its TTL.
      awaitNoHolder(cluster, key, ttl.plus(SETTLE));
    }
  }

  /** One round on {@code probe}; what master 0 answered in it. */
  private static NodeOutcome.Status probeStatusOfMaster0(RedLock redlock, String probe) {
    try {
      redlock.acquire(probe, TTL, Duration.ofMillis(1)).close();
      throw new AssertionError("the probe resource is held by another client");
    } catch (RedLockException e) {
      return e.outcomes().get(0).status();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
