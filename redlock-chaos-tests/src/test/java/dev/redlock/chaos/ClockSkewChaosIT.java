package dev.redlock.chaos;

import static dev.redlock.chaos.ProcessChaos.acquire;
import static dev.redlock.chaos.ProcessChaos.firstGrant;
import static dev.redlock.chaos.ProcessChaos.holders;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.chaos.ProcessChaos.Holding;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Masters whose clocks run fast (libfaketime {@code "+0 x2"}: twice the real rate), so Redis
 * expires their keys after half the TTL while the client, measuring on its own monotonic clock,
 * still trusts the lease for the whole validity. Fast clocks on a minority are harmless while A's
 * lease stands on the other masters too; on a majority, a second client is granted the lock while
 * A's lease is valid, and the checker must see it. A fast minority does the same when A's quorum
 * was bare (exactly N/2+1) and included it.
 *
 * <p>Needs {@code faketime} (Debian/Ubuntu: {@code apt-get install faketime}); skipped without it.
 */
class ClockSkewChaosIT {

  private static final int MASTERS = 5;
  private static final String RATE = "+0 x2";
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  private static final Duration TTL = Duration.ofSeconds(2);

  @BeforeEach
  void needsFaketime() {
    assumeTrue(
        RedisProcess.clockRateSupported(),
        "faketime is not installed (apt-get install faketime): skipping the clock-skew scenarios");
  }

  @Test
  void fastClocksOnAMinorityExpireItsKeysEarlyButNoSecondClientGetsIn() throws Exception {
    Set<Integer> fast = Set.of(0, 1);
    try (RedisCluster cluster = start(fast)) {
      Scenario run = holdWhileBTries(cluster, fast, false);
      MutualExclusionChecker.Report report =
          ProcessChaos.checkHolds(
              "clock-skew: nodes [0, 1] of 5 at " + RATE + ", A's lease on all five",
              run.records(),
              Map.of("clock_x2", 2L),
              run.notes());
      report.print(System.out);

      assertAll(
          () -> assertEquals(0, report.violations(), "overlapping leases"),
          () -> assertTrue(run.second().isEmpty(), "B granted while A held: " + run.notes()),
          () ->
              assertTrue(
                  run.fastKeysGoneAt() - run.first().deadline < 0,
                  "the fast masters dropped A's key before A's lease ended: " + run.notes()),
          () -> assertTrue(run.laterGrant().isPresent(), "B acquires once A's lease ran out"));
    }
  }

  @Test
  void fastClocksOnAMajorityLetASecondClientInWhileTheFirstLeaseIsValid() throws Exception {
    Set<Integer> fast = Set.of(0, 1, 2);
    try (RedisCluster cluster = start(fast)) {
      Scenario run = holdWhileBTries(cluster, fast, false);
      MutualExclusionChecker.Report report =
          ProcessChaos.checkHolds(
              "clock-skew: nodes [0, 1, 2] of 5 at " + RATE + " (assumption broken)",
              run.records(),
              Map.of("clock_x2", 3L),
              run.notes());
      report.print(System.out);

      assertTrue(run.second().isPresent(), "B was never granted the lock: " + run.notes());
      assertEquals(1, report.violations(), "the checker must see B's lease overlap A's");
      // The keys ran out at about half the TTL, so B got in about halfway through A's lease.
      double into = run.first().millisSinceAcquiredAt(run.second().get().acquiredAt);
      assertTrue(into > TTL.toMillis() * 0.3 && into < TTL.toMillis() * 0.8, "B got in at " + into);
    }
  }

