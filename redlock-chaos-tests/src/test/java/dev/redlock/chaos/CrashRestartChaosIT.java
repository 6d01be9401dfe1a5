package dev.redlock.chaos;

import static dev.redlock.chaos.ProcessChaos.acquire;
import static dev.redlock.chaos.ProcessChaos.address;
import static dev.redlock.chaos.ProcessChaos.firstGrant;
import static dev.redlock.chaos.ProcessChaos.holders;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.chaos.ProcessChaos.Holding;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * SIGKILL and restart of masters. Without persistence a restarted master comes back empty and votes
 * again; Redlock is safe only if it stays out for longer than the longest TTL ("delayed restart")
 * or runs with {@code appendfsync always}. Within that assumption leases never overlap, with the
 * restart guard off (the delayed restart alone); a master of a bare quorum back empty before a TTL
 * has passed, or an empty majority back inside a TTL, lets a second client in while the first lease
 * is valid, and the checker must see it; the restart guard, or an fsynced append-only file, makes
 * the same restart harmless.
 */
class CrashRestartChaosIT {

  private static final int MASTERS = 5;
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  private static final Duration TTL = Duration.ofSeconds(1);
  private static final Duration HOLD_TTL = Duration.ofSeconds(10);
  private static final Duration RUN = Duration.ofSeconds(8);
  private static final Duration BARE_TTL = Duration.ofSeconds(3);

  @Test
  void aMinorityKilledAndRestartedAfterTheTtlNeverLetsLeasesOverlap() throws Exception {
    // The restart guard is off: the delayed restart alone must keep leases exclusive, also those
    // held into their validity (whose windows end at their deadlines, not their releases).
    try (RedisCluster cluster = RedisCluster.start(MASTERS);
        RedisProcess store = RedisProcess.start()) {
      Workload workload =
          Workload.builder(cluster.uris(), address(store))
              .clients(4, "t")
              .resources(2)
              .ttl(TTL)
              .nodeTimeout(NODE_TIMEOUT)
              .restartGuard(false)
              // A hold past its validity blocks its resource for about a TTL: 5% keeps a few such
              // holds
              // (asserted below) without starving the run of acquisitions (74 at 10% in one run).
              .overrunChance(0.05)
              .build();
      Nemesis nemesis =
          Nemesis.builder(MASTERS)
              .processes(cluster.nodes())
              .faults(EnumSet.of(Nemesis.Fault.KILL_RESTART))
              .withinAssumptions(TTL)
              .gap(Duration.ofMillis(50), Duration.ofMillis(150))
              .build();
      Workload.Result result;
      nemesis.start();
      try {
        result = workload.run(RUN);
      } finally {
        nemesis.stop();
      }
      MutualExclusionChecker.Report report =
          ProcessChaos.check(
              "crash-restart: a minority (1-2 of 5) SIGKILLed, restarted empty after the TTL,"
                  + " restart guard off",
              workload,
              result,
              store,
              nemesis.faultsByKind(),
              List.of("nemesis: " + nemesis.describe(), "nemesis events: " + nemesis.events()));
      report.print(System.out);

      assertAll(
          () -> assertEquals(0, report.violations(), "overlapping leases"),
          () -> assertEquals(0, report.lostUpdates(), "lost updates"),
          () -> assertTrue(report.acquisitions() > 50, "acquisitions: " + report.acquisitions()),
          () -> assertTrue(result.total("overran") >= 3, "held past validity: " + result.totals()),
          () -> assertTrue(nemesis.faultCount() >= 4, "restarts: " + nemesis.events()),
          () -> assertEquals(List.of(), nemesis.errors(), "nemesis errors"),
          () -> assertEquals(Map.of(), result.errors(), "client errors"));
    }
  }

  @Test
  void aMajorityRestartedEmptyInsideTheTtlLetsASecondClientInWhileTheFirstLeaseIsValid()
      throws Exception {
    try (RedisCluster cluster = RedisCluster.start(MASTERS)) {
      Outcome outcome = restartMajorityWhileHolding(cluster, "crash-restart-empty", false);

      MutualExclusionChecker.Report report =
          ProcessChaos.checkHolds(
              "crash-restart: majority [0, 1, 2] of 5 SIGKILLed and restarted empty inside the"
                  + " TTL (assumption broken)",
              outcome.records(),
              Map.of("kill_restart", 3L),
              outcome.notes());
      report.print(System.out);

      assertTrue(outcome.second().isPresent(), "B was never granted the lock: " + outcome.notes());
      assertEquals(1, report.violations(), "the checker must see B's lease overlap A's");
    }
  }

