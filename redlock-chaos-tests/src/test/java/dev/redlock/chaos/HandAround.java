package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLockException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Contenders, one thread and one RedLock each, handing one lock around until stopped: each waits
 * for it (up to 10 s), holds it 1 ms, releases it and asks again at once. Every hold is recorded
 * with the phase the test was in when it began, and the longest wait and the waits that ran out are
 * kept: for the chaos tests of wake-ups and turns, which change phase as they inject faults and
 * check that no two holds overlapped and that every contender kept getting the lock in every phase.
 */
final class HandAround {

  /** The contenders, each with a RedLock of its own. */
  static final int CONTENDERS = 4;

  static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  static final Duration TTL = Duration.ofSeconds(3);
  static final Duration RETRY_DELAY = Duration.ofMillis(200);

  /** How long a test stays in each phase. */
  static final Duration PHASE = Duration.ofSeconds(3);

  /** The longest wait allowed: the longest timer pause, a reconnect, a few rounds, and slack. */
  static final Duration LONGEST_WAIT = Duration.ofSeconds(3);

  /** One hold: by whom, from when until the end of its validity or its release, in which phase. */
  record Hold(int contender, long from, long validUntil, int phase) {}

  private final ConcurrentLinkedQueue<Hold> holds = new ConcurrentLinkedQueue<>();
  private final AtomicLong longestWait = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();

  /** What ended a contender other than a stop: anything a wait may not throw. */
  private final ConcurrentLinkedQueue<String> crashes = new ConcurrentLinkedQueue<>();

  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicInteger phase = new AtomicInteger();
  private final CountDownLatch done;
  private final int contenders;

  private HandAround(int contenders) {
    this.contenders = contenders;
    this.done = new CountDownLatch(contenders);
  }

  /**
   * The contenders' RedLocks on {@code cluster}: {@value #CONTENDERS}, admitted, with the node
   * timeout and retry delay above and wake-ups on (the default). The caller closes them.
   */
  static List<RedLock> redlocks(ChaosCluster cluster) {
    List<RedLock> redlocks = new ArrayList<>();
    for (int i = 0; i < CONTENDERS; i++) {
      redlocks.add(
          NetworkChaos.admitted(
              RedLock.builder()
                  .nodes(cluster.uris())
                  .nodeTimeout(NODE_TIMEOUT)
                  .retryDelay(RETRY_DELAY)
                  .build()));
    }
    return redlocks;
  }

  /** Starts one contender per RedLock of {@code redlocks} on {@code key}, in phase 0. */
  static HandAround start(List<RedLock> redlocks, String key) {
    Duration ttl = TTL;
    HandAround run = new HandAround(redlocks.size());
    for (int c = 0; c < redlocks.size(); c++) {
      int me = c;
      RedLock redlock = redlocks.get(c);
      Thread thread = new Thread(() -> run.contend(me, redlock, key, ttl), "contender-" + c);
      thread.setDaemon(true);
      thread.start();
    }
    return run;
  }