  @Test
  void fastClocksOnAMinorityInsideTheHoldersBareQuorumLetASecondClientIn() throws Exception {
    // Not only a fast majority: a fast minority suffices when A's quorum was exactly 3 of 5 and
    // included both fast masters. A straggler's keys on 3 and 4 outvoted A there and were then
    // released; when 0 and 1 drop A's key early, {0, 1, 3, 4} is a majority without A.
    Set<Integer> fast = Set.of(0, 1);
    try (RedisCluster cluster = start(fast)) {
      Scenario run = holdWhileBTries(cluster, fast, true);
      MutualExclusionChecker.Report report =
          ProcessChaos.checkHolds(
              "clock-skew: nodes [0, 1] of 5 at "
                  + RATE
                  + ", A's bare quorum [0, 1, 2] (assumption broken)",
              run.records(),
              Map.of("clock_x2", 2L),
              run.notes());
      report.print(System.out);

      assertTrue(run.second().isPresent(), "B was never granted the lock: " + run.notes());
      assertEquals(1, report.violations(), "the checker must see B's lease overlap A's");
    }
  }

  private static RedisCluster start(Set<Integer> fast) {
    return RedisCluster.start(
        MASTERS,
        i -> fast.contains(i) ? RedisProcess.builder().clockRate(RATE) : RedisProcess.builder());
  }

  /**
   * What happened while A held its lease and B kept trying.
   *
   * @param records both leases, recorded while they were held
   * @param fastKeysGoneAt when the last fast master had dropped A's key
   * @param laterGrant when B was granted the lock after A's lease ran out (A never released), if B
   *     was not granted it before
   */
  private record Scenario(
      Holding first,
      Optional<Holding> second,
      List<LeaseRecord> records,
      List<Integer> quorumOfA,
      long fastKeysGoneAt,
      Optional<Long> laterGrant) {

    List<String> notes() {
      List<String> notes = new ArrayList<>();
      notes.add(
          String.format(
              "A granted by nodes %s, valid for %.0f ms; the fast masters dropped its key %.0f ms"
                  + " in",
              quorumOfA,
              (first.deadline - first.acquiredAt) / 1e6,
              first.millisSinceAcquiredAt(fastKeysGoneAt)));
      notes.add(
          second
              .map(
                  s ->
                      String.format(
                          "B granted %.0f ms into A's lease, with %.0f ms of A's validity left",
                          first.millisSinceAcquiredAt(s.acquiredAt),
                          first.validityLeftAt(s.acquiredAt)))
              .orElse("B tried throughout A's validity and was never granted the lock"));
      laterGrant.ifPresent(
          at ->
              notes.add(
                  String.format(
                      "B granted %.0f ms after A's validity ended (A never released)",
                      -first.validityLeftAt(at))));
      return notes;
    }
  }

