package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Inspection;
import dev.redlock.Lease;
import dev.redlock.LockTakenException;
import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisAdmin;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Why the preflight refuses an evicting memory policy: a master with a small {@code maxmemory} and
 * {@code allkeys-lru}, under memory pressure, evicts lock keys. If it was part of a holder's bare
 * quorum, a second client can then be granted while the first lease is still valid. With {@code
 * excludeUnfitMasters} the evicting master never votes: the outcomes of each refusal must show it
 * excluded as unfit (not unreachable, not granting), so the protected run cannot pass by a client
 * that failed to connect, nor by healthy masters that refuse on their own.
 *
 * <p>The unprotected run turns the restart guard off. With the guard on, eviction is caught only by
 * luck: when the master also evicts its dataset-birth marker, its next vote is RESTARTED (a young
 * dataset) and the second client is refused; when the marker survives, the second client gets in.
 * Which key LRU sampling evicts first is not up to the test, so the run that shows the hazard runs
 * without the guard, and only {@code excludeUnfitMasters} is relied on to prevent it.
 */
class EvictionChaosIT {

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final int EVICTING = 0;
  private static final int HEALTHY = 1;
  private static final int CUT_OFF = 2;
  private static final Duration SECOND_CLIENT_WAIT = Duration.ofSeconds(3);

  @ParameterizedTest(name = "excludeUnfitMasters = {0}")
  @ValueSource(booleans = {false, true})
  void anEvictingMasterInABareQuorumLetsASecondClientInUnlessItIsExcluded(boolean exclude)
      throws Exception {
    try (ChaosCluster cluster = ChaosCluster.start(3)) {
      RedisAdmin evicting = cluster.admin(EVICTING);
      evicting.command("CONFIG", "SET", "maxmemory", "4mb");
      evicting.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
      try (RedLock first = client(cluster, exclude);
          RedLock other = client(cluster, exclude)) {
        Inspection inspection = first.inspect();
        assertEquals(Inspection.Verdict.FAIL, inspection.masters().get(EVICTING).verdict());
        if (exclude) {
          theEvictingMasterNeverVotes(cluster, evicting, first, other);
        } else {
          aSecondClientGetsInThroughTheEvictedKey(cluster, evicting, first, other);
        }
      }
    }
  }

  /**
   * The hazard: one healthy master is cut off, so the lease rests on the evicting master and the
   * other healthy one; once the evicting master drops the key, a second client is granted while the
   * first lease is still valid.
   */
  private static void aSecondClientGetsInThroughTheEvictedKey(
      ChaosCluster cluster, RedisAdmin evicting, RedLock first, RedLock other)
      throws IOException, InterruptedException {
    // 1. One healthy master is cut off: a lease can only come from the other two.
    cluster.proxy(CUT_OFF).disable();
    Lease held;
    try {
      held = first.tryAcquire("job", TTL).orElse(null);
      assertTrue(held != null, "granted by the evicting and the healthy master");
      // 2. Memory pressure on the evicting master until it drops the holder's key.
      fillUntilEvicted(evicting, "job");
    } finally {
      cluster.proxy(CUT_OFF).enable();
    }
    // 3. The cut-off master is back; the first lease is still valid for seconds. The second
    //    client retries for a while, as a real contender does: its first round may meet the
    //    cut-off master still reconnecting on a loaded machine (a 50 ms node timeout).
    Lease second = acquireWithin(other, SECOND_CLIENT_WAIT);
    int violations = second != null && held.isValid() ? 1 : 0;
    System.out.printf(
        "EVICTION excludeUnfitMasters=false: first lease granted, second lease %s;"
            + " %d violation(s) (two valid leases at once)%n",
        second == null ? "refused" : "granted", violations);
    assertEquals(1, violations, "two valid leases at once");
  }

