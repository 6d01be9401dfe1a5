package dev.redlock.chaos;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLockException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Contenders, one thread and one RedLock each, handing one lock around until stopped: each waits
 * for it (up to 10 s), holds it 1 ms, releases it and asks again at once. Every hold is recorded
 * with the phase the test was in when it began, and the longest wait and the waits that ran out are
 * kept: for the chaos tests of wake-ups and turns, which change phase as they inject faults and
 * check that no two holds overlapped and that every contender kept getting the lock in every phase.
 */
final class HandAround {

  /** One hold: by whom, from when until the end of its validity or its release, in which phase. */
  record Hold(int contender, long from, long validUntil, int phase) {}

  private final ConcurrentLinkedQueue<Hold> holds = new ConcurrentLinkedQueue<>();
  private final AtomicLong longestWait = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicInteger phase = new AtomicInteger();
  private final CountDownLatch done;
  private final int contenders;

  private HandAround(int contenders) {
    this.contenders = contenders;
    this.done = new CountDownLatch(contenders);
  }

  /** Starts one contender per RedLock of {@code redlocks} on {@code key}, in phase 0. */
  static HandAround start(List<RedLock> redlocks, String key, Duration ttl) {
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
  int overlaps() {
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
  int[][] grants(int phases) {
    int[][] grants = new int[phases][contenders];
    for (Hold hold : holds) {
      grants[hold.phase()][hold.contender()]++;
    }
    return grants;
  }

  /** Every hold so far. */
  int holds() {
    return holds.size();
  }

  /** The longest wait of an acquisition that was granted. */
  long longestWaitNanos() {
    return longestWait.get();
  }

  /** The waits that ran out (or threw). */
  long failures() {
    return failures.get();
  }

  /** Waits out {@code phase}: the contenders run meanwhile. */
  static void sleep(Duration phase) {
    long until = System.nanoTime() + phase.toNanos();
    for (long left = phase.toNanos(); left > 0; left = until - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }
}
