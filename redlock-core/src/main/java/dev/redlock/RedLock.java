package dev.redlock;

import static java.util.Objects.requireNonNull;

import dev.redlock.internal.lease.Arguments;
import dev.redlock.internal.lease.Attempt;
import dev.redlock.internal.lease.Coordinator;
import dev.redlock.internal.lease.Renewer;
import dev.redlock.internal.lease.ResourceSet;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.SelectorLoop;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A Redlock coordinator: grants leases on named resources from a majority of N independent Redis
 * masters.
 *
 * <pre>{@code
 * try (RedLock redlock = RedLock.builder().nodes(uris).build()) {
 *   try (Lease lease = redlock.acquire("orders:42", Duration.ofSeconds(10), Duration.ofSeconds(3))) {
 *     // critical section: check lease.isValid() before each step that must not overlap
 *   }
 * }
 * }</pre>
 *
 * <h2>How a lease is acquired</h2>
 *
 * <ol>
 *   <li>A fresh 128-bit token is drawn from {@link java.security.SecureRandom}.
 *   <li>The monotonic clock is read, then {@code SET resource token NX PX ttl} is sent to all N
 *       masters at once, each bounded by the node timeout.
 *   <li>The round is decided as soon as {@code N/2+1} masters granted, or as soon as that many can
 *       no longer grant. Replies that arrive later are still read.
 *   <li>The lease is trusted for {@code ttl - elapsed - (ttl * driftFactor + 2 ms)}, and granted
 *       only with a majority and a validity above the minimum (zero by default).
 *   <li>Otherwise the compare-and-delete release is sent to <em>all</em> N masters, including those
 *       that timed out or failed, queued behind the acquire on each so it cannot overtake it.
 * </ol>
 *
 * Release and extend are compare-and-act Lua scripts on every master; an extend counts only with a
 * majority, only while the lease is valid, and never re-creates an expired key.
 *
 * <h2>What safety assumes</h2>
 *
 * At most one valid lease per resource exists only while all of these hold; the library enforces
 * what it can and the README's safety table shows what breaks when they do not:
 *
 * <ul>
 *   <li><b>Bounded clock drift.</b> Every master's clock runs at nearly the rate of this process's
 *       monotonic clock (within {@code driftFactor}), and no master's wall clock jumps: Redis
 *       expires keys on the wall clock.
 *   <li><b>No unpersisted restart inside a TTL.</b> A master that restarts and loses keys (no
 *       persistence, a snapshot, {@code everysec}) or fails over to a replica must stay out for
 *       longer than the longest TTL, or run with {@code appendfsync always} (and {@code
 *       no-appendfsync-on-rewrite no}); otherwise a second majority can form. The restart guard
 *       keeps such a master out: it sees every restart by the server's run and uptime, read on
 *       every new connection.
 *   <li><b>Pauses end inside the validity.</b> A holder paused (GC, swap, SIGSTOP) past its
 *       validity keeps believing it holds the lease; {@link Lease#isValid()} is only as current as
 *       its last call. Guard the protected store with a check of its own where overlap is
 *       unacceptable.
 *   <li><b>Independent masters.</b> N separate servers without replication between them; the
 *       builder refuses one {@code host:port} configured twice.
 * </ul>
 *
 * <p>Instances are immutable and thread-safe; share one per process. Every blocking call is bounded
 * by the node timeout (and {@code acquire} by its wait). {@link #close()} stops the library's own
 * threads.
 */
public final class RedLock implements AutoCloseable {

  /** The node timeout unless {@link RedLockBuilder#nodeTimeout} says otherwise: 50 ms. */
  public static final Duration DEFAULT_NODE_TIMEOUT = Duration.ofMillis(50);

  /**
   * How long opening a connection to a master (TCP, TLS, the handshake) may take unless {@link
   * RedLockBuilder#connectTimeout} says otherwise: 1 s.
   */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(1);

  /** The longest connect timeout accepted: one minute. */
  public static final Duration MAX_CONNECT_TIMEOUT = Duration.ofMinutes(1);

  /** The drift factor unless {@link RedLockBuilder#driftFactor} says otherwise: 0.01 (1%). */
  public static final double DEFAULT_DRIFT_FACTOR = 0.01;

  /** The base retry delay unless {@link RedLockBuilder#retryDelay} says otherwise: 50 ms. */
  public static final Duration DEFAULT_RETRY_DELAY = Duration.ofMillis(50);

  /** The longest TTL unless {@link RedLockBuilder#maxLeaseTime} says otherwise: 1 minute. */
  public static final Duration DEFAULT_MAX_LEASE_TIME = Duration.ofMinutes(1);

  /** How long an open circuit breaker skips its master unless set otherwise: 1 s. */
  public static final Duration DEFAULT_CIRCUIT_BREAKER_WAIT = Duration.ofSeconds(1);

  /**
   * How often, at most, each master's fitness for Redlock is checked again while it is used (for
   * {@link RedLockBuilder#excludeUnfitMasters} and its WARN line): 10 s.
   */
  public static final Duration PREFLIGHT_INTERVAL = Duration.ofSeconds(10);

  /** The longest TTL accepted: one day. */
  public static final Duration MAX_TTL = Arguments.MAX_TTL;

  /** The longest resource name accepted, in UTF-8 bytes: 16 KiB. */
  public static final int MAX_RESOURCE_BYTES = Arguments.MAX_RESOURCE_BYTES;

  /**
   * The most resources one multi-resource lease ({@link #tryAcquireAll}) may hold: 64. Their names
   * together may have at most {@link #MAX_RESOURCE_BYTES} UTF-8 bytes.
   */
  public static final int MAX_RESOURCES_PER_LEASE = ResourceSet.MAX_RESOURCES;

  final Coordinator coordinator; // LeaseLock reads its clock
  private final LocalHolds holds = new LocalHolds();

  RedLock(Coordinator coordinator) {
    this.coordinator = coordinator;
  }

  /**
   * Returns a new builder with the defaults.
   *
   * @return a builder; at least one node must be added before {@link RedLockBuilder#build()}
   */
  public static RedLockBuilder builder() {
    return new RedLockBuilder();
  }

  /**
   * Tries once to acquire {@code resource} for {@code ttl}: one parallel round on every master.
   * Blocks for at most the node timeout.
   *
   * @param resource the name of the lock; any non-empty Unicode string of at most {@link
   *     #MAX_RESOURCE_BYTES} UTF-8 bytes, used as the Redis key as it is
   * @param ttl how long the masters keep the lock; more than the node timeout, at most {@link
   *     #MAX_TTL}, whole milliseconds (a fraction is dropped)
   * @return the lease, or empty if another client holds the lock (or competing clients split the
   *     votes)
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if an argument is out of range
   * @throws QuorumUnavailableException if too many masters failed or answered too slowly for a
   *     lease to be granted
   * @throws IllegalStateException if this RedLock is closed
   */
  public Optional<Lease> tryAcquire(String resource, Duration ttl) {
    LockKey key = LockKey.of(Arguments.resourceKey(resource));
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    Attempt attempt = coordinator.attemptOnce(resource, key, ttlMillis);
    if (attempt.grant() != null) {
      return Optional.of(new Lease(attempt.grant()));
    }
    if (attempt.unavailable()) {
      throw Outcomes.failure(
          attempt, "could not acquire " + Arguments.quote(resource), coordinator);
    }
    return Optional.empty();
  }

  /**
   * Acquires {@code resource} for {@code ttl}, retrying after randomized pauses (so that competing
   * clients stop splitting the votes) until {@code maxWait} has passed. Returns at most one round
   * (the node timeout) after {@code maxWait}.
   *
   * @param resource the name of the lock, as for {@link #tryAcquire}
   * @param ttl how long the masters keep the lock, as for {@link #tryAcquire}
   * @param maxWait how long to keep trying; positive
   * @return the lease
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if an argument is out of range
   * @throws LockTakenException if the wait ran out while the lock was held by others
   * @throws QuorumUnavailableException if the wait ran out while too many masters were failing
   * @throws InterruptedException if the thread was interrupted while waiting; nothing is left
   *     locked
   * @throws IllegalStateException if this RedLock is closed
   */
  public Lease acquire(String resource, Duration ttl, Duration maxWait)
      throws InterruptedException {
    LockKey key = LockKey.of(Arguments.resourceKey(resource));
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    long waitNanos = Arguments.positiveNanos(maxWait, "maxWait");
    coordinator.checkOpen();
    Attempt attempt = coordinator.retry(resource, key, ttlMillis, waitNanos, true);
    if (attempt.grant() == null) {
      throw Outcomes.failure(
          attempt,
          "could not acquire "
              + Arguments.quote(resource)
              + " within "
              + maxWait.toMillis()
              + " ms",
          coordinator);
    }
    return new Lease(attempt.grant());
  }

  /**
   * Like {@link #tryAcquire}, without blocking the calling thread: one parallel round on every
   * master, whose answers complete the returned future (within about the node timeout). See {@link
   * #acquireAsync} for the threads, cancellation and close.
   *
   * @param resource the name of the lock, as for {@link #tryAcquire}
   * @param ttl how long the masters keep the lock, as for {@link #tryAcquire}
   * @return a future of the lease, or of empty if another client holds the lock (or competing
   *     clients split the votes); completed exceptionally with {@link QuorumUnavailableException}
   *     if too many masters failed or answered too slowly for a lease to be granted
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if an argument is out of range
   * @throws IllegalStateException if this RedLock is closed
   */
  public CompletableFuture<Optional<Lease>> tryAcquireAsync(String resource, Duration ttl) {
    LockKey key = LockKey.of(Arguments.resourceKey(resource));
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    return coordinator.acquireAsync(
        resource,
        key,
        ttlMillis,
        0,
        attempt -> {
          if (attempt.grant() != null) {
            return Optional.of(new Lease(attempt.grant()));
          }
          if (attempt.unavailable()) {
            throw Outcomes.failure(
                attempt, "could not acquire " + Arguments.quote(resource), coordinator);
          }
          return Optional.empty();
        });
  }

  /**
   * Like {@link #acquire}, without blocking a thread while it waits: the rounds' answers and the
   * randomized pauses between rounds run on this RedLock's own timer thread ({@code
   * redlock-async-N}, one for all waiters), so a thousand pending acquisitions hold no thread each.
   * The future completes at most one round (the node timeout) after {@code maxWait}.
   *
   * <p><b>Threads.</b> The future is completed on this RedLock's event thread ({@code
   * redlock-events-N}), never on an I/O thread nor while the library holds a lock of its own;
   * stages added to it without an executor run there, after the listener's events, and must be
   * quick: hand blocking work to your own executor ({@code thenApplyAsync(fn, executor)}) or to a
   * virtual thread. A future completed by {@link #close()} completes on the closing thread.
   *
   * <p><b>Cancellation.</b> Cancelling the future ({@code cancel}), or completing it yourself (for
   * example through {@code orTimeout}), stops the acquisition: no further round is sent, and a
   * lease granted by a round that was in flight, or whose grant arrives after the cancel, is
   * released at once on every master. {@code cancel} returns false once the lease was handed over;
   * it is then yours to release.
   *
   * <p><b>Reactive code and coroutines</b> adapt the future as it is, with no dependency here:
   * Reactor's {@code Mono.fromFuture(future).doOnCancel(() -> future.cancel(false))} inside a
   * {@code Mono.defer}, RxJava's {@code Single.fromCompletionStage}, Kotlin's {@code await()};
   * release with {@code Mono.fromFuture(lease::releaseAsync)}, for example in {@code
   * Mono.usingWhen}. From a virtual thread, the blocking {@link #acquire} is as cheap: it waits
   * unmounted. {@code docs/async.md} has the details.
   *
   * @param resource the name of the lock, as for {@link #tryAcquire}
   * @param ttl how long the masters keep the lock, as for {@link #tryAcquire}
   * @param maxWait how long to keep trying; positive
   * @return a future of the lease; completed exceptionally with {@link LockTakenException} if the
   *     wait ran out while the lock was held by others, {@link QuorumUnavailableException} if it
   *     ran out while too many masters were failing, {@link IllegalStateException} if this RedLock
   *     was closed while waiting, or {@link java.util.concurrent.CancellationException} once
   *     cancelled
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if an argument is out of range
   * @throws IllegalStateException if this RedLock is closed
   */
  public CompletableFuture<Lease> acquireAsync(String resource, Duration ttl, Duration maxWait) {
    LockKey key = LockKey.of(Arguments.resourceKey(resource));
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    long waitNanos = Arguments.positiveNanos(maxWait, "maxWait");
    return coordinator.acquireAsync(
        resource,
        key,
        ttlMillis,
        waitNanos,
        attempt -> {
          if (attempt.grant() == null) {
            throw Outcomes.failure(
                attempt,
                "could not acquire "
                    + Arguments.quote(resource)
                    + " within "
                    + maxWait.toMillis()
                    + " ms",
                coordinator);
          }
          return new Lease(attempt.grant());
        });
  }

  /**
   * Runs rounds until one grants a lease or {@code waitNanos} has passed ({@link Long#MAX_VALUE}:
   * no limit), as {@link Coordinator#retry} does; for {@link LeaseLock}. Returns the lease, or null
   * if the wait ran out.
   */
  Lease retry(String resource, LockKey key, long ttlMillis, long waitNanos, boolean interruptible)
      throws InterruptedException {
    return lease(coordinator.retry(resource, key, ttlMillis, waitNanos, interruptible));
  }

  /**
   * Returns a {@link java.util.concurrent.locks.Lock} on {@code resource}: each outermost {@code
   * lock()} acquires a lease for {@code ttl} and renews it while held; the last {@code unlock()}
   * releases it. Every lock this RedLock makes on the same resource is the same lock in this
   * process (reentrant across the objects for the holding thread). See {@link LeaseLock} for how it
   * follows the {@code Lock} contract and what happens when a held lock is lost.
   *
   * @param resource the name of the lock, as for {@link #tryAcquire}
   * @param ttl the TTL of each lease and each renewal, as for {@link #tryAcquire}
   * @return a new lock object; thread-safe, and cheap (nothing is sent until it is locked)
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if an argument is out of range
   * @throws IllegalStateException if this RedLock is closed
   */
  public LeaseLock newLock(String resource, Duration ttl) {
    LockKey key = LockKey.of(Arguments.resourceKey(resource));
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    coordinator.checkOpen();
    return new LeaseLock(this, holds, resource, key, ttlMillis);
  }

  /**
   * Returns how many leases this RedLock granted that are neither released nor lost, for metrics. A
   * lease that ran out without being released still counts until it is closed.
   *
   * @return a snapshot, zero or more
   */
  public int leasesHeld() {
    return coordinator.leasesHeld();
  }

  /**
   * Returns how many automatic renewal rounds (of {@link #withLock} and {@link LeaseLock}) have
   * been sent and not yet decided, for metrics: a number that stays high means renewals are waiting
   * on slow masters.
   *
   * @return a snapshot, zero or more
   */
  public int renewalsInFlight() {
    return coordinator.renewalsInFlight();
  }

  /**
   * Runs {@code body} while holding {@code resource}: acquires as {@link #acquire} does, renews the
   * lease by quorum whenever a third of {@code ttl} is left, and releases it when the body returns
   * or throws. A renewal that reaches no quorum is retried after a random pause (around the retry
   * delay) for as long as the lease is valid. The lease is lost when a majority answers that the
   * key is gone or holds another token, or when its validity runs out before a renewal got through:
   * then {@link Lease#isValid()} turns false, {@link Lease#onLost()} completes, and {@link
   * Lease#ensureValid()} throws, so the body should check before each step that must not overlap
   * with another holder's. An expired lease is never renewed. Renewals never block one another: the
   * renewal thread sends each round and handles its answer when it comes.
   *
   * @param resource the name of the lock, as for {@link #tryAcquire}
   * @param ttl the TTL of the lease and of each renewal, as for {@link #tryAcquire}
   * @param maxWait how long to wait for the lock, as for {@link #acquire}
   * @param body the work; runs on the calling thread
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if an argument is out of range
   * @throws LockTakenException if the wait ran out while the lock was held by others
   * @throws QuorumUnavailableException if the wait ran out while too many masters were failing
   * @throws InterruptedException if interrupted while waiting for the lock
   * @throws IllegalStateException if this RedLock is closed
   */
  public void withLock(String resource, Duration ttl, Duration maxWait, Consumer<Lease> body)
      throws InterruptedException {
    requireNonNull(body, "body");
    callWithLock(
        resource,
        ttl,
        maxWait,
        lease -> {
          body.accept(lease);
          return null;
        });
  }

  /**
   * Like {@link #withLock}, for a body that returns a value.
   *
   * @param <T> the type of the body's result
   * @param resource the name of the lock, as for {@link #tryAcquire}
   * @param ttl the TTL of the lease and of each renewal, as for {@link #tryAcquire}
   * @param maxWait how long to wait for the lock, as for {@link #acquire}
   * @param body the work; runs on the calling thread
   * @return what the body returned
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if an argument is out of range
   * @throws LockTakenException if the wait ran out while the lock was held by others
   * @throws QuorumUnavailableException if the wait ran out while too many masters were failing
   * @throws InterruptedException if interrupted while waiting for the lock
   * @throws IllegalStateException if this RedLock is closed
   */
  public <T> T callWithLock(
      String resource, Duration ttl, Duration maxWait, Function<Lease, ? extends T> body)
      throws InterruptedException {
    requireNonNull(body, "body");
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    Lease lease = acquire(resource, ttl, maxWait);
    Renewer.Renewal renewal;
    try {
      renewal = renew(lease, ttlMillis);
    } catch (RuntimeException | Error e) {
      lease.release();
      throw e;
    }
    try {
      return body.apply(lease);
    } finally {
      renewal.cancel();
      lease.release();
    }
  }

  /** Starts renewing {@code lease}; for {@link LeaseLock}. */
  Renewer.Renewal renew(Lease lease, long ttlMillis) {
    return coordinator.renew(lease.grant(), ttlMillis);
  }

  /** One round, for {@link LeaseLock#tryLock()}: the lease, or null. */
  Lease attemptOnce(String resource, LockKey key, long ttlMillis) {
    return lease(coordinator.attemptOnce(resource, key, ttlMillis));
  }

  private static Lease lease(Attempt attempt) {
    return attempt.grant() == null ? null : new Lease(attempt.grant());
  }

  // ---- multi-resource leases: all or nothing over a set of resources

  /**
   * Tries once to acquire every resource of {@code resources} for {@code ttl}, all or nothing: one
   * parallel round in which each master runs one script that sets every key of the set only if none
   * of them is held there, so a master never holds part of a set. The lease is granted, as a single
   * resource's is, only with a majority and a validity above the minimum; otherwise every key the
   * round set is released on every master. The keys are sent in one fixed order (sorted by their
   * UTF-8 bytes), whatever the order given, so overlapping sets never wait on each other in a
   * cycle: two contenders either split the votes and both retry, as on one resource, or one of them
   * wins. Blocks for at most the node timeout.
   *
   * <p>The lease's {@link Lease#resource()} names the set ({@code [a, b, c]}, sorted), and so do
   * the listener's events and exceptions' messages; {@link Lease#resources()} lists it. Extend,
   * release, renewal and {@code releaseAfter} act on every key of the set on every master,
   * compare-and-act; an extend counts a master only where every key still holds the lease's token.
   * With fencing, {@link Lease#fencingToken(String)} gives each resource's token: one number for
   * the whole set, above every earlier lease's token on each of its resources, whether that lease
   * was on one resource or on a set.
   *
   * @param resources the resources, each named as for {@link #tryAcquire}; at least one, at most
   *     {@link #MAX_RESOURCES_PER_LEASE}, none twice, their names together at most {@link
   *     #MAX_RESOURCE_BYTES} UTF-8 bytes
   * @param ttl how long the masters keep every key of the set, as for {@link #tryAcquire}
   * @return the lease on the whole set, or empty if another client holds any resource of it (or
   *     competing clients split the votes)
   * @throws NullPointerException if an argument or a resource is null
   * @throws IllegalArgumentException if an argument is out of range, {@code resources} is empty,
   *     too large, or names a resource twice
   * @throws QuorumUnavailableException if too many masters failed or answered too slowly for a
   *     lease to be granted
   * @throws IllegalStateException if this RedLock is closed
   */
  public Optional<Lease> tryAcquireAll(Collection<String> resources, Duration ttl) {
    ResourceSet set = ResourceSet.of(resources);
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    Attempt attempt = coordinator.attemptOnce(set.shown(), set.key(), ttlMillis);
    if (attempt.grant() != null) {
      return Optional.of(new Lease(attempt.grant()));
    }
    if (attempt.unavailable()) {
      throw Outcomes.failure(
          attempt, "could not acquire " + Arguments.quote(set.shown()), coordinator);
    }
    return Optional.empty();
  }

  /**
   * Acquires every resource of {@code resources} for {@code ttl}, all or nothing, as {@link
   * #tryAcquireAll} does, retrying after randomized pauses until {@code maxWait} has passed, as
   * {@link #acquire} does.
   *
   * @param resources the resources, as for {@link #tryAcquireAll}
   * @param ttl how long the masters keep every key of the set, as for {@link #tryAcquire}
   * @param maxWait how long to keep trying; positive
   * @return the lease on the whole set
   * @throws NullPointerException if an argument or a resource is null
   * @throws IllegalArgumentException if an argument is out of range, {@code resources} is empty,
   *     too large, or names a resource twice
   * @throws LockTakenException if the wait ran out while any resource of the set was held by others
   * @throws QuorumUnavailableException if the wait ran out while too many masters were failing
   * @throws InterruptedException if the thread was interrupted while waiting; nothing is left
   *     locked
   * @throws IllegalStateException if this RedLock is closed
   */
  public Lease acquireAll(Collection<String> resources, Duration ttl, Duration maxWait)
      throws InterruptedException {
    ResourceSet set = ResourceSet.of(resources);
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    long waitNanos = Arguments.positiveNanos(maxWait, "maxWait");
    coordinator.checkOpen();
    Attempt attempt = coordinator.retry(set.shown(), set.key(), ttlMillis, waitNanos, true);
    if (attempt.grant() == null) {
      throw Outcomes.failure(
          attempt,
          "could not acquire "
              + Arguments.quote(set.shown())
              + " within "
              + maxWait.toMillis()
              + " ms",
          coordinator);
    }
    return new Lease(attempt.grant());
  }

  /**
   * Runs {@code body} while holding every resource of {@code resources}: acquires them all or
   * nothing as {@link #acquireAll} does, renews the lease on the whole set as {@link
   * #withLock(String, Duration, Duration, Consumer)} does, and releases every key of it when the
   * body returns or throws.
   *
   * @param resources the resources, as for {@link #tryAcquireAll}
   * @param ttl the TTL of the lease and of each renewal, as for {@link #tryAcquire}
   * @param maxWait how long to wait for the whole set, as for {@link #acquire}
   * @param body the work; runs on the calling thread
   * @throws NullPointerException if an argument or a resource is null
   * @throws IllegalArgumentException if an argument is out of range, {@code resources} is empty,
   *     too large, or names a resource twice
   * @throws LockTakenException if the wait ran out while any resource of the set was held by others
   * @throws QuorumUnavailableException if the wait ran out while too many masters were failing
   * @throws InterruptedException if interrupted while waiting for the set
   * @throws IllegalStateException if this RedLock is closed
   */
  public void withLock(
      Collection<String> resources, Duration ttl, Duration maxWait, Consumer<Lease> body)
      throws InterruptedException {
    requireNonNull(body, "body");
    callWithLock(
        resources,
        ttl,
        maxWait,
        lease -> {
          body.accept(lease);
          return null;
        });
  }

  /**
   * Like {@link #withLock(Collection, Duration, Duration, Consumer)}, for a body that returns a
   * value.
   *
   * @param <T> the type of the body's result
   * @param resources the resources, as for {@link #tryAcquireAll}
   * @param ttl the TTL of the lease and of each renewal, as for {@link #tryAcquire}
   * @param maxWait how long to wait for the whole set, as for {@link #acquire}
   * @param body the work; runs on the calling thread
   * @return what the body returned
   * @throws NullPointerException if an argument or a resource is null
   * @throws IllegalArgumentException if an argument is out of range, {@code resources} is empty,
   *     too large, or names a resource twice
   * @throws LockTakenException if the wait ran out while any resource of the set was held by others
   * @throws QuorumUnavailableException if the wait ran out while too many masters were failing
   * @throws InterruptedException if interrupted while waiting for the set
   * @throws IllegalStateException if this RedLock is closed
   */
  public <T> T callWithLock(
      Collection<String> resources,
      Duration ttl,
      Duration maxWait,
      Function<Lease, ? extends T> body)
      throws InterruptedException {
    requireNonNull(body, "body");
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    Lease lease = acquireAll(resources, ttl, maxWait);
    Renewer.Renewal renewal;
    try {
      renewal = renew(lease, ttlMillis);
    } catch (RuntimeException | Error e) {
      lease.release();
      throw e;
    }
    try {
      return body.apply(lease);
    } finally {
      renewal.cancel();
      lease.release();
    }
  }

  /**
   * Returns a {@link java.util.concurrent.locks.Lock} on every resource of {@code resources} at
   * once: each outermost {@code lock()} acquires a lease on the whole set, all or nothing (as
   * {@link #acquireAll} does), for {@code ttl} and renews it while held; the last {@code unlock()}
   * releases every key of it. Otherwise as {@link #newLock(String, Duration)}; the lock's {@link
   * LeaseLock#resource()} names the set ({@code [a, b, c]}, sorted).
   *
   * @param resources the resources, as for {@link #tryAcquireAll}
   * @param ttl the TTL of each lease and each renewal, as for {@link #tryAcquire}
   * @return a new lock object; thread-safe, and cheap (nothing is sent until it is locked)
   * @throws NullPointerException if an argument or a resource is null
   * @throws IllegalArgumentException if an argument is out of range, {@code resources} is empty,
   *     too large, or names a resource twice
   * @throws IllegalStateException if this RedLock is closed
   */
  public LeaseLock newLock(Collection<String> resources, Duration ttl) {
    ResourceSet set = ResourceSet.of(resources);
    long ttlMillis = coordinator.arguments().ttlMillis(ttl);
    coordinator.checkOpen();
    return new LeaseLock(this, holds, set.shown(), set.key(), ttlMillis);
  }

  /**
   * Checks whether each master is fit for Redlock, and what the placement across datacenters
   * survives: the deployment preflight. Per master, with PASS / WARN / FAIL / UNKNOWN and why:
   * reachable and version; role (a replica FAILs; a master with replicas WARNs, since a failover
   * can lose a lock); cluster mode (FAIL: a lock's keys hash to one shard); {@code
   * maxmemory-policy} (an evicting policy under a {@code maxmemory} limit FAILs: it can evict lock
   * keys and fence counters); persistence ({@code appendonly}, {@code appendfsync}) and what the
   * restart guard then relies on; uptime against {@code maxLeaseTime}; the master's clock offset
   * from this client, from {@code TIME}, bounded by the round trip; admission: whether the restart
   * guard counts the master's vote now, and if not why, when it will, and the remedy, in the words
   * of the acquire's errors. A command an ACL forbids gives UNKNOWN for its check. {@link
   * Inspection#requireQuorum()} turns the findings into a startup check. With datacenter labels
   * ({@link RedLockBuilder#datacenter}), it also says which single-datacenter losses leave a
   * quorum. Read-only; sends nothing that changes a master. Blocks for at most the longer of 1 s
   * and twice the longest node timeout.
   *
   * @return the findings; {@link Inspection#toString()} prints them as a table
   * @throws IllegalStateException if this RedLock is closed
   */
  public Inspection inspect() {
    return Outcomes.inspection(coordinator.inspect());
  }

  /**
   * Admits every reachable master, so that the restart guard counts its votes at once: its current
   * server run (its {@code run_id}) is recorded on it as admitted together with its dataset (the
   * dataset-birth marker, stored now if missing). The admission names no lease time: it holds for
   * every client, whatever its {@code maxLeaseTime}, so raising {@code maxLeaseTime} later needs no
   * new admission. Call it only when no master can have lost a lock it held that may still be
   * valid: for a brand-new cluster, or after restarts longer ago than the longest lease any client
   * held. Until then the restart guard does not count a young master's vote, because a brand-new
   * master cannot be told apart from one that restarted and lost keys while holding them. The
   * admission is of that run and that dataset only: after the master's next restart (whatever
   * snapshot it reloads) or a {@code FLUSHALL} it waits again, or is admitted again. Logs each
   * master's result in words at INFO, and each master not admitted at WARN.
   *
   * @return one outcome per master: {@link NodeOutcome.Status#GRANTED} if admitted by this call,
   *     {@link NodeOutcome.Status#TAKEN} if it was already admitted, otherwise why it could not be
   *     admitted, in words with the remedy, in its detail (unreachable; a replica; a refused
   *     password; an ACL that forbids {@code INFO}, so the connection cannot read the server's run)
   * @throws IllegalStateException if this RedLock is closed
   */
  public List<NodeOutcome> admitFreshNodes() {
    return Outcomes.of(coordinator.admitFreshNodes());
  }

  /**
   * Closes every connection and stops the library's threads, waiting a bounded time for them.
   * Idempotent. Leases still open can no longer be extended or released; their keys expire with
   * their TTL.
   */
  @Override
  public void close() {
    coordinator.close();
  }

  @Override
  public String toString() {
    return "RedLock{" + coordinator + "}";
  }

  /** The selector the plaintext masters share, or null: for tests. */
  SelectorLoop selectorLoop() {
    return coordinator.selectorLoop();
  }

  /** How many lock names this process holds or waits for through {@link LeaseLock}s: for tests. */
  int localHolds() {
    return holds.size();
  }

  /** How many asynchronous acquisitions are pending: for tests. */
  int pendingAcquisitions() {
    return coordinator.pendingAcquisitions();
  }

  /** Waits until the listener has been told every event handed to the event thread: for tests. */
  void awaitEventsTold() {
    coordinator.awaitEventsTold();
  }
}
