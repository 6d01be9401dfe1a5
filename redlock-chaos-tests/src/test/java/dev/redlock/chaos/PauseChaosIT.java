package dev.redlock.chaos;

import static dev.redlock.NodeOutcome.Status.FAILED;
import static dev.redlock.NodeOutcome.Status.GRANTED;
import static dev.redlock.NodeOutcome.Status.TIMED_OUT;
import static dev.redlock.chaos.ProcessChaos.acquire;
import static dev.redlock.chaos.ProcessChaos.address;
import static dev.redlock.chaos.ProcessChaos.awaitTrue;
import static dev.redlock.chaos.ProcessChaos.holders;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.chaos.ProcessChaos.Holding;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * SIGSTOP on masters (a GC pause, a stalled VM): a paused server keeps its sockets, so requests
 * reach it and wait unanswered until SIGCONT. A paused minority must cost neither exclusion nor
 * availability; a paused majority must fail acquires within a bound, and once the masters continue
 * the releases queued behind the stalled acquires must leave no key behind. A paused holder, last,
 * shows what the overlap check cannot see and the guarded counter can.
 */
class PauseChaosIT {

  private static final int MASTERS = 5;
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  private static final Duration RUN = Duration.ofSeconds(5);

  @Test
  void aPausedMinorityLeavesAcquiresWorkingAndLeasesExclusive() throws Exception {
    try (RedisCluster cluster = RedisCluster.start(MASTERS);
        RedisProcess store = RedisProcess.start()) {
      Workload workload =
          Workload.builder(cluster.uris(), address(store))
              .clients(4, "t")
              .resources(2)
              .ttl(Duration.ofSeconds(1))
              .nodeTimeout(NODE_TIMEOUT)
              .build();
      cluster.node(0).pause();
      cluster.node(3).pause();
      Workload.Result result;
      try {
        result = workload.run(RUN);
      } finally {
        cluster.node(0).resume();
        cluster.node(3).resume();
      }
      MutualExclusionChecker.Report report =
          ProcessChaos.check(
              "pause: nodes [0, 3] of 5 stopped (SIGSTOP) for " + RUN.toSeconds() + " s",
              workload,
              result,
              store,
              Map.of("pause", 2L),
              List.of());
      report.print(System.out);

      assertAll(
          () -> assertEquals(0, report.violations(), "overlapping leases"),
          () -> assertEquals(0, report.lostUpdates(), "lost updates"),
          () -> assertTrue(report.acquisitions() > 200, "acquisitions: " + report.acquisitions()),
          () -> assertEquals(0, result.total("unavailable"), "a live majority always answered"),
          () -> assertEquals(Map.of(), result.errors(), "client errors"));
      // Whatever the paused masters queued (acquires, then their releases) runs after SIGCONT.
      awaitTrue(
          Duration.ofSeconds(5),
          () -> cluster.nodes().stream().allMatch(node -> ProcessChaos.userKeys(node) == 0),
          () -> "keys left: " + cluster.nodes().stream().map(ProcessChaos::userKeys).toList());
    }
  }

