package dev.redlock.spring;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.LeaseLostException;
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration lock registry whose locks are RedLock quorum locks: each key names a
 * resource on N independent Redis masters, and a lock held in one process excludes every other
 * process (and every other thread of this one) that locks the same key through any registry on the
 * same masters.
 *
 * <pre>{@code
 * LockRegistry<?> locks = RedLockRegistry.builder(redlock).keyPrefix("orders:").build();
 * locks.executeLocked("42", () -> ship(order)); // LockRegistry locks on Spring Integration 6.5
 * }</pre>
 *
 * <h2>What each Spring interface means here</h2>
 *
 * <ul>
 *   <li>{@link #obtain(Object)} returns one {@link Lock} per key (a {@link String}), the same
 *       object for as long as it stays cached. The resource on the masters is the key prefix
 *       followed by the key. On Spring Integration 7.x it is a {@code DistributedLock}; see
 *       <em>Spring Integration 6.5 and 7.x</em> below.
 *   <li>The lock is reentrant for the thread that holds it. Each outermost acquisition acquires a
 *       lease from a quorum of masters, which the {@link RedLock} renews automatically while the
 *       lock is held (so no {@code TaskScheduler} is needed: {@link #setRenewalTaskScheduler} is
 *       left as Spring's no-op); the last {@code unlock()} releases it. The TTL is therefore not a
 *       limit on how long the lock may be held, but how long it outlives a holder that died or was
 *       cut off from the masters: the time another process waits before it can take over. On 7.x,
 *       {@code DistributedLock.lock(Duration)} and {@code tryLock(Duration, Duration)} choose that
 *       TTL for one hold; a nested acquisition keeps the outermost hold's.
 *   <li>{@link #renewLock(Object, Duration)} is a quorum extend of the calling thread's hold.
 *   <li>{@link #expireUnusedOlderThan(long)} forgets cached lock objects that nobody holds or waits
 *       for; the cache also evicts the least recently used unheld locks beyond its capacity.
 * </ul>
 *
 * <h2>A lock that is being lost</h2>
 *
 * Renewals begin when a third of the TTL is left and are retried while the lease is valid. When
 * none went through and the lease has no more than the <em>safety margin</em> left (a fifth of the
 * hold's TTL unless set), the hold is treated as lost, before the masters can let anyone else in:
 * from then on a nested {@code lock()} or {@code tryLock()} by the holder, and {@link #renewLock},
 * throw {@link LeaseLostException} (an {@link IllegalStateException}), while the lease is still
 * valid. The last {@code unlock()} releases the lease and throws {@link LeaseLostException} if the
 * lease ran out or was lost while held (the protected work may then have overlapped with another
 * holder's), as {@link dev.redlock.LeaseLock} does.
 *
 * <p>That is how Spring's {@code LockRegistryLeaderInitiator} learns of a lost leadership: its
 * leader calls {@code tryLock} on the lock it holds every heartbeat; the exception makes it unlock
 * and revoke the leadership. For that to happen before another candidate can be granted it, the
 * safety margin must exceed the heartbeat plus one unlock round (the node timeout), with room for
 * scheduling delays: with Spring's default heartbeat of 500 ms, a TTL of at least 5 s (the default
 * TTL of 10 s gives a margin of 2 s). The leader's {@code onGranted} must return promptly, as it
 * runs on the thread that checks.
 *
 * <h2>Spring Integration 6.5 and 7.x</h2>
 *
 * One jar serves both lines (Spring Boot 3.5 and 4). The registry implements {@code
 * ExpirableLockRegistry} and {@code RenewableLockRegistry} as raw types, which both lines have, and
 * no signature of it names a type that only 7.x has, so it loads and can be inspected by Spring on
 * either. What differs is the lock {@link #obtain} returns: on 7.x (when {@code
 * org.springframework.integration.support.locks.DistributedLock} is on the class path) it is a
 * {@code DistributedLock}, with a TTL per hold; on 6.5 it is a plain {@link Lock} whose holds all
 * have the registry's TTL. {@link #renewLock(Object, Duration)} is a method of 7.x's interface and
 * of this class on both.
 *
 * <p>Because the interfaces are implemented raw, their generic default methods ({@code
 * executeLocked}) lose their generics when called on a {@code RedLockRegistry} variable: the result
 * is an {@code Object} and the task may throw any {@code Throwable}. Call them through a {@code
 * LockRegistry<?>} (7.x) or {@code LockRegistry} (6.5) variable, as above. (Implementing {@code
 * LockRegistry<Lock>} instead would keep them, but would make {@code
 * RedLockRegistry.class.getGenericInterfaces()} throw on 6.5, where the interface takes no type
 * argument.)
 *
 * <p>Thread-safe. The registry owns no threads: the {@link RedLock} it was built on renews the
 * leases, and closing that RedLock ends every lock of this registry. As a Spring bean, its {@link
 * #destroy()} gives the locks being unlocked at shutdown (a stopping leader's) a moment to be
 * released before the RedLock closes.
 */
@SuppressWarnings("rawtypes") // raw: 6.5's interfaces are not generic; see the class description
public final class RedLockRegistry
    implements ExpirableLockRegistry, RenewableLockRegistry, DisposableBean {

  /** The TTL of each hold unless {@link Builder#ttl} says otherwise: 10 s. */
  public static final Duration DEFAULT_TTL = Duration.ofSeconds(10);

  /** How many lock objects are cached unless {@link Builder#cacheCapacity} says otherwise. */
  public static final int DEFAULT_CACHE_CAPACITY = 100_000;

  /** How long {@link #destroy()} waits for the locks held in this process to be unlocked: 2 s. */
  public static final Duration DESTROY_WAIT = Duration.ofSeconds(2);

  /**
   * Whether Spring Integration 7's {@code DistributedLock} is there to be implemented. Nothing in
   * this class names it: only {@link DistributedRegistryLock} does, which is loaded only if so.
   */
  private static final boolean DISTRIBUTED_LOCKS =
      isPresent("org.springframework.integration.support.locks.DistributedLock");

  private final RedLock redlock;
  private final String keyPrefix;
  private final Duration ttl;
  private final Duration safetyMargin; // null: a fifth of each hold's TTL
  private final int cacheCapacity;
  private final ReentrantLock cacheLock = new ReentrantLock();

  // guarded by cacheLock; in access order, so that eviction takes the least recently obtained
  private final Map<String, RegistryLock> locks = new LinkedHashMap<>(16, 0.75f, true);
  private final ReentrantLock holdsLock = new ReentrantLock();
  private final Condition allReleased = holdsLock.newCondition();
  private int holds; // guarded by holdsLock: holds of this registry's locks in this process

  private RedLockRegistry(Builder builder) {
    this.redlock = builder.redlock;
    this.keyPrefix = builder.keyPrefix;
    this.ttl = builder.ttl;
    this.safetyMargin = builder.safetyMargin;
    this.cacheCapacity = builder.cacheCapacity;
  }

  /**
   * Returns a builder for a registry over {@code redlock}.
   *
   * @param redlock the coordinator whose masters hold the locks; the caller keeps it and closes it
   *     after the registry's last use
   * @return a builder with the defaults
   * @throws NullPointerException if {@code redlock} is null
   */
  public static Builder builder(RedLock redlock) {
    return new Builder(requireNonNull(redlock, "redlock"));
  }

  /**
   * Returns the lock for {@code lockKey}: the same object on every call while it stays cached.
   * Nothing is sent to the masters until it is locked.
   *
   * <p>Its {@code lock()}, {@code lockInterruptibly()}, {@code tryLock()} and {@code tryLock(time,
   * unit)} behave as {@link dev.redlock.LeaseLock}'s do, with this registry's TTL; {@code
   * newCondition()} is not supported. On Spring Integration 7.x the lock is a {@code
   * DistributedLock}, and its {@code lock(ttl)} and {@code tryLock(wait, ttl)} use the given TTL,
   * which must be valid for the RedLock and, if a safety margin was set, more than three times it;
   * on 6.5 it is a plain {@link Lock}. See the class description for a lock that is being lost.
   *
   * @param lockKey the key: a {@link String}; the resource on the masters is the key prefix
   *     followed by it
   * @return the lock: a {@code DistributedLock} on Spring Integration 7.x
   * @throws NullPointerException if {@code lockKey} is null
   * @throws IllegalArgumentException if {@code lockKey} is not a String, or the resource it names
   *     is not a valid RedLock resource
   * @throws IllegalStateException if the RedLock is closed
   */
  @Override
  public Lock obtain(Object lockKey) {
    String key = keyOf(lockKey);
    cacheLock.lock();
    try {
      RegistryLock lock = locks.get(key);
      if (lock == null) {
        lock = newLock(key, System.nanoTime());
        locks.put(key, lock);
        evictBeyondCapacity(lock);
      }
      lock.touch(System.nanoTime());
      return lock;
    } finally {
      cacheLock.unlock();
    }
  }

  /**
   * Forgets the cached locks that were last obtained, locked or unlocked at least {@code age}
   * milliseconds ago and that no thread holds or waits for. A lock that is held is never dropped. A
   * forgotten lock object still works (its locks still exclude every other holder, through the
   * masters); the next {@link #obtain} for its key returns a new object.
   *
   * @param age in milliseconds, zero or more; zero forgets every lock that is not in use
   * @throws IllegalArgumentException if {@code age} is negative
   */
  @Override
  public void expireUnusedOlderThan(long age) {
    if (age < 0) {
      throw new IllegalArgumentException("age must not be negative: " + age);
    }
    long ageNanos = TimeUnit.MILLISECONDS.toNanos(age);
    long now = System.nanoTime();
    cacheLock.lock();
    try {
      locks.values().removeIf(lock -> now - lock.lastUsedNanos() >= ageNanos && !lock.isInUse());
    } finally {
      cacheLock.unlock();
    }
  }

  /**
   * Extends the calling thread's hold of the lock for {@code lockKey} by this registry's TTL, on a
   * quorum of masters. The hold is renewed automatically anyway; see {@link #renewLock(Object,
   * Duration)}.
   *
   * @param lockKey the key the lock was obtained with
   * @throws NullPointerException if {@code lockKey} is null
   * @throws IllegalArgumentException if {@code lockKey} is not a String
   * @throws IllegalMonitorStateException if the calling thread does not hold that lock
   * @throws LeaseLostException if the lease has run out or was lost, or is being lost (see the
   *     class description)
   * @throws IllegalStateException if too few masters confirmed the extension in time (the lease is
   *     then unchanged and still valid until its old deadline)
   */
  @Override
  public void renewLock(Object lockKey) {
    renewLock(lockKey, ttl);
  }

  /**
   * Extends the calling thread's hold of the lock for {@code lockKey} on a quorum of masters, so
   * that it lasts at least {@code ttl} from now. Unlike a Redis {@code PEXPIRE}, this never
   * shortens the lock: a {@code ttl} below what is left changes nothing. The automatic renewal goes
   * on with the hold's own TTL. Blocks for at most the node timeout.
   *
   * @param lockKey the key the lock was obtained with
   * @param ttl the time to live from now; valid for the RedLock (more than the node timeout, at
   *     most its maximum lease time)
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code lockKey} is not a String or {@code ttl} is out of
   *     range
   * @throws IllegalMonitorStateException if the calling thread does not hold that lock
   * @throws LeaseLostException if the lease has run out or was lost, or is being lost (see the
   *     class description)
   * @throws IllegalStateException if too few masters confirmed the extension in time (the lease is
   *     then unchanged and still valid until its old deadline)
   */
  @Override
  public void renewLock(Object lockKey, Duration ttl) {
    requireNonNull(ttl, "ttl");
    heldByCurrentThread(lockKey).renew(ttl);
  }

  /**
   * Returns the lease behind the calling thread's hold of the lock for {@code lockKey}: its fencing
   * token for the writes the lock protects, and its validity. Do not release or extend it: {@code
   * unlock()}, the automatic renewal and {@link #renewLock} do.
   *
   * @param lockKey the key the lock was obtained with
   * @return the lease of the current hold
   * @throws NullPointerException if {@code lockKey} is null
   * @throws IllegalArgumentException if {@code lockKey} is not a String
   * @throws IllegalMonitorStateException if the calling thread does not hold that lock
   */
  public Lease lease(Object lockKey) {
    return heldByCurrentThread(lockKey).lease();
  }

  @Override
  public String toString() {
    int cached;
    cacheLock.lock();
    try {
      cached = locks.size();
    } finally {
      cacheLock.unlock();
    }
    return "RedLockRegistry{keyPrefix="
        + (keyPrefix.isEmpty() ? "none" : "'" + keyPrefix + "'")
        + ", ttl="
        + ttl.toMillis()
        + " ms, safetyMargin="
        + (safetyMargin == null ? "ttl/5" : safetyMargin.toMillis() + " ms")
        + ", cached="
        + cached
        + "}";
  }

  /**
   * Waits until no thread of this process holds a lock of this registry, for at most {@link
   * #DESTROY_WAIT}, so that locks being unlocked as the application shuts down are released on the
   * masters before the {@link RedLock} closes (which Spring does after this, as the registry
   * depends on it). Spring's {@code LockRegistryLeaderInitiator} stops by interrupting its thread
   * and returns at once; without this wait the leader's lock would be left to expire, and the next
   * leader would wait out the TTL. Locks still held after the wait are left as they are.
   *
   * @throws InterruptedException if interrupted while waiting
   */
  @Override
  public void destroy() throws InterruptedException {
    long left = DESTROY_WAIT.toNanos();
    holdsLock.lock();
    try {
      while (holds > 0 && left > 0) {
        left = allReleased.awaitNanos(left);
      }
    } finally {
      holdsLock.unlock();
    }
  }

  /**
   * Called by a lock that its thread has just acquired: a lock object dropped from the cache while
   * someone was about to lock it becomes the one {@link #obtain} returns again, unless another
   * object for its key is in use.
   */
  void acquired(RegistryLock lock) {
    holdsLock.lock();
    try {
      holds++;
    } finally {
      holdsLock.unlock();
    }
    cacheLock.lock();
    try {
      RegistryLock cached = locks.get(lock.key());
      if (cached == null || (cached != lock && !cached.isInUse())) {
        locks.put(lock.key(), lock);
        evictBeyondCapacity(lock);
      }
    } finally {
      cacheLock.unlock();
    }
  }

  /** Called by a lock whose last unlock just ended its hold. */
  void released() {
    holdsLock.lock();
    try {
      if (--holds == 0) {
        allReleased.signalAll();
      }
    } finally {
      holdsLock.unlock();
    }
  }

  private RegistryLock heldByCurrentThread(Object lockKey) {
    String key = keyOf(lockKey);
    RegistryLock lock;
    cacheLock.lock();
    try {
      lock = locks.get(key);
    } finally {
      cacheLock.unlock();
    }
    if (lock == null || !lock.isHeldByCurrentThread()) {
      throw new IllegalMonitorStateException(
          "the lock for key " + RegistryLock.shown(key) + " is not held by this thread");
    }
    return lock;
  }

  /**
   * Drops the least recently obtained locks not in use, other than {@code keep}, while too many.
   */
  private void evictBeyondCapacity(RegistryLock keep) {
    Iterator<RegistryLock> eldestFirst = locks.values().iterator();
    while (locks.size() > cacheCapacity && eldestFirst.hasNext()) {
      RegistryLock lock = eldestFirst.next();
      if (lock != keep && !lock.isInUse()) {
        eldestFirst.remove();
      }
    }
  }

  /** A lock object for {@code key}: a {@code DistributedLock} where Spring Integration has one. */
  private RegistryLock newLock(String key, long nowNanos) {
    String resource = keyPrefix + key;
    return DISTRIBUTED_LOCKS
        ? DistributedRegistryLock.create(this, redlock, key, resource, ttl, safetyMargin, nowNanos)
        : new RegistryLock(this, redlock, key, resource, ttl, safetyMargin, nowNanos);
  }

  private static boolean isPresent(String className) {
    try {
      Class.forName(className, false, RedLockRegistry.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  private static String keyOf(Object lockKey) {
    requireNonNull(lockKey, "lockKey");
    if (!(lockKey instanceof String key)) {
      throw new IllegalArgumentException(
          "lockKey must be a String, was a " + lockKey.getClass().getName());
    }
    return key;
  }

  /**
   * Configures a {@link RedLockRegistry}. Not thread-safe; {@link #build()} checks everything and
   * the registry does not change when the builder does.
   */
  public static final class Builder {

    private final RedLock redlock;
    private String keyPrefix = "";
    private Duration ttl = DEFAULT_TTL;
    private Duration safetyMargin; // null: a fifth of each hold's TTL
    private int cacheCapacity = DEFAULT_CACHE_CAPACITY;

    private Builder(RedLock redlock) {
      this.redlock = redlock;
    }

    /**
     * Sets what is put in front of every key to name the resource on the masters, so that
     * applications sharing masters keep their locks apart.
     *
     * @param keyPrefix the prefix, possibly empty (the default); must not start with {@code
     *     redlock:}
     * @return this builder
     * @throws NullPointerException if {@code keyPrefix} is null
     */
    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = requireNonNull(keyPrefix, "keyPrefix");
      return this;
    }

    /**
     * Sets the TTL of each hold: how long a lock outlives a holder that died or was cut off from
     * the masters. The lease is renewed with it while the lock is held.
     *
     * @param ttl valid for the RedLock (see {@link RedLock#newLock}); {@link #DEFAULT_TTL} unless
     *     set
     * @return this builder
     * @throws NullPointerException if {@code ttl} is null
     */
    public Builder ttl(Duration ttl) {
      this.ttl = requireNonNull(ttl, "ttl");
      return this;
    }

    /**
     * Sets how much validity a held lock's lease may have left, with no renewal gone through,
     * before the hold is treated as lost (see the class description): at least the time the holder
     * needs to notice and stop, which for a {@code LockRegistryLeaderInitiator} is its heartbeat
     * plus one unlock round.
     *
     * @param safetyMargin positive and less than a third of the TTL, and of every TTL passed to
     *     {@code lock(ttl)} or {@code tryLock(wait, ttl)} (renewals begin when a third is left); a
     *     fifth of each hold's TTL unless set
     * @return this builder
     * @throws NullPointerException if {@code safetyMargin} is null
     */
    public Builder safetyMargin(Duration safetyMargin) {
      this.safetyMargin = requireNonNull(safetyMargin, "safetyMargin");
      return this;
    }

    /**
     * Sets how many lock objects the registry keeps before it forgets the least recently used ones
     * that are not in use. Locks in use are never forgotten, so the cache can exceed this while
     * more locks than this are held.
     *
     * @param cacheCapacity positive; {@link #DEFAULT_CACHE_CAPACITY} unless set
     * @return this builder
     * @throws IllegalArgumentException if {@code cacheCapacity} is not positive
     */
    public Builder cacheCapacity(int cacheCapacity) {
      if (cacheCapacity < 1) {
        throw new IllegalArgumentException("cacheCapacity must be positive: " + cacheCapacity);
      }
      this.cacheCapacity = cacheCapacity;
      return this;
    }

    /**
     * Builds the registry.
     *
     * @return a new registry
     * @throws IllegalArgumentException if the TTL is not valid for the RedLock, the safety margin
     *     is not positive or not below a third of the TTL, or the key prefix cannot start a
     *     resource name
     * @throws IllegalStateException if the RedLock is closed
     */
    public RedLockRegistry build() {
      // The RedLock checks the TTL and the prefix as it would for a real lock; nothing is sent.
      redlock.newLock(keyPrefix + "probe", ttl);
      RegistryLock.marginFor(ttl, safetyMargin);
      return new RedLockRegistry(this);
    }
  }
}
