package dev.redlock.spring;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.LeaseLock;
import dev.redlock.LeaseLostException;
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The lock {@link RedLockRegistry#obtain} returns: a {@link LeaseLock} per hold, behind a local
 * lock of its own so that the TTL can be chosen per hold and a nested acquisition can report a hold
 * that is being lost.
 *
 * <p>Why a local lock over the LeaseLock's: each TTL needs its own LeaseLock (its TTL is fixed),
 * and two LeaseLocks on one resource would not be reentrant for each other. So this lock keeps the
 * thread-level state (who holds it, how often, which LeaseLock holds the lease) and each LeaseLock
 * is locked once per hold by the thread that holds this one.
 *
 * <p>It names no Spring Integration type, so that it loads on 6.5 too: {@link #lock(Duration)} and
 * {@link #tryLock(Duration, Duration)} become 7.x's {@code DistributedLock} methods in {@link
 * DistributedRegistryLock}, the class the registry uses when that interface exists.
 */
class RegistryLock implements Lock {

  private final RedLockRegistry registry;
  private final RedLock redlock;
  private final String key;
  private final String resource;
  private final Duration ttl;
  private final Duration safetyMargin; // null: a fifth of each hold's TTL
  private final Plan standard; // for the registry's TTL
  private final ReentrantLock local = new ReentrantLock();
  private volatile long lastUsedNanos;
  private Plan held; // guarded by local: how the current hold was acquired
  private boolean steppedDown; // guarded by local: the current hold was reported as being lost

  /** How a hold with one TTL is acquired: the LeaseLock with that TTL, and the hold's margin. */
  private record Plan(LeaseLock leaseLock, Duration margin) {}

  RegistryLock(
      RedLockRegistry registry,
      RedLock redlock,
      String key,
      String resource,
      Duration ttl,
      Duration safetyMargin,
      long nowNanos) {
    this.registry = registry;
    this.redlock = redlock;
    this.key = key;
    this.resource = resource;
    this.ttl = ttl;
    this.safetyMargin = safetyMargin;
    // Checks the resource name; the registry's builder checked the TTL and the margin.
    this.standard = new Plan(redlock.newLock(resource, ttl), marginFor(ttl, safetyMargin));
    this.lastUsedNanos = nowNanos;
  }

  /** The safety margin of a hold with {@code ttl}: the configured one, or a fifth of the TTL. */
  static Duration marginFor(Duration ttl, Duration safetyMargin) {
    if (safetyMargin == null) {
      return ttl.dividedBy(5);
    }
    checkMargin(ttl, safetyMargin);
    return safetyMargin;
  }

  /** Refuses a margin that renewals could not keep a healthy lease above. */
  static void checkMargin(Duration ttl, Duration safetyMargin) {
    if (safetyMargin.isNegative() || safetyMargin.isZero()) {
      throw new IllegalArgumentException("safetyMargin must be positive: " + safetyMargin);
    }
    if (safetyMargin.multipliedBy(3).compareTo(ttl) >= 0) {
      throw new IllegalArgumentException(
          "safetyMargin ("
              + safetyMargin.toMillis()
              + " ms) must be less than a third of the ttl ("
              + ttl.toMillis()
              + " ms): renewals begin when a third is left");
    }
  }

  @Override
  public void lock() {
    lock(standard);
  }

  /** {@code DistributedLock.lock(Duration)}: a hold with its own TTL. */
  public void lock(Duration ttl) {
    lock(planFor(ttl));
  }

  private void lock(Plan plan) {
    local.lock();
    try {
      if (local.getHoldCount() > 1) {
        ensureHeld();
        return;
      }
      plan.leaseLock().lock();
      hold(plan);
    } catch (RuntimeException | Error e) {
      local.unlock();
      throw e;
    }
  }

  @Override
  public void lockInterruptibly() throws InterruptedException {
    local.lockInterruptibly();
    try {
      if (local.getHoldCount() > 1) {
        ensureHeld();
        return;
      }
      standard.leaseLock().lockInterruptibly();
      hold(standard);
    } catch (InterruptedException | RuntimeException | Error e) {
      local.unlock();
      throw e;
    }
  }

  @Override
  public boolean tryLock() {
    if (!local.tryLock()) {
      return false;
    }
    try {
      if (local.getHoldCount() > 1) {
        ensureHeld();
        return true;
      }
      if (!standard.leaseLock().tryLock()) {
        local.unlock();
        return false;
      }
      hold(standard);
      return true;
    } catch (RuntimeException | Error e) {
      local.unlock();
      throw e;
    }
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    requireNonNull(unit, "unit");
    return tryLock(standard, unit.toNanos(time));
  }

  /** {@code DistributedLock.tryLock(Duration, Duration)}: a hold with its own TTL. */
  public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
    requireNonNull(waitTime, "waitTime");
    return tryLock(planFor(ttl), TimeUnit.NANOSECONDS.convert(waitTime));
  }

  private boolean tryLock(Plan plan, long waitNanos) throws InterruptedException {
    long start = System.nanoTime();
    long wait = Math.max(0, waitNanos);
    if (!local.tryLock(wait, TimeUnit.NANOSECONDS)) {
      return false;
    }
    try {
      if (local.getHoldCount() > 1) {
        ensureHeld();
        return true;
      }
      long left = Math.max(0, wait - (System.nanoTime() - start));
      if (!plan.leaseLock().tryLock(left, TimeUnit.NANOSECONDS)) {
        local.unlock();
        return false;
      }
      hold(plan);
      return true;
    } catch (InterruptedException | RuntimeException | Error e) {
      local.unlock();
      throw e;
    }
  }

  /** How to acquire a hold with {@code ttl}: the registry's own plan, or a new one. */
  private Plan planFor(Duration ttl) {
    requireNonNull(ttl, "ttl");
    if (ttl.equals(this.ttl)) {
      return standard;
    }
    LeaseLock leaseLock = redlock.newLock(resource, ttl); // checks the TTL
    return new Plan(leaseLock, marginFor(ttl, safetyMargin));
  }

  /** Keeps the plan of the hold that this thread's outermost acquisition just acquired. */
  private void hold(Plan plan) {
    held = plan;
    steppedDown = false;
    touch(System.nanoTime());
    registry.acquired(this);
  }

  /**
   * For a nested acquisition (or a renewal) by the holder: the hold must not be lost, nor have so
   * little validity left that the masters could soon let another holder in.
   */
  private void ensureHeld() {
    Lease lease = held.leaseLock().lease();
    lease.ensureValid(); // LeaseLostException once it ran out or was lost
    if (!steppedDown) {
      Duration left = lease.remainingValidity();
      if (left.compareTo(held.margin()) > 0) {
        return;
      }
      steppedDown = true;
    }
    throw new LeaseLostException(
        "the lock for key "
            + shownKey()
            + " is being lost: its lease came within "
            + held.margin().toMillis()
            + " ms (the safety margin) of running out with no renewal gone through;"
            + " unlock it to release it");
  }

  @Override
  public void unlock() {
    if (!local.isHeldByCurrentThread()) {
      throw new IllegalMonitorStateException(
          "the lock for key " + shownKey() + " is not held by this thread");
    }
    if (local.getHoldCount() > 1) {
      local.unlock();
      return;
    }
    LeaseLock ending = held.leaseLock();
    held = null;
    steppedDown = false;
    try {
      ending.unlock(); // LeaseLostException if it was lost while held; released all the same
    } finally {
      touch(System.nanoTime());
      local.unlock();
      registry.released();
    }
  }

  /** For {@link RedLockRegistry#renewLock}: a quorum extend of the calling thread's hold. */
  void renew(Duration ttl) {
    Lease lease = lease();
    ensureHeld();
    if (!lease.extend(ttl)) {
      lease.ensureValid(); // a majority said it is gone: lost
      throw new IllegalStateException(
          "could not renew the lock for key "
              + shownKey()
              + ": too few masters confirmed in time; the lease is unchanged, valid for "
              + lease.remainingValidity().toMillis()
              + " ms more, and its automatic renewal goes on");
    }
  }

  /** For {@link RedLockRegistry#lease}: the lease of the calling thread's hold. */
  Lease lease() {
    if (!local.isHeldByCurrentThread()) {
      throw new IllegalMonitorStateException(
          "the lock for key " + shownKey() + " is not held by this thread");
    }
    return held.leaseLock().lease();
  }

  @Override
  public Condition newCondition() {
    return standard.leaseLock().newCondition(); // throws UnsupportedOperationException, saying why
  }

  boolean isHeldByCurrentThread() {
    return local.isHeldByCurrentThread();
  }

  /** Whether a thread of this process holds this lock or waits for it. */
  boolean isInUse() {
    return local.isLocked() || local.hasQueuedThreads();
  }

  /** The key in quotes for messages, cut at 64 characters. */
  String shownKey() {
    return shown(key);
  }

  /** {@code key} in quotes for messages, cut at 64 characters. */
  static String shown(String key) {
    return "'" + (key.length() <= 64 ? key : key.substring(0, 64) + "...") + "'";
  }

  String key() {
    return key;
  }

  long lastUsedNanos() {
    return lastUsedNanos;
  }

  void touch(long nowNanos) {
    lastUsedNanos = nowNanos;
  }

  @Override
  public String toString() {
    return "RedLockRegistry.Lock{key="
        + shownKey()
        + ", "
        + (local.isLocked() ? "held in this process" : "not held in this process")
        + "}";
  }
}