  @Test
  void aPausedMajorityFailsTheAcquireWithinItsWaitAndLeavesNoKeyAfterResuming() throws Exception {
    try (RedisCluster cluster = RedisCluster.start(MASTERS);
        RedLock redlock = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT)) {
      String resource = "chaos:pause-majority";
      Duration ttl = Duration.ofSeconds(30); // far longer than the test: only releases clear keys
      Duration maxWait = Duration.ofMillis(500);
      for (int i : List.of(0, 1, 2)) {
        cluster.node(i).pause();
      }
      QuorumUnavailableException e;
      long elapsedMillis;
      try {
        long start = System.nanoTime();
        e =
            assertThrows(
                QuorumUnavailableException.class, () -> redlock.acquire(resource, ttl, maxWait));
        elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      } finally {
        for (int i : List.of(0, 1, 2)) {
          cluster.node(i).resume();
        }
      }
      List<NodeOutcome.Status> statuses = e.outcomes().stream().map(NodeOutcome::status).toList();
      System.out.printf(
          "PAUSE majority [0, 1, 2] of 5: acquire failed after %d ms (wait %d ms, node timeout"
              + " %d ms): %s%n",
          elapsedMillis, maxWait.toMillis(), NODE_TIMEOUT.toMillis(), e.outcomes());

      assertAll(
          () ->
              assertTrue(
                  elapsedMillis >= maxWait.toMillis()
                      && elapsedMillis < maxWait.plus(NODE_TIMEOUT).toMillis() + 250,
                  "failed after " + elapsedMillis + " ms"),
          () ->
              assertTrue(
                  statuses.subList(0, 3).stream().allMatch(Set.of(TIMED_OUT, FAILED)::contains),
                  "the paused masters did not answer: " + statuses),
          () -> assertEquals(List.of(GRANTED, GRANTED), statuses.subList(3, 5), "live masters"));
      // After SIGCONT each paused master runs its backlog in order: every SET, then its release.
      awaitTrue(
          Duration.ofSeconds(5),
          () -> holders(cluster.nodes(), resource).isEmpty(),
          () -> "'" + resource + "' still on " + holders(cluster.nodes(), resource));
      // The paused masters' circuit breakers opened; they are probed again after their wait.
      awaitTrue(
          Duration.ofSeconds(5),
          () -> {
            try {
              var lease = redlock.tryAcquire(resource, Duration.ofSeconds(1));
              lease.ifPresent(Lease::close);
              return lease.isPresent();
            } catch (QuorumUnavailableException stillOpen) {
              return false;
            }
          },
          () -> "not acquirable again once the majority is back");
    }
  }

  @Test
  void aHolderStalledPastItsValidityLosesUpdatesThoughNoTwoLeasesOverlap() throws Exception {
    // The README's "pauses end inside the validity", broken: holder A reads the counter, checks
    // its lease, then stalls (its own thread stands in for a GC pause or a SIGSTOP of its process)
    // for longer than its TTL, while the workload's clients contend for the same resource as
    // usual. When A wakes it finishes its read-modify-write. Nothing here orders the writes or
    // counts them for the checker: the others write whenever they hold the lock, every increment
    // is counted where its SET succeeded, and the loss is the counter against those increments.
    // The validity windows never overlap, so only the guarded counter shows the loss: what a
    // fencing token in the store prevents.
    Duration ttl = Duration.ofSeconds(1);
    Duration stall = ttl.multipliedBy(2);
    try (RedisCluster cluster = RedisCluster.start(MASTERS);
        RedisProcess store = RedisProcess.start();
        RedLock a = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT);
        CounterStore storeOfA = CounterStore.connect(address(store))) {
      String resource = "chaos:stalled-holder";
      Workload others =
          Workload.builder(cluster.uris(), address(store))
              .clients(2, "b")
              .resources(List.of(resource))
              .ttl(ttl)
              .nodeTimeout(NODE_TIMEOUT)
              .build();
      Holding first = acquire("A", a, resource, ttl);
      FutureTask<Workload.Result> othersRun = new FutureTask<>(() -> others.run(stall.plus(ttl)));
      Thread thread = new Thread(othersRun, "others");
      thread.setDaemon(true);
      thread.start();

      long readByA = storeOfA.read(resource);
      assertTrue(first.lease.isValid(), "A checked its lease before the stall");
      LockSupport.parkNanos(stall.toNanos()); // the fault: A's stall, not a synchronization
      storeOfA.write(resource, readByA + 1); // A wakes up and finishes its read-modify-write
      long staleWriteAt = System.nanoTime();
      first.release();
      Workload.Result result = othersRun.get(stall.plus(ttl).toSeconds() + 60, TimeUnit.SECONDS);

      List<LeaseRecord> leases = new ArrayList<>(result.leases());
      leases.add(first.record());
      Map<String, Long> increments = new TreeMap<>(result.incrementsByResource());
      increments.merge(resource, 1L, Long::sum); // A's write, which went through
      long othersBefore =
          result.leases().stream().filter(l -> l.acquiredAt() - staleWriteAt < 0).count();
      MutualExclusionChecker.Report report =
          MutualExclusionChecker.check(
              "pause: holder A stalled between its validity check and its write (assumption"
                  + " broken)",
              3,
              leases,
              increments,
              ProcessChaos.counters(store, List.of(resource)),
              Map.of("holder_stall", 1L),
              List.of(
                  "clients: " + result.totals(),
                  String.format(
                      "A stalled %d ms with a %d ms TTL; its stale write landed %.0f ms after its"
                          + " validity ended, after %d leases of the others",
                      stall.toMillis(),
                      ttl.toMillis(),
                      -first.validityLeftAt(staleWriteAt),
                      othersBefore)));
      report.print(System.out);

      assertAll(
          () -> assertEquals(Map.of(), result.errors(), "the other clients' errors"),
          () -> assertEquals(0, report.violations(), "the validity windows did not overlap"),
          () ->
              assertTrue(
                  report.lostUpdates() >= 1,
                  "A's stale write overwrote increments: lost " + report.lostUpdates()));
    }
  }
}
