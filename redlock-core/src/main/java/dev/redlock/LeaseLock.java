package dev.redlock;

import static java.util.Objects.requireNonNull;

import dev.redlock.internal.lease.Arguments;
import dev.redlock.internal.transport.LockKey;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@link Lock} on one resource, held across processes by a quorum lease: each outermost {@link
 * #lock()} acquires a lease on the masters and renews it automatically while held; the last {@link
 * #unlock()} releases it. Obtained from {@link RedLock#newLock(String, java.time.Duration)}, or
 * from {@link RedLock#newLock(java.util.Collection, java.time.Duration)} for a lock on a set of
 * resources, each lease then taking the whole set all or nothing.
 *
 * <p><b>A lock's identity is its name.</b> Every {@code LeaseLock} one RedLock made for the same
 * resource (or the same set of resources) is the same lock in this process, as Redisson's locks by
 * name are: a thread that holds one holds them all, so a second {@code newLock("orders:42", ttl)}
 * in the holding thread locks again (reentrant) instead of waiting for itself, and another thread
 * waits for it like any other. A nested hold taken through another object shares the outermost
 * hold's lease, and so its TTL. Locks from different RedLocks, or on different (even overlapping)
 * sets, are different holders. What this process keeps by name lasts only while a thread holds or
 * waits for the lock.
 *
 * <p>Within one process the lock behaves as a {@link ReentrantLock} (it is built on one): it is
 * reentrant for the holding thread, which must unlock as many times as it locked; an {@code
 * unlock()} by a thread that does not hold it throws {@link IllegalMonitorStateException}; {@link
 * #lock()} waits without being interruptible, {@link #lockInterruptibly()} and {@link
 * #tryLock(long, TimeUnit)} can be interrupted, and {@link #tryLock()} never waits. Across
 * processes, each wait is a series of quorum rounds with randomized pauses between them.
 *
 * <p><b>A lost lock is never silent.</b> A held lease can be lost (a majority of masters says the
 * key is gone, or renewals fail until its validity runs out). The holder can see it at any time
 * through {@link #lease()} ({@link Lease#isValid()}, {@link Lease#ensureValid()}, {@link
 * Lease#onLost()}), and the last {@link #unlock()} of a lock that was lost while held throws {@link
 * LeaseLostException} after releasing everything, because the work it protected may have overlapped
 * with another holder's; a nested {@code lock()} or {@code tryLock()} by the holder of a lost lock
 * throws it too (the outer hold must still be unlocked). Check {@code lease().ensureValid()} before
 * each step that must not overlap, and catch the exception at {@code unlock()} where the outcome of
 * the work matters.
 *
 * <p>{@link #tryLock()} and a timed-out {@link #tryLock(long, TimeUnit)} return false both when the
 * lock is held elsewhere and when too few masters answered; {@link RedLock#tryAcquire} tells the
 * two apart. Thread-safe.
 */
public final class LeaseLock implements Lock {

  private final RedLock redlock;
  private final LocalHolds holds;
  private final String resource;
  private final LockKey key;
  private final long ttlMillis;

  LeaseLock(RedLock redlock, LocalHolds holds, String resource, LockKey key, long ttlMillis) {
    this.redlock = redlock;
    this.holds = holds;
    this.resource = resource;
    this.key = key;
    this.ttlMillis = ttlMillis;
  }

  /** What takes the lease once the calling thread has the hold in this process: null if none. */
  @FunctionalInterface
  private interface Take {
    Lease lease() throws InterruptedException;
  }

  /**
   * Acquires the lock, waiting as long as it takes: for other threads of this process, then for the
   * masters. Not interruptible: an interrupt is kept pending and the wait goes on.
   *
   * @throws LeaseLostException if the calling thread already holds this lock and its lease was
   *     lost: the nested hold is not taken
   * @throws IllegalStateException if the RedLock is closed
   */
  @Override
  public void lock() {
    LocalHolds.Hold hold = holds.enter(key.bytes());
    boolean held = false;
    try {
      hold.local.lock();
      held = takeOrNest(hold, () -> redlock.retry(resource, key, ttlMillis, Long.MAX_VALUE, false));
      if (!held) {
        throw new AssertionError("an unbounded wait ended without a lease");
      }
    } catch (InterruptedException e) {
      throw new AssertionError("an uninterruptible wait was interrupted", e);
    } finally {
      if (!held) {
        holds.leave(key.bytes());
      }
    }
  }

  /**
   * Acquires the lock, waiting as long as it takes unless interrupted.
   *
   * @throws InterruptedException if interrupted before the lock was acquired; nothing is then held
   * @throws LeaseLostException if the calling thread already holds this lock and its lease was
   *     lost: the nested hold is not taken
   * @throws IllegalStateException if the RedLock is closed
   */
  @Override
  public void lockInterruptibly() throws InterruptedException {
    LocalHolds.Hold hold = holds.enter(key.bytes());
    boolean held = false;
    try {
      hold.local.lockInterruptibly();
      held = takeOrNest(hold, () -> redlock.retry(resource, key, ttlMillis, Long.MAX_VALUE, true));
      if (!held) {
        throw new AssertionError("an unbounded wait ended without a lease");
      }
    } finally {
      if (!held) {
        holds.leave(key.bytes());
      }
    }
  }

  /**
   * Acquires the lock if it is free now: in this process, and on the masters in one round.
   *
   * @return true if the lock was acquired (or this thread already held it)
   * @throws LeaseLostException if the calling thread already holds this lock and its lease was
   *     lost: the nested hold is not taken
   * @throws IllegalStateException if the RedLock is closed
   */
  @Override
  public boolean tryLock() {
    LocalHolds.Hold hold = holds.enter(key.bytes());
    boolean held = false;
    try {
      held =
          hold.local.tryLock()
              && takeOrNest(hold, () -> redlock.attemptOnce(resource, key, ttlMillis));
      return held;
    } catch (InterruptedException e) {
      throw new AssertionError("a single round was interrupted", e);
    } finally {
      if (!held) {
        holds.leave(key.bytes());
      }
    }
  }

  /**
   * Acquires the lock if it becomes free within {@code time}: waits for other threads of this
   * process, then runs rounds on the masters for what is left of the time. A time of zero or less
   * makes one round.
   *
   * @param time how long to wait
   * @param unit the unit of {@code time}
   * @return true if the lock was acquired (or this thread already held it), false if the time ran
   *     out
   * @throws InterruptedException if interrupted while waiting; nothing is then held
   * @throws NullPointerException if {@code unit} is null
   * @throws LeaseLostException if the calling thread already holds this lock and its lease was
   *     lost: the nested hold is not taken
   * @throws IllegalStateException if the RedLock is closed
   */
  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    requireNonNull(unit, "unit");
    long start = redlock.coordinator.nanoTime(); // the RedLock's clock, as every wait of it
    long wait = Math.max(0, unit.toNanos(time));
    LocalHolds.Hold hold = holds.enter(key.bytes());
    boolean held = false;
    try {
      held =
          hold.local.tryLock(wait, TimeUnit.NANOSECONDS)
              && takeOrNest(
                  hold,
                  () ->
                      redlock.retry(
                          resource,
                          key,
                          ttlMillis,
                          Math.max(0, wait - (redlock.coordinator.nanoTime() - start)),
                          true));
      return held;
    } finally {
      if (!held) {
        holds.leave(key.bytes());
      }
    }
  }

  /**
   * With the calling thread holding {@code hold} in this process: for its outermost hold, takes the
   * lease and starts renewing it; for a nested one, checks that the outer hold's lease is still
   * valid. Returns whether the thread now holds the lock; if not (no lease, or a throw), the hold
   * in this process is given back.
   */
  private boolean takeOrNest(LocalHolds.Hold hold, Take take) throws InterruptedException {
    try {
      if (hold.local.getHoldCount() > 1) {
        ensureStillHeld(hold);
        return true;
      }
      Lease acquired = take.lease();
      if (acquired != null) {
        keep(hold, acquired);
        return true;
      }
    } catch (InterruptedException | RuntimeException | Error e) {
      hold.local.unlock();
      throw e;
    }
    hold.local.unlock();
    return false;
  }

  /**
   * For a nested acquisition by the holder: the outer hold's lease must still be valid, or the
   * nested lock would pretend to hold what is lost.
   */
  private void ensureStillHeld(LocalHolds.Hold hold) {
    if (!hold.lease.isValid()) {
      throw new LeaseLostException(
          "the lock on "
              + Arguments.quote(resource)
              + " was lost while held; unlock it to release what is left");
    }
  }

  /** Keeps a lease this thread just acquired and starts renewing it. */
  private void keep(LocalHolds.Hold hold, Lease acquired) {
    try {
      hold.renewal = redlock.renew(acquired, ttlMillis);
    } catch (RuntimeException | Error e) {
      acquired.release();
      throw e;
    }
    hold.lease = acquired;
  }

  /**
   * Releases one hold; the last one stops the renewal and releases the lease on the masters.
   *
   * @throws IllegalMonitorStateException if the calling thread does not hold this lock
   * @throws LeaseLostException if this was the last hold and the lease had been lost (or had run
   *     out) while held; the lock is released all the same
   */
  @Override
  public void unlock() {
    LocalHolds.Hold hold = heldByCurrentThread();
    try {
      if (hold.local.getHoldCount() == 1) {
        Lease ending = hold.lease;
        hold.lease = null;
        hold.renewal.cancel();
        hold.renewal = null;
        boolean invalid = !ending.isValid();
        ending.release();
        if (invalid) {
          throw new LeaseLostException(
              "the lock on "
                  + Arguments.quote(resource)
                  + (ending.isLost()
                      ? " was lost while held (a majority of masters no longer held it, or it ran"
                          + " out before a renewal got through)"
                      : " expired while held (its validity ran out before a renewal)")
                  + ": the work it protected may have overlapped with another holder's");
        }
      }
    } finally {
      hold.local.unlock();
      holds.leave(key.bytes());
    }
  }

  /** The hold the calling thread has on this lock's name, or an IllegalMonitorStateException. */
  private LocalHolds.Hold heldByCurrentThread() {
    LocalHolds.Hold hold = holds.find(key.bytes());
    if (hold == null || !hold.local.isHeldByCurrentThread()) {
      throw new IllegalMonitorStateException(
          "the lock on " + Arguments.quote(resource) + " is not held by this thread");
    }
    return hold;
  }

  /**
   * Not supported: a condition's waiters and signals would have to span processes, which a lease
   * cannot carry.
   *
   * @throws UnsupportedOperationException always
   */
  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException(
        "a distributed lock has no conditions: waiters and signals would have to span processes;"
            + " signal through the protected store, or use a local lock and condition");
  }

  /**
   * Returns the lease behind the current hold: its fencing token, its validity, and whether it was
   * lost ({@link Lease#isValid()}, {@link Lease#onLost()}). Do not release or extend it: {@link
   * #unlock()} and the renewal do.
   *
   * @return the lease the calling thread holds
   * @throws IllegalMonitorStateException if the calling thread does not hold this lock
   */
  public Lease lease() {
    return heldByCurrentThread().lease;
  }

  /**
   * Returns whether the calling thread holds this lock.
   *
   * @return true between a successful lock and the matching last unlock
   */
  public boolean isHeldByCurrentThread() {
    LocalHolds.Hold hold = holds.find(key.bytes());
    return hold != null && hold.local.isHeldByCurrentThread();
  }

  /**
   * Returns how many times the calling thread holds this lock.
   *
   * @return zero if it does not hold it
   */
  public int getHoldCount() {
    LocalHolds.Hold hold = holds.find(key.bytes());
    return hold == null ? 0 : hold.local.getHoldCount();
  }

  /**
   * Returns the TTL of each lease this lock takes, and of each of its renewals.
   *
   * @return the TTL given to {@link RedLock#newLock}, in whole milliseconds
   */
  public java.time.Duration ttl() {
    return java.time.Duration.ofMillis(ttlMillis);
  }

  /**
   * Returns the resource this lock is on.
   *
   * @return the resource name
   */
  public String resource() {
    return resource;
  }

  private boolean isLocked() {
    LocalHolds.Hold hold = holds.find(key.bytes());
    return hold != null && hold.local.isLocked();
  }

  @Override
  public String toString() {
    return "LeaseLock{resource="
        + Arguments.quote(resource)
        + ", "
        + (isLocked() ? "held in this process" : "not held in this process")
        + "}";
  }
}