  /**
   * The protection, in two parts. With a healthy master cut off, the first client is refused, and
   * for the right reason: the evicting master answered that it is unfit while the reachable healthy
   * master did not fail and the client reached it (a client that could not connect would not). With
   * every master reachable, the first client holds a lease from the two fit masters; the evicting
   * master is filled until it evicts, and a second client is refused without the evicting master's
   * vote: its outcome there is the exclusion, not a grant (an evicting master that voted would
   * grant, having no key to refuse with).
   */
  private static void theEvictingMasterNeverVotes(
      ChaosCluster cluster, RedisAdmin evicting, RedLock first, RedLock other)
      throws IOException, InterruptedException {
    // 1. One healthy master cut off: no bare quorum without the evicting master.
    cluster.proxy(CUT_OFF).disable();
    QuorumUnavailableException refused;
    Inspection duringTheCut;
    try {
      refused = assertThrows(QuorumUnavailableException.class, () -> first.tryAcquire("job", TTL));
      duringTheCut = first.inspect();
    } finally {
      cluster.proxy(CUT_OFF).enable();
    }
    System.out.println("EVICTION first client refused: " + refused.getMessage());
    List<NodeOutcome> outcomes = refused.outcomes();
    assertUnfit(outcomes.get(EVICTING), "the first client's refusal");
    // The healthy master granted, or had not answered when the round was decided (PENDING); it did
    // not fail. The client reached it at the time: the refusal is the exclusion's doing.
    assertTrue(
        Set.of(NodeOutcome.Status.GRANTED, NodeOutcome.Status.PENDING)
            .contains(outcomes.get(HEALTHY).status()),
        () -> "the reachable healthy master did not fail: " + outcomes);
    assertEquals(
        List.of(Inspection.Verdict.PASS, Inspection.Verdict.FAIL),
        List.of(reachable(duringTheCut, HEALTHY), reachable(duringTheCut, CUT_OFF)),
        () -> "during the cut, the client reaches the healthy master only: " + duringTheCut);
    assertFalse(evicting.exists("job"), "the evicting master was never asked to store the key");

    // 2. Every master reachable: the lease rests on the two fit masters only.
    Lease held = acquireWithin(first, SECOND_CLIENT_WAIT);
    assertTrue(held != null, "the two fit masters grant");
    fillUntilFull(evicting);
    LockTakenException taken =
        assertThrows(
            LockTakenException.class,
            () -> other.acquire("job", TTL, SECOND_CLIENT_WAIT),
            "a second client while the first lease is valid");
    System.out.println("EVICTION second client refused: " + taken.getMessage());
    assertTrue(held.isValid(), "the first lease outlived the second client's wait");
    assertUnfit(taken.outcomes().get(EVICTING), "the second client's refusal");
    held.close();
  }

  /** The verdict of the preflight's reachability check of master {@code i}. */
  private static Inspection.Verdict reachable(Inspection inspection, int i) {
    return inspection.masters().get(i).checks().stream()
        .filter(check -> check.name().equals("reachable"))
        .map(Inspection.Check::verdict)
        .findFirst()
        .orElseThrow(() -> new AssertionError("no reachability check: " + inspection));
  }

  /** The evicting master's outcome: it did not vote, because it is unfit. */
  private static void assertUnfit(NodeOutcome outcome, String when) {
    assertEquals(
        NodeOutcome.Status.FAILED,
        outcome.status(),
        () -> "the evicting master must not vote in " + when + ": " + outcome);
    assertTrue(
        outcome.detail().contains("unfit for Redlock"),
        () -> "the evicting master is excluded as unfit in " + when + ": " + outcome);
  }

  private static RedLock client(ChaosCluster cluster, boolean exclude) {
    RedLock redlock =
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(Duration.ofMillis(50))
            .excludeUnfitMasters(exclude)
            .restartGuard(exclude)
            .build();
    redlock.admitFreshNodes();
    return redlock;
  }

  /** {@link RedLock#acquire} for at most {@code maxWait}; null when it ran out. */
  private static Lease acquireWithin(RedLock redlock, Duration maxWait)
      throws InterruptedException {
    try {
      return redlock.acquire("job", TTL, maxWait);
    } catch (LockTakenException | QuorumUnavailableException e) {
      System.out.println("EVICTION second client refused: " + e.getMessage());
      return null;
    }
  }

  /** Writes junk until {@code key} is evicted; fails after a deadline. */
  private static void fillUntilEvicted(RedisAdmin evicting, String key) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    String junk = "x".repeat(10_000);
    for (int i = 0; evicting.exists(key); i++) {
      assertTrue(System.nanoTime() - deadline < 0, "the key was not evicted within 20 s");
      evicting.set("junk:" + i, junk);
    }
    assertFalse(evicting.exists(key));
  }

  /** Writes junk until the master has evicted something. */
  private static void fillUntilFull(RedisAdmin evicting) {
    String junk = "x".repeat(10_000);
    for (int i = 0; i < 1000; i++) {
      evicting.set("more:" + i, junk);
    }
    String stats = String.valueOf(evicting.command("INFO", "stats"));
    assertFalse(stats.contains("evicted_keys:0\r"), "the master is evicting");
  }
}
