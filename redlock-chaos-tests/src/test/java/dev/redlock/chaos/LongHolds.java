package dev.redlock.chaos;

import dev.redlock.Lease;
import dev.redlock.LockTakenException;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * The holds of a {@link Workload} client that outlast a short piece of work, so that the checker
 * sees windows end at the deadlines the library computed, not only at releases:
 *
 * <ul>
 *   <li><b>into its validity</b> ({@link #intoValidity}): the lease is kept until around its
 *       deadline, most often past it, and its window ends at the deadline. A deadline later than
 *       the masters' keys live (elapsed time or drift not subtracted, a validity counted from the
 *       wrong start) lets the next holder in while this one is still recorded as valid.
 *   <li><b>renewed</b> ({@link #renewed}): {@link RedLock#withLock} for one to two TTLs; the window
 *       ends at the body's end or at the latest deadline the renewals gave the lease, so a renewal
 *       that promises more than the masters keep shows as an overlap too.
 * </ul>
 *
 * Counts into the client's {@link Workload#STATS}, besides the common ones: {@code overran}, holds
 * kept past their deadline; {@code renewed}, renewed holds; {@code outlived_ttl}, renewed holds
 * still valid (with a tenth of the TTL to spare) after at least one TTL. Confined to the client's
 * thread.
 */
final class LongHolds {

  /** How often a renewed hold looks at its lease's deadline. */
  private static final long RENEWED_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

  private final String client;
  private final RedLock redlock;
  private final Duration ttl;
  private final Duration maxWait;
  private final LeaseHistory history;
  private final Map<String, Long> stats;
  private final Map<String, Long> increments;
  private final Consumer<String> firstError;

  LongHolds(
      String client,
      RedLock redlock,
      Duration ttl,
      Duration maxWait,
      LeaseHistory history,
      Map<String, Long> stats,
      Map<String, Long> increments,
      Consumer<String> firstError) {
    this.client = client;
    this.redlock = redlock;
    this.ttl = ttl;
    this.maxWait = maxWait;
    this.history = history;
    this.stats = stats;
    this.increments = increments;
    this.firstError = firstError;
  }

  /**
   * Holds {@code lease} into its validity: increments the counter at once, with validity to spare,
   * then keeps the lease from a fiftieth of the TTL before its deadline to a fifth of the TTL after
   * it, and releases. Returns false if the store connection broke.
   */
  boolean intoValidity(Lease lease, String resource, CounterStore store) {
    long acquiredAt = System.nanoTime();
    long deadline = Workload.deadlineOf(lease, acquiredAt);
    count("acquired");
    boolean storeOk = true;
    try {
      if (deadline - acquiredAt <= 0) {
        count("abandoned");
        return true;
      }
      storeOk = incrementWithTimeToSpare(lease, resource, store);
      long ttlNanos = ttl.toNanos();
      long until =
          deadline
              - ttlNanos / 50
              + ThreadLocalRandom.current().nextLong(ttlNanos / 5 + ttlNanos / 50);
      parkUntil(until);
    } finally {
      releaseAndRecord(lease, resource, acquiredAt, deadline);
    }
    return storeOk;
  }

  /**
   * Acquires {@code resource} with {@link RedLock#withLock} and holds it for one to two TTLs: reads
   * the counter, holds while following the deadline the renewals move, then writes the counter plus
   * one if a tenth of the TTL is still left. Returns false if the store connection broke.
   */
  boolean renewed(String resource, CounterStore store) throws InterruptedException {
    long ttlNanos = ttl.toNanos();
    boolean[] storeOk = {true};
    try {
      redlock.withLock(
          resource,
          ttl,
          maxWait,
          lease -> {
            long acquiredAt = System.nanoTime();
            long deadline = Workload.deadlineOf(lease, acquiredAt);
            count("acquired");
            count("renewed");
            long holdUntil = acquiredAt + ttlNanos + ThreadLocalRandom.current().nextLong(ttlNanos);
            try {
              long value = store.read(resource);
              for (long now = System.nanoTime();
                  now - holdUntil < 0 && lease.isValid();
                  now = System.nanoTime()) {
                LockSupport.parkNanos(Math.min(RENEWED_POLL_NANOS, holdUntil - now));
                deadline = later(deadline, Workload.deadlineOf(lease, deadline));
              }
              if (lease.remainingValidity().compareTo(ttl.dividedBy(10)) > 0) {
                count("outlived_ttl");
                store.write(resource, value + 1);
                count("increments");
                increments.merge(resource, 1L, Long::sum);
              } else {
                count("abandoned");
              }
            } catch (IOException e) {
              storeError(e);
              storeOk[0] = false;
            } finally {
              deadline = later(deadline, Workload.deadlineOf(lease, deadline));
              long end = System.nanoTime();
              history.add(
                  new LeaseRecord(
                      client, resource, acquiredAt, end - deadline < 0 ? end : deadline, end));
            }
          });
    } catch (LockTakenException e) {
      count("taken");
    } catch (QuorumUnavailableException e) {
      count("unavailable");
    }
    return storeOk[0];
  }

  /**
   * Reads the counter and writes it plus one if a quarter of the TTL is still left (so the write
   * cannot land after the deadline); returns false if the store connection broke.
   */
  private boolean incrementWithTimeToSpare(Lease lease, String resource, CounterStore store) {
    try {
      long value = store.read(resource);
      if (lease.remainingValidity().compareTo(ttl.dividedBy(4)) <= 0) {
        count("abandoned");
        return true;
      }
      store.write(resource, value + 1);
      count("increments");
      increments.merge(resource, 1L, Long::sum);
      return true;
    } catch (IOException e) {
      storeError(e);
      return false;
    }
  }

  /**
   * Releases {@code lease} and records it as valid until the earlier of the start of the release
   * and {@code deadline}, also if the release throws.
   */
  private void releaseAndRecord(Lease lease, String resource, long acquiredAt, long deadline) {
    long releaseStart = System.nanoTime();
    if (releaseStart - deadline >= 0) {
      count("overran");
    }
    try {
      lease.release();
    } finally {
      long validUntil = releaseStart - deadline < 0 ? releaseStart : deadline;
      history.add(new LeaseRecord(client, resource, acquiredAt, validUntil, releaseStart));
    }
  }

  private void storeError(IOException e) {
    count("store_errors");
    firstError.accept("counter store: " + e);
  }

  private void count(String name) {
    stats.merge(name, 1L, Long::sum);
  }

  /** The later of two readings of {@link System#nanoTime()}. */
  private static long later(long a, long b) {
    return b - a > 0 ? b : a;
  }

  /** Parks until {@link System#nanoTime()} reaches {@code until}: the work's schedule. */
  private static void parkUntil(long until) {
    for (long left = until - System.nanoTime(); left > 0; left = until - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }
}
