package dev.redlock.drill;

import dev.redlock.Lease;
import dev.redlock.LeaseLostException;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.drill.DrillChecks.Grant;
import dev.redlock.drill.DrillChecks.Window;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One drill worker (see {@link Drill} for what it does): its own RedLock, its own tallies; read
 * them only after joining its thread.
 */
final class DrillWorker implements Runnable {

  private static final long BACKOFF_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final long BACKOFF_MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  private final Duration ttl;
  private final RedLock redlock;
  final Counter counter;
  private final long start;
  private final long deadline;
  private final CountDownLatch finished;
  private final RoundLog.Live live;

  long acquisitions;
  long decrements;
  long failedRounds;
  long unavailableRounds;
  long longWaits;
  long expiredBeforeWrite;
  final Samples acquireLatency = new Samples();
  final Samples waitLatency = new Samples();
  final List<Window> windows = new ArrayList<>();
  final List<Grant> grants = new ArrayList<>();
  Throwable failure;

  DrillWorker(
      Duration ttl,
      RedLock redlock,
      Counter counter,
      long start,
      long deadline,
      CountDownLatch finished,
      RoundLog.Live live) {
    this.ttl = ttl;
    this.redlock = redlock;
    this.counter = counter;
    this.start = start;
    this.deadline = deadline;
    this.finished = finished;
    this.live = live;
  }

  @Override
  public void run() {
    try {
      while (!counter.soldOut) {
        Optional<Lease> lease = awaitLease();
        if (lease.isEmpty()) {
          break;
        }
        holdAndDecrement(lease.get());
      }
    } catch (InterruptedException e) {
      // Told to stop by the drill; what was recorded so far stands.
    } catch (Throwable e) {
      failure = e;
    } finally {
      finished.countDown();
    }
  }

  /** Retries tryAcquire with a short random backoff; empty when the time is up. */
  private Optional<Lease> awaitLease() throws InterruptedException {
    long waitStart = System.nanoTime();
    while (!counter.soldOut && System.nanoTime() - deadline < 0) {
      long before = System.nanoTime();
      Optional<Lease> lease;
      try {
        lease = redlock.tryAcquire(Drill.RESOURCE, ttl);
      } catch (QuorumUnavailableException e) {
        unavailableRounds++;
        lease = null;
      }
      long token = 0;
      if (lease != null && lease.isPresent()) {
        try {
          token = lease.get().fencingToken(); // stored by a quorum round when first read
        } catch (QuorumUnavailableException | LeaseLostException e) {
          // Granted, but its token could not be stored on a majority: not used, released.
          lease.get().release();
          unavailableRounds++;
          lease = null;
        }
      }
      long after = System.nanoTime();
      if (lease != null && lease.isPresent()) {
        acquisitions++;
        live.acquired();
        // In the order of grants: acquireLatency.get(i) is the call that returned grants.get(i).
        acquireLatency.add(after - before);
        waitLatency.add(after - waitStart);
        grants.add(new Grant(Drill.RESOURCE, after - start, token));
        return lease;
      }
      if (lease != null) {
        failedRounds++;
        live.refusedRound();
      }
      if (after - waitStart > Drill.MAX_WAIT.toNanos()) {
        longWaits++;
        waitStart = after;
      }
      long backoff = ThreadLocalRandom.current().nextLong(BACKOFF_MIN_NANOS, BACKOFF_MAX_NANOS);
      TimeUnit.NANOSECONDS.sleep(backoff);
    }
    return Optional.empty();
  }

  private void holdAndDecrement(Lease lease) {
    long from = System.nanoTime();
    // Read the remaining validity first: the deadline computed is then a little late, never
    // early, so the window is never shorter than the lease really was.
    long remaining = lease.remainingValidity().toNanos();
    long validUntil = System.nanoTime() + remaining;
    try {
      long seen = counter.value;
      if (seen <= 0) {
        counter.soldOut = true;
        return;
      }
      Thread.yield();
      if (!lease.isValid()) {
        expiredBeforeWrite++;
        return;
      }
      counter.value = seen - 1;
      decrements++;
    } finally {
      long end = System.nanoTime();
      lease.close();
      long to = end - validUntil < 0 ? end : validUntil;
      windows.add(new Window(from - start, to - start));
    }
  }

  /** The guarded counter; see {@link Drill} for why volatile and why that is not enough. */
  static final class Counter {
    volatile long value;
    volatile boolean soldOut;

    Counter(long value) {
      this.value = value;
    }
  }
}
