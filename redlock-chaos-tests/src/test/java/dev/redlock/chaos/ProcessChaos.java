package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.fail;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLockException;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Helpers shared by the mutual-exclusion and process-fault scenarios: bounded polls, RedLock
 * clients, the counter store, lease records for single holders, and turning a run into a checker
 * report.
 */
final class ProcessChaos {

  private ProcessChaos() {}

  /**
   * A RedLock on {@code uris} with the given node timeout and a short retry delay, and the restart
   * guard off: the Redlock algorithm as specified, whose assumptions these tests break.
   */
  static RedLock redlock(List<String> uris, Duration nodeTimeout) {
    return redlock(uris, nodeTimeout, false);
  }

  /**
   * A RedLock as {@link #redlock(List, Duration)}, with the restart guard on or off. The masters
   * are admitted at once, as an operator would for a brand-new cluster.
   */
  static RedLock redlock(List<String> uris, Duration nodeTimeout, boolean restartGuard) {
    RedLock redlock =
        RedLock.builder()
            .nodes(uris)
            .nodeTimeout(nodeTimeout)
            .retryDelay(Duration.ofMillis(20))
            .restartGuard(restartGuard)
            .build();
    redlock.admitFreshNodes();
    return redlock;
  }

  /** The counter store's address for {@link CounterStore#connect}. */
  static String address(RedisProcess store) {
    return store.host() + ":" + store.port();
  }

  /** The final counter of each resource, read directly from the store. */
  static Map<String, Long> counters(RedisProcess store, Collection<String> resources) {
    Map<String, Long> values = new TreeMap<>();
    for (String resource : resources) {
      String value = store.admin().get(CounterStore.key(resource));
      values.put(resource, value == null ? 0 : Long.parseLong(value));
    }
    return values;
  }

  /** Checks a workload's result against the store's counters. */
  static MutualExclusionChecker.Report check(
      String label,
      Workload workload,
      Workload.Result result,
      RedisProcess store,
      Map<String, Long> faults,
      List<String> notes) {
    List<String> all = new ArrayList<>();
    all.add("clients: " + result.totals());
    all.addAll(notes);
    result.errors().forEach((client, error) -> all.add("error " + client + ": " + error));
    return MutualExclusionChecker.check(
        label,
        result.stats().size(),
        result.leases(),
        result.incrementsByResource(),
        counters(store, workload.resources()),
        faults,
        all);
  }

  /**
   * Waits until {@code condition} holds, looking every few milliseconds.
   *
   * @throws AssertionError with {@code message} if it does not hold within {@code timeout}
   */
  static void awaitTrue(Duration timeout, BooleanSupplier condition, Supplier<String> message) {
    Poll.until(timeout, condition, message);
  }

  /** Which of {@code nodes} hold {@code key}, read directly. */
  /**
   * How many keys a master holds besides the library's own ({@code redlock:...}: fences, marker).
   */
  static long userKeys(RedisProcess node) {
    Object keys = node.admin().command("KEYS", "*");
    return ((List<?>) keys)
        .stream().map(String::valueOf).filter(k -> !k.startsWith("redlock:")).count();
  }

  static List<Integer> holders(List<RedisProcess> nodes, String key) {
    List<Integer> holders = new ArrayList<>();
    for (int i = 0; i < nodes.size(); i++) {
      if (nodes.get(i).admin().exists(key)) {
        holders.add(i);
      }
    }
    return holders;
  }

  /** One client's hold of one lease, recorded as the workload records it. */
  static final class Holding {
    final String client;
    final Lease lease;
    final long acquiredAt;
    final long deadline;
    private long releasedAt;
    private boolean released;

    Holding(String client, Lease lease, long acquiredAt) {
      this.client = client;
      this.lease = lease;
      this.acquiredAt = acquiredAt;
      this.deadline = Workload.deadlineOf(lease, acquiredAt);
    }

    /** Releases the lease; the record then ends at the start of the release. */
    void release() {
      if (!released) {
        released = true;
        releasedAt = System.nanoTime();
        lease.release();
      }
    }

    /** The record: valid until the earlier of the release and the deadline. */
    LeaseRecord record() {
      long until = released && releasedAt - deadline < 0 ? releasedAt : deadline;
      return new LeaseRecord(client, lease.resource(), acquiredAt, until);
    }

    /** Milliseconds of this lease's validity left at {@code nanos} (negative once past). */
    double validityLeftAt(long nanos) {
      return (deadline - nanos) / 1e6;
    }

    /** Milliseconds from this lease's acquisition to {@code nanos}. */
    double millisSinceAcquiredAt(long nanos) {
      return (nanos - acquiredAt) / 1e6;
    }
  }

  /**
   * Acquires {@code resource} once.
   *
   * @throws AssertionError if the round does not grant it
   */
  static Holding acquire(String client, RedLock redlock, String resource, Duration ttl) {
    Optional<Lease> lease = redlock.tryAcquire(resource, ttl);
    long at = System.nanoTime();
    if (lease.isEmpty()) {
      fail(client + " could not acquire " + resource);
    }
    return new Holding(client, lease.get(), at);
  }

  /**
   * Tries to acquire {@code resource} in rounds until one grants it or {@code untilNanos} passes:
   * the second client of a scenario. Rounds that fail for any reason are retried.
   *
   * @return the first grant, or empty if none came in time
   */
  static Optional<Holding> firstGrant(
      String client, RedLock redlock, String resource, Duration ttl, long untilNanos) {
    while (System.nanoTime() - untilNanos < 0) {
      try {
        Optional<Lease> lease = redlock.tryAcquire(resource, ttl);
        long at = System.nanoTime();
        if (lease.isPresent()) {
          return Optional.of(new Holding(client, lease.get(), at));
        }
      } catch (RedLockException e) {
        // masters still coming back: try again
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // the contender's schedule
    }
    return Optional.empty();
  }

  /** Checks single holds (no counter, no faults counted by a nemesis). */
  static MutualExclusionChecker.Report checkHolds(
      String label, List<LeaseRecord> records, Map<String, Long> faults, List<String> notes) {
    return MutualExclusionChecker.check(
        label,
        (int) records.stream().map(LeaseRecord::client).distinct().count(),
        records,
        Map.of(),
        Map.of(),
        faults,
        notes);
  }
}