  @Test
  void theRestartGuardKeepsTheSameEmptyMajorityRestartFromGrantingASecondLease() throws Exception {
    try (RedisCluster cluster = RedisCluster.start(MASTERS)) {
      Outcome outcome = restartMajorityWhileHolding(cluster, "crash-restart-guarded", true);

      MutualExclusionChecker.Report report =
          ProcessChaos.checkHolds(
              "crash-restart: majority [0, 1, 2] of 5 SIGKILLed and restarted empty inside the"
                  + " TTL, restart guard on",
              outcome.records(),
              Map.of("kill_restart", 3L),
              outcome.notes());
      report.print(System.out);

      assertAll(
          () -> assertEquals(0, report.violations(), "overlapping leases"),
          () ->
              assertTrue(
                  outcome.second().isEmpty(), "the young masters voted for B: " + outcome.notes()));
    }
  }

  @Test
  void withAnFsyncedAppendOnlyFileTheSameMajorityRestartKeepsTheLeaseExclusive() throws Exception {
    try (RedisCluster cluster =
        RedisCluster.start(MASTERS, i -> RedisProcess.builder().persistence(true))) {
      Outcome outcome = restartMajorityWhileHolding(cluster, "crash-restart-aof", false);

      MutualExclusionChecker.Report report =
          ProcessChaos.checkHolds(
              "crash-restart: majority [0, 1, 2] of 5 SIGKILLed and restarted inside the TTL,"
                  + " appendfsync always",
              outcome.records(),
              Map.of("kill_restart", 3L),
              outcome.notes());
      report.print(System.out);

      assertAll(
          () -> assertEquals(0, report.violations(), "overlapping leases"),
          () ->
              assertEquals(
                  List.of(0, 1, 2, 3, 4),
                  outcome.holdersAfterRestart(),
                  "every master has A's key back from its append-only file"),
          () ->
              assertTrue(outcome.second().isEmpty(), "B granted while A held: " + outcome.notes()));
    }
  }