  private void contend(int me, RedLock redlock, String key, Duration ttl) {
    try {
      while (!stop.get()) {
        long asked = System.nanoTime();
        Lease lease;
        try {
          lease = redlock.acquire(key, ttl, Duration.ofSeconds(10));
        } catch (RedLockException e) {
          failures.incrementAndGet();
          continue;
        }
        long from = System.nanoTime();
        longestWait.accumulateAndGet(from - asked, Math::max);
        long validUntil = from + lease.remainingValidity().toNanos();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1)); // the work under the lock
        holds.add(new Hold(me, from, Math.min(System.nanoTime(), validUntil), phase.get()));
        lease.close();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException | Error e) { // a contender that dies must fail the test, not hide
      crashes.add("contender " + me + " ended with " + e);
    } finally {
      done.countDown();
    }
  }

  /** Holds that begin from now on count in phase {@code p}. */
  void phase(int p) {
    phase.set(p);
  }

  /** Stops every contender after its current hold; returns whether all stopped in {@code wait}. */
  boolean stop(Duration wait) throws InterruptedException {
    stop.set(true);
    return done.await(wait.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** How many holds began before the one before them (by start) ended. */
  private int overlaps() {
    List<Hold> sorted = new ArrayList<>(holds);
    sorted.sort(Comparator.comparingLong(Hold::from));
    int overlaps = 0;
    for (int i = 1; i < sorted.size(); i++) {
      if (sorted.get(i).from() - sorted.get(i - 1).validUntil() < 0) {
        overlaps++;
      }
    }
    return overlaps;
  }

  /** The holds per phase (first index, {@code 0..phases-1}) and contender (second). */
  private int[][] grants(int phases) {
    int[][] grants = new int[phases][contenders];
    for (Hold hold : holds) {
      grants[hold.phase()][hold.contender()]++;
    }
    return grants;
  }

  /**
   * The figures, for the log: holds, grants per phase and contender, the longest wait, failures.
   */
  String summary(int phases) {
    return holds.size()
        + " holds, grants per phase and contender "
        + Arrays.deepToString(grants(phases))
        + ", longest wait "
        + longestWait.get() / 1_000_000
        + " ms, "
        + failures.get()
        + " failed waits";
  }

  /**
   * Asserts, once stopped, what the chaos tests of waiters claim: no contender ended by an
   * exception (a wait may only run out, which counts as a failure), no two holds overlapped, every
   * contender held the lock in each of {@code phases} phases, no wait ran out, and none took longer
   * than {@link #LONGEST_WAIT}.
   */
  void assertEveryoneHeldTheLockInEveryPhase(int phases) {
    assertEquals(List.of(), List.copyOf(crashes), "contenders ended by an exception");
    assertEquals(0, overlaps(), "overlapping leases");
    int[][] grants = grants(phases);
    for (int p = 0; p < phases; p++) {
      for (int c = 0; c < contenders; c++) {
        assertTrue(
            grants[p][c] > 0,
            "contender " + c + " got nothing in phase " + p + ": " + Arrays.deepToString(grants));
      }
    }
    assertEquals(0, failures.get(), "waits that ran out");
    assertTrue(
        longestWait.get() < LONGEST_WAIT.toNanos(),
        "longest wait " + longestWait.get() / 1_000_000 + " ms");
  }

  /**
   * Holds {@code key} with the first of {@code redlocks} while the second waits for it, until
   * {@code seen} holds of the masters (up to 5 s); then releases it and checks that the waiter got
   * the lock.
   */
  static void whileOneWaits(
      List<RedLock> redlocks, String key, BooleanSupplier seen, Supplier<String> what)
      throws InterruptedException {
    try (Lease held = redlocks.get(0).acquire(key, TTL, Duration.ofSeconds(10))) {
      AtomicReference<Throwable> ended = new AtomicReference<>();
      Thread waiter =
          new Thread(
              () -> {
                try {
                  redlocks.get(1).acquire(key, TTL, Duration.ofSeconds(30)).close();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  ended.set(e);
                } catch (RuntimeException | Error e) {
                  ended.set(e); // a waiter that dies is no waiter that got the lock
                }
              },
              "one-waiter");
      waiter.setDaemon(true);
      waiter.start();
      NetworkChaos.awaitTrue(Duration.ofSeconds(5), seen, what);
      held.close();
      waiter.join(TimeUnit.SECONDS.toMillis(30));
      assertTrue(!waiter.isAlive(), "the waiter got the lock");
      assertEquals(null, ended.get(), "what ended the waiter instead of a lease");
    }
  }

  /** Waits out a {@link #PHASE}: the contenders run meanwhile. */
  static void sleepPhase() {
    long until = System.nanoTime() + PHASE.toNanos();
    for (long left = PHASE.toNanos(); left > 0; left = until - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }
}