  /**
   * A acquires and holds for its whole validity (with {@code bareQuorum}, a straggler holding nodes
   * 3 and 4 makes A's quorum exactly nodes 0 to 2, then releases); B tries throughout, on its own
   * thread, while this one watches the fast masters drop A's key. If B was not granted the lock, it
   * tries again until A's keys expire everywhere. Records both leases while held, then releases.
   */
  private static Scenario holdWhileBTries(
      RedisCluster cluster, Set<Integer> fast, boolean bareQuorum) throws InterruptedException {
    String resource = "chaos:clock-skew";
    try (RedLock a = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT);
        RedLock b = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT);
        RedLock straggler = ProcessChaos.redlock(cluster.uris().subList(3, 5), NODE_TIMEOUT)) {
      Optional<Holding> c =
          bareQuorum ? Optional.of(acquire("C", straggler, resource, TTL)) : Optional.empty();
      Holding first = acquire("A", a, resource, TTL);
      c.ifPresent(Holding::release); // deletes only C's keys: what is left is A's quorum
      List<Integer> quorumOfA = holders(cluster.nodes(), resource);
      String tokenOfA = tokenDigest(cluster.node(0), resource);

      Contender contender = new Contender(b, resource, first.deadline);
      Thread thread = new Thread(contender, "contender-B");
      thread.setDaemon(true);
      thread.start();
      long fastKeysGoneAt;
      try {
        fastKeysGoneAt =
            awaitDropped(cluster, fast, resource, tokenOfA, first.deadline + TTL.toNanos());
      } finally {
        thread.join(TTL.toMillis() * 3);
      }
      assertTrue(!thread.isAlive(), "B's attempts stopped when A's lease ended");
      // B's outcome counts only if B's thread ran to its end; a thread that died was never granted
      // the lock either, but proves nothing.
      assertEquals(null, contender.error.get(), "B's thread failed");
      Optional<Holding> second = contender.grant;
      if (second.isEmpty()) {
        // Refused, not merely unable to reach the masters: B's rounds were answered, and some came
        // after the fast masters had dropped A's key, while A's lease was still valid.
        long lastRefused = contender.lastRefusedAt;
        assertTrue(
            contender.refused > 0 && lastRefused - fastKeysGoneAt > 0,
            () ->
                String.format(
                    "B was refused %d times (%d rounds unavailable), the last %.0f ms after the"
                        + " fast masters dropped A's key: B must be refused after that",
                    contender.refused,
                    contender.unavailable,
                    (lastRefused - fastKeysGoneAt) / 1e6));
      }
      List<LeaseRecord> records = new ArrayList<>(List.of(first.record()));
      second.ifPresent(s -> records.add(s.record()));

      Optional<Holding> later =
          second.isPresent()
              ? Optional.empty()
              : firstGrant("B", b, resource, TTL, first.deadline + TTL.toNanos() * 2);
      Optional<Long> laterGrant = later.map(h -> h.acquiredAt);
      later.ifPresent(Holding::release);
      second.ifPresent(Holding::release);
      first.release();
      return new Scenario(first, second, records, quorumOfA, fastKeysGoneAt, laterGrant);
    }
  }

  /**
   * B's attempts while A's lease is valid, on B's own thread: rounds until one grants the lock or
   * A's deadline passes. Counts the rounds that the masters refused (the lock taken) apart from
   * those that too few masters answered, and keeps whatever ended the thread abnormally.
   */
  private static final class Contender implements Runnable {
    private final RedLock redlock;
    private final String resource;
    private final long untilNanos;
    final AtomicReference<Throwable> error = new AtomicReference<>();
    // Written by B's thread, read after joining it.
    volatile Optional<Holding> grant = Optional.empty();
    volatile int refused;
    volatile int unavailable;
    volatile long lastRefusedAt;

    Contender(RedLock redlock, String resource, long untilNanos) {
      this.redlock = redlock;
      this.resource = resource;
      this.untilNanos = untilNanos;
    }

    @Override
    public void run() {
      try {
        while (System.nanoTime() - untilNanos < 0) {
          try {
            Optional<Lease> lease = redlock.tryAcquire(resource, TTL);
            long at = System.nanoTime();
            if (lease.isPresent()) {
              grant = Optional.of(new Holding("B", lease.get(), at));
              return;
            }
            refused++;
            lastRefusedAt = at;
          } catch (QuorumUnavailableException e) {
            unavailable++;
          }
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // the contender's schedule
        }
      } catch (Throwable t) {
        error.set(t);
      }
    }
  }

  /**
   * Polls until none of {@code nodes} holds A's token under {@code key} any more (it expired, or B
   * has since set its own); returns when, or fails at the deadline.
   */
  private static long awaitDropped(
      RedisCluster cluster, Set<Integer> nodes, String key, String tokenOfA, long deadline) {
    while (true) {
      boolean dropped =
          nodes.stream().noneMatch(i -> tokenOfA.equals(tokenDigest(cluster.node(i), key)));
      long now = System.nanoTime();
      if (dropped) {
        return now;
      }
      if (now - deadline > 0) {
        throw new AssertionError("the fast masters still hold A's " + key);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
    }
  }

  /** The SHA-1 of the token stored under {@code key} (tokens are binary), or null if none. */
  private static String tokenDigest(RedisProcess node, String key) {
    return (String)
        node.admin()
            .command(
                "EVAL",
                "local v = redis.call('GET', KEYS[1]) if v then return redis.sha1hex(v) end"
                    + " return false",
                "1",
                key);
  }
}