  @Test
  void anEmptyRestartOfOneMasterInTheHoldersBareQuorumLetsASecondClientIn() throws Exception {
    // A minority restart is unsafe too when it is inside the TTL: if A's quorum was exactly 3 of 5
    // (another client's leftover keys on nodes 3 and 4 outvoted it there), then node 0 coming back
    // empty joins 3 and 4 in a second majority. The spec's delayed restart exists for this case.
    try (RedisCluster cluster = RedisCluster.start(MASTERS);
        RedLock a = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT);
        RedLock b = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT);
        RedLock straggler = ProcessChaos.redlock(cluster.uris().subList(3, 5), NODE_TIMEOUT)) {
      String resource = "chaos:crash-restart-bare-quorum";
      // A client whose round reached only nodes 3 and 4, about to release (e.g. a split vote).
      Holding c = acquire("C", straggler, resource, HOLD_TTL);
      long[] setsBefore = setCalls(cluster, 3, 4);
      Holding first = acquire("A", a, resource, HOLD_TTL);
      awaitSetCalls(cluster, setsBefore, 3, 4); // A's round may be decided before 3 and 4 answer
      c.release(); // deletes only C's keys: what is left is A's quorum
      List<Integer> quorumOfA = holders(cluster.nodes(), resource);
      cluster.node(0).kill();
      cluster.node(0).restart();
      long restartedAt = System.nanoTime();
      Optional<Holding> second = firstGrant("B", b, resource, HOLD_TTL, first.deadline);
      List<LeaseRecord> records = new ArrayList<>(List.of(first.record()));
      second.ifPresent(s -> records.add(s.record()));
      List<String> notes =
          List.of(
              "A was granted by nodes " + quorumOfA + " (C held 3 and 4); node 0 restarted empty",
              second
                  .map(s -> grantedAfterRestart(first, s, restartedAt))
                  .orElse("B was never granted the lock while A's lease was valid"));
      MutualExclusionChecker.Report report =
          ProcessChaos.checkHolds(
              "crash-restart: node 0 of A's bare quorum [0, 1, 2] restarted empty inside the TTL"
                  + " (assumption broken)",
              records,
              Map.of("kill_restart", 1L),
              notes);
      report.print(System.out);
      second.ifPresent(Holding::release);
      first.release();

      assertEquals(List.of(0, 1, 2), quorumOfA, "A's quorum was bare");
      assertTrue(second.isPresent(), "B was never granted the lock: " + notes);
      assertEquals(1, report.violations(), "the checker must see B's lease overlap A's");
    }
  }

  @Test
  void withTheRestartGuardOffARestartDelayedByTheTtlAloneKeepsABareQuorumExclusive()
      throws Exception {
    // The spec's "delayed restart": node 0 of A's bare quorum comes back empty, but only a TTL
    // after it died, by which time A's lease has run out. No guard, no persistence.
    BareQuorumRestart outcome = restartOneOfABareQuorum("delayed-restart", BARE_TTL);

    assertAll(
        () -> assertEquals(List.of(0, 1, 2), outcome.quorumOfA(), "A's quorum was bare"),
        () -> assertTrue(outcome.second().isPresent(), "B was never granted: " + outcome.notes()),
        () -> assertEquals(0, outcome.report().violations(), "overlapping leases"));
  }

  @Test
  void withTheRestartGuardOffARestartDelayedByLessThanTheTtlLetsASecondClientIn() throws Exception {
    // The same restart a tenth of the TTL after the kill: node 0 comes back empty while A's lease
    // is valid and joins nodes 3 and 4 in B's majority.
    BareQuorumRestart outcome = restartOneOfABareQuorum("early-restart", BARE_TTL.dividedBy(10));

    assertAll(
        () -> assertEquals(List.of(0, 1, 2), outcome.quorumOfA(), "A's quorum was bare"),
        () -> assertTrue(outcome.second().isPresent(), "B was never granted: " + outcome.notes()),
        () ->
            assertTrue(
                outcome.second().get().acquiredAt - outcome.restartedAt() > 0,
                "B was granted only after node 0 came back: " + outcome.notes()),
        () ->
            assertEquals(
                1, outcome.report().violations(), "the checker must see B's lease overlap A's"));
  }

  /** What happened when node 0 of A's bare quorum was killed and restarted after a delay. */
  private record BareQuorumRestart(
      List<Integer> quorumOfA,
      Optional<Holding> second,
      long restartedAt,
      List<String> notes,
      MutualExclusionChecker.Report report) {}

  /**
   * A holds a lease ({@link #BARE_TTL}) granted by exactly nodes 0, 1 and 2 (a straggler C held 3
   * and 4 during A's round, then released them); node 0 is SIGKILLed at once and restarted empty
   * {@code restartDelay} after the kill, while B tries every 10 ms from the kill until a TTL after
   * A's deadline. Every client has the restart guard off: the Redlock algorithm as specified, with
   * the delayed restart as its only defence. Releases both leases and prints the report.
   */
  private static BareQuorumRestart restartOneOfABareQuorum(String name, Duration restartDelay)
      throws Exception {
    try (RedisCluster cluster = RedisCluster.start(MASTERS);
        RedLock a = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT);
        RedLock b = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT);
        RedLock straggler = ProcessChaos.redlock(cluster.uris().subList(3, 5), NODE_TIMEOUT)) {
      String resource = "chaos:crash-restart-" + name;
      Holding c = acquire("C", straggler, resource, BARE_TTL);
      long[] setsBefore = setCalls(cluster, 3, 4);
      Holding first = acquire("A", a, resource, BARE_TTL);
      awaitSetCalls(cluster, setsBefore, 3, 4);
      c.release();
      List<Integer> quorumOfA = holders(cluster.nodes(), resource);
      cluster.node(0).kill();
      long restartAt = System.nanoTime() + restartDelay.toNanos();
      CompletableFuture<Long> restarted =
          CompletableFuture.supplyAsync(
              () -> {
                // The operator's schedule: the master stays down until then.
                for (long left = restartAt - System.nanoTime();
                    left > 0;
                    left = restartAt - System.nanoTime()) {
                  LockSupport.parkNanos(left);
                }
                cluster.node(0).restart();
                return System.nanoTime();
              });
      Optional<Holding> second =
          firstGrant("B", b, resource, BARE_TTL, first.deadline + BARE_TTL.toNanos());
      long restartedAt = restarted.get(30, TimeUnit.SECONDS);
      List<LeaseRecord> records = new ArrayList<>(List.of(first.record()));
      second.ifPresent(s -> records.add(s.record()));
      List<String> notes =
          List.of(
              String.format(
                  "A was granted by nodes %s (C held 3 and 4); node 0 killed %.0f ms into A's"
                      + " lease and restarted empty %d ms later, restart guard off",
                  quorumOfA,
                  first.millisSinceAcquiredAt(restartAt) - restartDelay.toMillis(),
                  restartDelay.toMillis()),
              second
                  .map(s -> grantedAfterRestart(first, s, restartedAt))
                  .orElse("B was never granted the lock"));
      MutualExclusionChecker.Report report =
          ProcessChaos.checkHolds(
              String.format(
                  "crash-restart: node 0 of A's bare quorum [0, 1, 2] restarted empty %d ms after"
                      + " its kill (TTL %d ms), restart guard off",
                  restartDelay.toMillis(), BARE_TTL.toMillis()),
              records,
              Map.of("kill_restart", 1L),
              notes);
      report.print(System.out);
      second.ifPresent(Holding::release);
      first.release();
      return new BareQuorumRestart(quorumOfA, second, restartedAt, notes, report);
    }
  }

  /** How many SET commands each of {@code nodes} has run ({@code INFO commandstats}). */
  private static long[] setCalls(RedisCluster cluster, int... nodes) {
    long[] calls = new long[nodes.length];
    for (int i = 0; i < nodes.length; i++) {
      String info = String.valueOf(cluster.node(nodes[i]).admin().command("INFO", "commandstats"));
      Matcher set = Pattern.compile("cmdstat_set:calls=(\\d+)").matcher(info);
      calls[i] = set.find() ? Long.parseLong(set.group(1)) : 0;
    }
    return calls;
  }

  /**
   * Waits until each of {@code nodes} ran a SET since {@code before}: a round is decided by the
   * first majority, and A's SET NX on C's nodes may still be on its way. Arriving after C's
   * release, it would be granted there, and A's quorum would not be the bare one the scenario
   * needs.
   */
  private static void awaitSetCalls(RedisCluster cluster, long[] before, int... nodes) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    for (long[] now = setCalls(cluster, nodes); ; now = setCalls(cluster, nodes)) {
      boolean all = true;
      for (int i = 0; i < nodes.length; i++) {
        all &= now[i] > before[i];
      }
      if (all) {
        return;
      }
      assertTrue(System.nanoTime() - deadline < 0, "A's SET reached nodes 3 and 4 within 5 s");
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
    }
  }

  /** When B was granted, against the restart and A's lease: a note for the checker's report. */
  private static String grantedAfterRestart(Holding first, Holding second, long restartedAt) {
    return String.format(
        "B granted %.0f ms after the restart, %.0f ms into A's lease, with %.0f ms of A's validity"
            + " left",
        (second.acquiredAt - restartedAt) / 1e6,
        first.millisSinceAcquiredAt(second.acquiredAt),
        first.validityLeftAt(second.acquiredAt));
  }

  /** What happened when A held a lease and a majority restarted. */
  private record Outcome(
      Holding first,
      Optional<Holding> second,
      List<LeaseRecord> records,
      List<Integer> holdersAfterRestart,
      long restartedAt) {

    List<String> notes() {
      return List.of(
          "A's key after the restart on nodes " + holdersAfterRestart,
          second
              .map(s -> grantedAfterRestart(first, s, restartedAt))
              .orElse(
                  String.format(
                      "B tried for all %.0f ms of A's validity and was never granted the lock",
                      (first.deadline - first.acquiredAt) / 1e6)));
    }
  }

  /**
   * A acquires on all five masters (TTL 3 s); nodes 0, 1 and 2 are SIGKILLed and restarted; B then
   * tries until A's lease runs out. Both clients have the restart guard on or off. Releases both
   * leases before returning.
   */
  private static Outcome restartMajorityWhileHolding(
      RedisCluster cluster, String name, boolean restartGuard) {
    String resource = "chaos:" + name;
    try (RedLock a = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT, restartGuard);
        RedLock b = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT, restartGuard)) {
      Holding first = acquire("A", a, resource, Duration.ofSeconds(3));
      assertEquals(List.of(0, 1, 2, 3, 4), holders(cluster.nodes(), resource), "A's key");
      for (int i : List.of(0, 1, 2)) {
        cluster.node(i).kill();
      }
      for (int i : List.of(0, 1, 2)) {
        cluster.node(i).restart();
      }
      long restartedAt = System.nanoTime();
      List<Integer> holdersAfterRestart = holders(cluster.nodes(), resource);
      Optional<Holding> second = firstGrant("B", b, resource, HOLD_TTL, first.deadline);
      // Recorded while both still hold: A meant to keep its lease for its whole validity.
      List<LeaseRecord> records = new ArrayList<>(List.of(first.record()));
      second.ifPresent(s -> records.add(s.record()));
      second.ifPresent(Holding::release);
      first.release();
      return new Outcome(first, second, records, holdersAfterRestart, restartedAt);
    }
  }
}
