package dev.redlock.chaos;

import static dev.redlock.NodeOutcome.Status.GRANTED;
import static dev.redlock.NodeOutcome.Status.PENDING;
import static dev.redlock.NodeOutcome.Status.TIMED_OUT;
import static dev.redlock.chaos.NetworkChaos.assertStatuses;
import static dev.redlock.chaos.NetworkChaos.awaitDrained;
import static dev.redlock.chaos.NetworkChaos.awaitHolders;
import static dev.redlock.chaos.NetworkChaos.awaitNoHolder;
import static dev.redlock.chaos.NetworkChaos.holders;
import static dev.redlock.chaos.NetworkChaos.resource;
import static dev.redlock.chaos.NetworkChaos.statuses;
import static dev.redlock.chaos.NetworkChaos.warmUp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import eu.rekawek.toxiproxy.model.toxic.Latency;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Latency toxics: slow masters must neither block nor slow an acquire while a fast majority exists,
 * a slow majority must fail the acquire within the node timeout and leave nothing behind, and
 * latency that eats the TTL must never yield a lease whose validity has already run out.
 */
class LatencyChaosIT {

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(50);
  private static final Duration TTL = Duration.ofSeconds(1);
  private static final Duration SETTLE = Duration.ofSeconds(5);

  @ParameterizedTest
  @EnumSource(ToxicDirection.class)
  void aSlowMinorityNeitherBlocksNorSlowsAnAcquire(ToxicDirection direction, ChaosCluster cluster)
      throws IOException {
    long latencyMillis = 200;
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      for (int i : List.of(0, 1)) {
        cluster.proxy(i).toxics().latency("slow", direction, latencyMillis);
      }
      String key = resource("slow-minority");

      long start = System.nanoTime();
      Lease lease = redlock.tryAcquire(key, TTL).orElseThrow();
      long elapsed = NetworkChaos.millisSince(start);

      assertTrue(
          elapsed < latencyMillis,
          "acquire took " + elapsed + " ms; the slow masters add " + latencyMillis + " ms");
      assertTrue(
          lease.remainingValidity().toMillis() > TTL.toMillis() - latencyMillis,
          "validity reflects the fast quorum: " + lease);
      // The slow masters get the SET too (late, for upstream latency) ...
      awaitHolders(cluster, key, List.of(0, 1, 2, 3, 4), SETTLE);
      lease.release();
      // ... and the release, queued behind it on each connection, removes it everywhere.
      awaitNoHolder(cluster, key, SETTLE);
    }
  }

  @ParameterizedTest
  @EnumSource(ToxicDirection.class)
  void aSlowMajorityFailsTheAcquireWithinTheNodeTimeoutAndLeavesNoKey(
      ToxicDirection direction, ChaosCluster cluster) throws IOException {
    long latencyMillis = 500;
    try (RedLock redlock = NetworkChaos.redlock(cluster, NODE_TIMEOUT)) {
      warmUp(cluster, redlock);
      for (int i : List.of(0, 1, 2)) {
        cluster.proxy(i).toxics().latency("slow", direction, latencyMillis);
      }
      String key = resource("slow-majority");

      long start = System.nanoTime();
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire(key, TTL));
      long elapsed = NetworkChaos.millisSince(start);

      assertStatuses(List.of(TIMED_OUT, TIMED_OUT, TIMED_OUT, GRANTED, GRANTED), e);
      assertTrue(
          elapsed >= NODE_TIMEOUT.toMillis() && elapsed < latencyMillis,
          "decided at the node timeout, not when the slow replies came: " + elapsed + " ms");

      cluster.toxiproxy().reset();
      awaitDrained(cluster, redlock, SETTLE);
      assertEquals(List.of(), holders(cluster, key), "no master kept the failed acquire's key");
    }
  }

  @Test
  void aRoundThatOutlastsTheValidityGrantsNoLeaseThoughAMajoritySaidYes(ChaosCluster cluster)
      throws IOException {
    // Drift allowance 0.09 * 1000 + 2 = 92 ms: a lease needs the round decided within 908 ms.
    // Replies at least 915 ms late always come after that, yet well inside the 995 ms node timeout.
    try (RedLock redlock = lateRoundRedLock(cluster)) {
      warmUp(cluster, redlock);
      for (int i = 0; i < cluster.size(); i++) {
        cluster.proxy(i).toxics().latency("slow", ToxicDirection.DOWNSTREAM, 915);
      }
      String key = resource("validity-eaten");

      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire(key, TTL));

      List<NodeOutcome.Status> statuses = statuses(e.outcomes());
      assertTrue(
          statuses.stream().filter(s -> s == GRANTED).count() >= 3
              && statuses.stream().allMatch(s -> s == GRANTED || s == PENDING),
          "a majority granted in time, and nothing failed: " + e.outcomes());
      // The release behind each SET deletes the keys the masters did grant.
      awaitNoHolder(cluster, key, SETTLE);
    }
  }

  @Test
  void aLeaseGrantedLateInItsTtlIsNeverReturnedAlreadyExpiredNorTrustedPastTheKeys(
      ChaosCluster cluster) throws IOException {
    long driftMillis = 92; // 0.09 * TTL + 2 ms
    long usableMillis = TTL.toMillis() - driftMillis;
    try (RedLock redlock = lateRoundRedLock(cluster)) {
      warmUp(cluster, redlock);
      // Replies delayed from clearly inside the usable 908 ms, across its edge (where only a few
      // milliseconds of validity are left, or none), to clearly past it.
      List<Latency> slow = new ArrayList<>();
      for (int i = 0; i < cluster.size(); i++) {
        slow.add(cluster.proxy(i).toxics().latency("slow", ToxicDirection.DOWNSTREAM, 880));
      }
      int leases = 0;
      int refusals = 0;
      for (long latencyMillis : List.of(880L, 898L, 903L, 906L, 912L, 930L)) {
        for (Latency toxic : slow) {
          toxic.setLatency(latencyMillis);
        }
        String key = resource("validity-edge");
        long before = System.nanoTime();
        Optional<Lease> acquired;
        try {
          acquired = redlock.tryAcquire(key, TTL);
        } catch (QuorumUnavailableException e) {
          refusals++;
          assertTrue(
              e.outcomes().stream().noneMatch(o -> o.status() == NodeOutcome.Status.TAKEN),
              "nobody else holds it: " + e.outcomes());
          continue;
        }
        long after = System.nanoTime();
        Lease lease = acquired.orElseThrow(() -> new AssertionError("no contention here"));
        Duration remaining = lease.remainingValidity();
        long now = System.nanoTime();
        leases++;
        assertTrue(
            latencyMillis < usableMillis,
            "a lease though every reply came after the usable time: " + latencyMillis + " ms");
        if (after - before < Duration.ofMillis(usableMillis).toNanos()) {
          assertTrue(
              remaining.compareTo(Duration.ZERO) > 0,
              "returned within "
                  + (after - before) / 1_000_000
                  + " ms yet already expired: "
                  + lease);
        }
        long trustedUntil = now + remaining.toNanos();
        assertTrue(
            trustedUntil - (before + TTL.toNanos()) <= 0,
            "the lease is trusted "
                + (trustedUntil - before - TTL.toNanos()) / 1_000_000
                + " ms past the moment its keys can expire");
        // Not released: a release would wait for the slow replies; the key expires with its TTL.
      }
      assertTrue(
          leases > 0 && refusals > 0,
          "the rounds straddled the validity edge: "
              + leases
              + " leases, "
              + refusals
              + " refused");
    }
  }

  /** A client whose rounds may take nearly the whole TTL, with a large drift allowance. */
  private static RedLock lateRoundRedLock(ChaosCluster cluster) {
    return NetworkChaos.admitted(
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(Duration.ofMillis(995))
            .driftFactor(0.09)
            .fencing(false) // one round, so the latency sweep maps onto the validity edge
            .circuitBreakers(false) // replies this slow would open them, which is not under test
            .build());
  }
}
