package dev.redlock;

import static java.util.Objects.requireNonNull;

import dev.redlock.QuorumRound.Tally;
import dev.redlock.RedLockListener.Denial;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 *       longer than the longest TTL, or run with {@code appendfsync always}; otherwise a second
 *       majority can form. The restart guard keeps such a master out: it sees every restart by the
 *       server's run and uptime, read on every new connection.
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

  /** The node timeout unless {@link Builder#nodeTimeout} says otherwise: 50 ms. */
  public static final Duration DEFAULT_NODE_TIMEOUT = Duration.ofMillis(50);

  /**
   * How long opening a connection to a master (TCP, TLS, the handshake) may take unless {@link
   * Builder#connectTimeout} says otherwise: 1 s.
   */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(1);

  /** The longest connect timeout accepted: one minute. */
  public static final Duration MAX_CONNECT_TIMEOUT = Duration.ofMinutes(1);

  /** The drift factor unless {@link Builder#driftFactor} says otherwise: 0.01 (1%). */
  public static final double DEFAULT_DRIFT_FACTOR = 0.01;

  /** The base retry delay unless {@link Builder#retryDelay} says otherwise: 50 ms. */
  public static final Duration DEFAULT_RETRY_DELAY = Duration.ofMillis(50);

  /** The longest TTL unless {@link Builder#maxLeaseTime} says otherwise: 1 minute. */
  public static final Duration DEFAULT_MAX_LEASE_TIME = Duration.ofMinutes(1);

  /** How long an open circuit breaker skips its master unless set otherwise: 1 s. */
  public static final Duration DEFAULT_CIRCUIT_BREAKER_WAIT = Duration.ofSeconds(1);

  /**
   * How often, at most, {@link Builder#excludeUnfitMasters} checks a master again while it is used:
   * 10 s.
   */
  public static final Duration PREFLIGHT_INTERVAL = Duration.ofSeconds(10);

  /** The longest TTL accepted: one day. */
  public static final Duration MAX_TTL = Duration.ofDays(1);

  /** The longest resource name accepted, in UTF-8 bytes: 16 KiB. */
  public static final int MAX_RESOURCE_BYTES = 16 * 1024;

  private static final Logger log = LoggerFactory.getLogger(RedLock.class);

  /**
   * A system property that picks the transport of plaintext masters: {@code jedis} for one Jedis
   * connection and I/O thread per master, anything else (or unset) for the default, one selector
   * thread for them all. For comparisons (the benchmark), not a supported setting. TLS masters
   * always use Jedis.
   */
  static final String TRANSPORT_PROPERTY = "dev.redlock.transport";

  /** How {@code redis://} masters are talked to; {@code rediss://} (TLS) always by Jedis. */
  enum Transport {
    /** One NIO selector thread for every plaintext master ({@link SelectorNodeClient}). */
    SELECTOR,
    /** One Jedis connection and I/O thread per master ({@link PipelinedNodeClient}). */
    JEDIS;

    /** The transport {@link #TRANSPORT_PROPERTY} asks for, or the default. */
    static Transport fromProperty() {
      return "jedis".equalsIgnoreCase(System.getProperty(TRANSPORT_PROPERTY)) ? JEDIS : SELECTOR;
    }
  }

  private final Masters masters;
  private final Leases leases;
  private final Releases releases;
  private final Arguments arguments;
  private final Events events;
  private final double driftFactor;
  private final long minValidityNanos;
  private final long retryDelayNanos;
  private final boolean fencing;
  private final boolean restartGuard;
  private final long maxLeaseMillis;

  private final long guardMillis; // see Builder#guardMillis; 0 without the guard
  private final long connectTimeoutNanos; // the longest of any master

  private final Preflight preflight;
  private final Tokens tokens = new Tokens();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final ReentrantLock renewerLock = new ReentrantLock();
  private Renewer renewer; // guarded by renewerLock; created by the first withLock

  private RedLock(Builder builder, Masters masters, Events events, Preflight preflight) {
    this.masters = masters;
    this.preflight = preflight;
    this.events = events;
    this.driftFactor = builder.driftFactor;
    this.minValidityNanos = builder.minValidity.toNanos();
    this.retryDelayNanos = builder.retryDelay.toNanos();
    this.fencing = builder.fencing;
    this.restartGuard = builder.restartGuard;
    this.maxLeaseMillis = builder.maxLeaseTime.toMillis();
    this.guardMillis = builder.guardMillis();
    this.connectTimeoutNanos = builder.connectTimeoutNanos(masters.nodeTimeoutNanos());
    this.arguments =
        new Arguments(
            masters.nodeTimeoutNanos(),
            minValidityNanos,
            restartGuard ? maxLeaseMillis : Long.MAX_VALUE);
    this.releases = new Releases(masters, events);
    this.leases = new Leases(masters, releases, events, arguments, driftFactor, minValidityNanos);
  }

  /**
   * Returns a new builder with the defaults.
   *
   * @return a builder; at least one node must be added before {@link Builder#build()}
   */
  public static Builder builder() {
    return new Builder();
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
    byte[] key = Arguments.resourceKey(resource);
    long ttlMillis = arguments.ttlMillis(ttl);
    checkOpen();
    Attempt attempt = attempt(resource, key, ttlMillis);
    if (attempt.lease != null) {
      return Optional.of(attempt.lease);
    }
    if (attempt.unavailable) {
      throw attempt.failure("could not acquire " + Arguments.quote(resource));
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
    byte[] key = Arguments.resourceKey(resource);
    long ttlMillis = arguments.ttlMillis(ttl);
    long waitNanos = Arguments.positiveNanos(maxWait, "maxWait");
    checkOpen();
    Attempt attempt = retry(resource, key, ttlMillis, waitNanos, true);
    if (attempt.lease == null) {
      throw attempt.failure(
          "could not acquire "
              + Arguments.quote(resource)
              + " within "
              + maxWait.toMillis()
              + " ms");
    }
    return attempt.lease;
  }

  /**
   * Runs rounds, with randomized pauses between them, until one grants a lease or {@code waitNanos}
   * has passed ({@link Long#MAX_VALUE}: no limit); returns the last attempt. If not {@code
   * interruptible}, an interrupt does not stop the wait: it is kept pending for the caller.
   */
  Attempt retry(String resource, byte[] key, long ttlMillis, long waitNanos, boolean interruptible)
      throws InterruptedException {
    if (interruptible && Thread.interrupted()) {
      throw new InterruptedException();
    }
    Ticker ticker = masters.ticker();
    long deadline = waitNanos == Long.MAX_VALUE ? 0 : ticker.read() + waitNanos;
    boolean interrupted = false;
    try {
      while (true) {
        Attempt attempt = attempt(resource, key, ttlMillis);
        long left = waitNanos == Long.MAX_VALUE ? Long.MAX_VALUE : deadline - ticker.read();
        if (attempt.lease != null || left <= 0) {
          return attempt;
        }
        long pause =
            Math.min(
                left, retryDelayNanos / 2 + ThreadLocalRandom.current().nextLong(retryDelayNanos));
        if (interruptible) {
          if (Thread.interrupted()) {
            throw new InterruptedException();
          }
          TimeUnit.NANOSECONDS.sleep(pause);
        } else {
          LockSupport.parkNanos(pause);
          interrupted |= Thread.interrupted();
        }
        checkOpen();
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Returns a {@link java.util.concurrent.locks.Lock} on {@code resource}: each outermost {@code
   * lock()} acquires a lease for {@code ttl} and renews it while held; the last {@code unlock()}
   * releases it. See {@link LeaseLock} for how it follows the {@code Lock} contract and what
   * happens when a held lock is lost.
   *
   * @param resource the name of the lock, as for {@link #tryAcquire}
   * @param ttl the TTL of each lease and each renewal, as for {@link #tryAcquire}
   * @return a new lock object; thread-safe, and cheap (nothing is sent until it is locked)
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if an argument is out of range
   * @throws IllegalStateException if this RedLock is closed
   */
  public LeaseLock newLock(String resource, Duration ttl) {
    byte[] key = Arguments.resourceKey(resource);
    long ttlMillis = arguments.ttlMillis(ttl);
    checkOpen();
    return new LeaseLock(this, resource, key, ttlMillis);
  }

  /**
   * Returns how many leases this RedLock granted that are neither released nor lost, for metrics. A
   * lease that ran out without being released still counts until it is closed.
   *
   * @return a snapshot, zero or more
   */
  public int leasesHeld() {
    return leases.held();
  }

  /**
   * Returns how many automatic renewal rounds (of {@link #withLock} and {@link LeaseLock}) have
   * been sent and not yet decided, for metrics: a number that stays high means renewals are waiting
   * on slow masters.
   *
   * @return a snapshot, zero or more
   */
  public int renewalsInFlight() {
    renewerLock.lock();
    try {
      return renewer == null ? 0 : renewer.inFlight();
    } finally {
      renewerLock.unlock();
    }
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
    long ttlMillis = arguments.ttlMillis(ttl);
    Lease lease = acquire(resource, ttl, maxWait);
    Renewer.Renewal renewal;
    try {
      renewal = renewer().start(lease, ttlMillis);
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
    return renewer().start(lease, ttlMillis);
  }

  /** One round, for {@link LeaseLock#tryLock()}. */
  Attempt attemptOnce(String resource, byte[] key, long ttlMillis) {
    checkOpen();
    return attempt(resource, key, ttlMillis);
  }

  private Renewer renewer() {
    renewerLock.lock();
    try {
      checkOpen();
      if (renewer == null) {
        renewer = new Renewer(leases, retryDelayNanos);
      }
      return renewer;
    } finally {
      renewerLock.unlock();
    }
  }

  /**
   * One acquisition, read top to bottom: a fresh token; the vote on every master; the validity; the
   * lease, or else the release on every master. With fencing, the vote also reads each master's
   * fence counter and clock, and the lease keeps the next token to store when it is first asked for
   * ({@link Lease#fencingToken()}).
   */
  private Attempt attempt(String resource, byte[] key, long ttlMillis) {
    byte[] token = tokens.next();
    // The script reads the fence counter whenever it runs; only the plain SET needs no key.
    byte[] legacyFenceKey = fencing || restartGuard ? Arguments.legacyFenceKey(key) : null;

    Tally votes =
        masters.vote((node, i) -> node.acquire(key, legacyFenceKey, token, ttlMillis, guardMillis));

    long ttlNanos = TimeUnit.MILLISECONDS.toNanos(ttlMillis);
    long validity = Validity.remainingNanos(ttlNanos, votes.elapsedNanos(), driftFactor);
    Duration took = Duration.ofNanos(votes.elapsedNanos());
    List<NodeOutcome> outcomes = votes.outcomes();
    if (votes.reachedQuorum() && validity > minValidityNanos) {
      long fence = fencing ? nextFence(votes) : Lease.NO_FENCE;
      Lease lease =
          leases.grant(
              resource,
              key,
              token,
              votes.decidedAtNanos() + validity,
              fence,
              votes.landing(),
              leases.keysExpireBy(votes.startNanos(), ttlMillis));
      if (events.enabled()) { // no allocation on the hot path without a listener
        events.emit(l -> l.acquired(resource, outcomes, took));
      }
      return new Attempt(lease, outcomes, false);
    }

    releases.releaseAll(
        key, token, votes.landing(), leases.keysExpireBy(votes.startNanos(), ttlMillis));
    // A majority voted for us but the lease still failed: the round was too slow.
    boolean unavailable =
        votes.reachedQuorum() || votes.unreachable() > masters.size() - masters.quorum();
    if (events.enabled()) {
      Denial reason = unavailable ? Denial.UNAVAILABLE : Denial.TAKEN;
      events.emit(l -> l.denied(resource, reason, outcomes, took));
    }
    if (log.isDebugEnabled()) {
      log.debug("{} not acquired: {}", Arguments.quote(resource), outcomes);
    }
    return new Attempt(null, outcomes, unavailable);
  }

  /**
   * The lease's fencing token, to be stored when first asked for: above every counter the granting
   * masters had stored and not below any answering master's clock. See {@link Leases#fence} for why
   * a token stored later is as good as one stored during the acquire.
   */
  private static long nextFence(Tally votes) {
    long next = 1;
    for (NodeReply reply : votes.replies()) {
      if (reply != null) {
        next = Math.max(next, Math.max(reply.fence() + 1, reply.timeMicros()));
      }
    }
    return next;
  }

  /**
   * Checks whether each master is fit for Redlock, and what the placement across datacenters
   * survives: the deployment preflight. Per master, with PASS / WARN / FAIL / UNKNOWN and why:
   * reachable and version; role (a replica FAILs; a master with replicas WARNs, since a failover
   * can lose a lock); cluster mode (FAIL: a lock's keys hash to one shard); {@code
   * maxmemory-policy} (an evicting policy under a {@code maxmemory} limit FAILs: it can evict lock
   * keys and fence counters); persistence ({@code appendonly}, {@code appendfsync}) and what the
   * restart guard then relies on; uptime against {@code maxLeaseTime}; the master's clock offset
   * from this client, from {@code TIME}, bounded by the round trip. A command an ACL forbids gives
   * UNKNOWN for its check. With datacenter labels ({@link Builder#datacenter}), it also says which
   * single-datacenter losses leave a quorum. Read-only; sends nothing that changes a master. Blocks
   * for at most the longer of 1 s and twice the longest node timeout.
   *
   * @return the findings; {@link Inspection#toString()} prints them as a table
   * @throws IllegalStateException if this RedLock is closed
   */
  public Inspection inspect() {
    checkOpen();
    List<Preflight.Probe> probes = new ArrayList<>();
    for (int i = 0; i < masters.size(); i++) {
      probes.add(
          preflight.start(
              masters.nodes().get(i), masters.names().get(i), masters.datacenters().get(i)));
    }
    Ticker ticker = masters.ticker();
    long deadline = ticker.read() + preflightWaitNanos(masters.nodeTimeoutNanos());
    List<Inspection.Master> found = new ArrayList<>();
    for (Preflight.Probe probe : probes) {
      found.add(probe.await(deadline, ticker));
    }
    return new Inspection(found, Preflight.losses(masters.datacenters()));
  }

  /** How long the preflight waits for its answers: the longer of 1 s and two node timeouts. */
  static long preflightWaitNanos(long nodeTimeoutNanos) {
    return Math.max(TimeUnit.SECONDS.toNanos(1), 2 * nodeTimeoutNanos);
  }

  /**
   * Admits every reachable master, so that the restart guard counts its votes at once: its dataset
   * is made to look older than the maximum lease time, and its current server run (its {@code
   * run_id}) is recorded on it as admitted. Call it only when no master can have lost a lock it
   * held within the last maximum lease time: for a brand-new cluster, or after restarts longer ago
   * than that. Until then the restart guard does not count a young master's vote, because a
   * brand-new master cannot be told apart from one that restarted and lost keys while holding them.
   * The admission is of that run only: after its next restart the master waits again (or is
   * admitted again), whatever snapshot it reloads.
   *
   * @return one outcome per master: {@link NodeOutcome.Status#GRANTED} if admitted by this call,
   *     {@link NodeOutcome.Status#TAKEN} if it was already admitted, otherwise why it could not be
   *     admitted (unreachable, or its connection cannot read the server's run: an ACL that forbids
   *     {@code INFO})
   * @throws IllegalStateException if this RedLock is closed
   */
  public List<NodeOutcome> admitFreshNodes() {
    checkOpen();
    long age = guardMillis > 0 ? guardMillis : maxLeaseMillis;
    // A master still connecting is waited for: the admission must not skip it for being slow.
    long deadline = masters.ticker().read() + connectTimeoutNanos + masters.nodeTimeoutNanos();
    Tally tally = masters.all((node, i) -> node.admit(age), deadline);
    log.info("admitted fresh masters: {}", tally.outcomes());
    for (NodeOutcome outcome : tally.outcomes()) {
      if (outcome.status() != NodeOutcome.Status.GRANTED
          && outcome.status() != NodeOutcome.Status.TAKEN) {
        log.warn(
            "master {} was not admitted ({}{}): with the restart guard on it votes only once it"
                + " has been up {} s, or once admitted",
            outcome.node(),
            outcome.status(),
            outcome.detail().isEmpty() ? "" : ": " + outcome.detail(),
            TimeUnit.MILLISECONDS.toSeconds(age));
      }
    }
    return tally.outcomes();
  }

  /**
   * Closes every connection and stops the library's threads, waiting a bounded time for them.
   * Idempotent. Leases still open can no longer be extended or released; their keys expire with
   * their TTL.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    Renewer stopping;
    renewerLock.lock();
    try {
      stopping = renewer;
    } finally {
      renewerLock.unlock();
    }
    long grace = masters.nodeTimeoutNanos() + TimeUnit.SECONDS.toNanos(1);
    if (stopping != null) {
      stopping.close(grace);
    }
    releases.close();
    masters.close(masters.ticker().read() + grace);
    events.close(grace);
  }

  @Override
  public String toString() {
    return "RedLock{nodes=" + masters.names() + ", quorum=" + masters.quorum() + "}";
  }

  /** The selector the plaintext masters share, or null: for tests. */
  SelectorLoop selectorLoop() {
    return masters.io();
  }

  /** Waits until the listener has been told every event handed to the event thread: for tests. */
  void awaitEventsTold() {
    events.awaitTold(TimeUnit.SECONDS.toNanos(5));
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("RedLock is closed");
    }
  }

  /** The result of one acquisition attempt. */
  static final class Attempt {
    final Lease lease;
    final List<NodeOutcome> outcomes;
    final boolean unavailable;

    Attempt(Lease lease, List<NodeOutcome> outcomes, boolean unavailable) {
      this.lease = lease;
      this.outcomes = outcomes;
      this.unavailable = unavailable;
    }

    RedLockException failure(String message) {
      return unavailable
          ? new QuorumUnavailableException(message + ": too few masters answered in time", outcomes)
          : new LockTakenException(message + ": held by another client", outcomes);
    }
  }

  /**
   * Configures a {@link RedLock}. Not thread-safe; {@link #build()} checks everything and the
   * result does not change when the builder does.
   */
  public static final class Builder {

    private final List<NodeAddress> addresses = new ArrayList<>();
    private final List<String> datacenters = new ArrayList<>(); // per address; empty: no label
    private final List<Duration> timeouts = new ArrayList<>(); // per address; null: nodeTimeout
    private final Map<String, String> servers = new HashMap<>();
    private boolean excludeUnfitMasters;
    private Duration nodeTimeout = DEFAULT_NODE_TIMEOUT;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private double driftFactor = DEFAULT_DRIFT_FACTOR;
    private Duration minValidity = Duration.ZERO;
    private Duration retryDelay = DEFAULT_RETRY_DELAY;
    private RedLockListener listener = Events.none();
    private boolean circuitBreakers = true;
    private boolean fencing = true;
    private boolean restartGuard = true;
    private Duration maxLeaseTime = DEFAULT_MAX_LEASE_TIME;
    private Duration circuitBreakerWait = DEFAULT_CIRCUIT_BREAKER_WAIT;
    private Ticker ticker = Ticker.system();
    private NodeClientFactory nodeClients; // null: the transport's clients
    private Transport transport; // null: Transport.fromProperty()
    private SSLContext sslContext;

    private Builder() {}

    /**
     * Adds one independent Redis master.
     *
     * @param uri {@code redis://[user:password@]host[:port][/db]}, or {@code rediss://} for TLS;
     *     the port defaults to 6379 and the database to 0. The password runs to the last {@code @}
     *     and may hold any character, percent-encoded ({@code %40} for {@code @}) or not; no error
     *     message shows it
     * @return this builder
     * @throws NullPointerException if {@code uri} is null
     * @throws IllegalArgumentException if the URI is malformed, or names a {@code host:port}
     *     already added (one server cannot be two independent masters)
     */
    public Builder node(String uri) {
      return add(uri, "", null);
    }

    /**
     * Adds the masters of one datacenter, under one label and with a node timeout of their own: a
     * remote datacenter needs a longer timeout than the local one. The labels let {@link
     * RedLock#inspect()} say which single-datacenter losses the placement survives (2/2/1 masters
     * across three datacenters survives any; 3/2 across two does not survive losing the first).
     *
     * @param name the datacenter's label; non-empty
     * @param nodeTimeout how long each of these masters may take to connect or answer; positive,
     *     less than {@link #MAX_TTL}
     * @param uris the masters' URIs, as for {@link #node(String)}
     * @return this builder
     * @throws NullPointerException if an argument or a URI is null
     * @throws IllegalArgumentException if the name is empty, the timeout out of range, a URI
     *     malformed or a master repeated
     */
    public Builder datacenter(String name, Duration nodeTimeout, List<String> uris) {
      requireNonNull(name, "name");
      requireNonNull(uris, "uris");
      if (name.isBlank()) {
        throw new IllegalArgumentException("datacenter name must not be blank");
      }
      checkNodeTimeout(nodeTimeout);
      for (String uri : uris) {
        add(uri, name, nodeTimeout);
      }
      return this;
    }

    private Builder add(String uri, String datacenter, Duration timeout) {
      NodeAddress address = NodeAddress.parse(uri);
      String previous = servers.putIfAbsent(address.serverKey(), address.toString());
      if (previous != null) {
        throw new IllegalArgumentException(
            "node "
                + address
                + " is configured twice (as "
                + previous
                + "): the masters must be"
                + " independent servers");
      }
      addresses.add(address);
      datacenters.add(datacenter);
      timeouts.add(timeout);
      return this;
    }

    /**
     * Adds several independent Redis masters, as {@link #node(String)} does for each.
     *
     * @param uris the masters' URIs
     * @return this builder
     * @throws NullPointerException if the list or an element is null
     * @throws IllegalArgumentException if a URI is malformed or a master is repeated
     */
    public Builder nodes(List<String> uris) {
      requireNonNull(uris, "nodes");
      for (String uri : uris) {
        node(uri);
      }
      return this;
    }

    /**
     * Sets how long one master may take to answer one command before its vote is counted as failed:
     * the Redlock spec's per-node timeout. Keep it well below every TTL: the spec suggests 5 to 50
     * ms for a 10 s TTL. Opening a connection has its own, longer bound ({@link #connectTimeout}).
     * Default {@link #DEFAULT_NODE_TIMEOUT}.
     *
     * @param timeout positive
     * @return this builder
     * @throws NullPointerException if {@code timeout} is null
     * @throws IllegalArgumentException if it is not positive
     */
    public Builder nodeTimeout(Duration timeout) {
      this.nodeTimeout = checkNodeTimeout(timeout);
      return this;
    }

    private static Duration checkNodeTimeout(Duration timeout) {
      Arguments.positiveNanos(timeout, "nodeTimeout");
      if (timeout.compareTo(MAX_TTL) >= 0) {
        throw new IllegalArgumentException("nodeTimeout must be less than " + MAX_TTL);
      }
      return timeout;
    }

    /**
     * Sets how long opening a connection to one master may take: TCP, TLS and the handshake (AUTH,
     * SELECT, the server's run for the restart guard, loading the scripts). {@link #build()} waits
     * for the first attempts up to this long, and {@link RedLock#admitFreshNodes()} waits for a
     * master still connecting, so a slow first connection (a cold JVM, a distant datacenter) costs
     * nothing; a command that finds its master's connection still opening waits only its node
     * timeout, as a failed vote. Never less than a master's node timeout. Default {@link
     * #DEFAULT_CONNECT_TIMEOUT}.
     *
     * @param timeout positive, at most {@link #MAX_CONNECT_TIMEOUT}
     * @return this builder
     * @throws NullPointerException if {@code timeout} is null
     * @throws IllegalArgumentException if it is not positive or is longer than {@link
     *     #MAX_CONNECT_TIMEOUT}
     */
    public Builder connectTimeout(Duration timeout) {
      Arguments.positiveNanos(timeout, "connectTimeout");
      if (timeout.compareTo(MAX_CONNECT_TIMEOUT) > 0) {
        throw new IllegalArgumentException(
            "connectTimeout must be at most " + MAX_CONNECT_TIMEOUT + ": " + timeout);
      }
      this.connectTimeout = timeout;
      return this;
    }

    /** The connect timeout of a master whose node timeout is {@code nodeTimeoutNanos}. */
    private long connectTimeoutNanos(long nodeTimeoutNanos) {
      return Math.max(connectTimeout.toNanos(), nodeTimeoutNanos);
    }

    /**
     * Keeps masters that the preflight finds unfit for Redlock from voting: a replica, a master in
     * cluster mode, or one whose {@code maxmemory-policy} can evict keys under a {@code maxmemory}
     * limit (see {@link RedLock#inspect()}; a FAIL verdict). Their acquire, fence and extend votes
     * fail at once with the reason in the outcome's detail; releases still reach them. Each master
     * is checked when the RedLock is built and again at most every {@link #PREFLIGHT_INTERVAL}
     * while it is used, so a master whose configuration is corrected votes again. Default off.
     *
     * @param enabled whether unfit masters are kept from voting
     * @return this builder
     */
    public Builder excludeUnfitMasters(boolean enabled) {
      this.excludeUnfitMasters = enabled;
      return this;
    }

    /**
     * Sets the fraction of the TTL allowed for clock drift between this process and the masters;
     * the drift allowance is {@code ttl * driftFactor + 2 ms}. Default {@link
     * #DEFAULT_DRIFT_FACTOR}.
     *
     * @param driftFactor in [0, 0.1)
     * @return this builder
     * @throws IllegalArgumentException if it is outside [0, 0.1) or not a number
     */
    public Builder driftFactor(double driftFactor) {
      if (!(driftFactor >= 0 && driftFactor < 0.1)) {
        throw new IllegalArgumentException("driftFactor must be in [0, 0.1): " + driftFactor);
      }
      this.driftFactor = driftFactor;
      return this;
    }

    /**
     * Sets the least validity a new or extended lease must have; a round that leaves less counts as
     * failed. Default zero (any positive validity).
     *
     * @param minValidity zero or positive
     * @return this builder
     * @throws NullPointerException if {@code minValidity} is null
     * @throws IllegalArgumentException if it is negative or longer than {@link #MAX_TTL}
     */
    public Builder minValidity(Duration minValidity) {
      requireNonNull(minValidity, "minValidity");
      if (minValidity.isNegative() || minValidity.compareTo(MAX_TTL) >= 0) {
        throw new IllegalArgumentException(
            "minValidity must be zero or positive and less than " + MAX_TTL + ": " + minValidity);
      }
      this.minValidity = minValidity;
      return this;
    }

    /**
     * Sets the mean pause between rounds of {@link RedLock#acquire}; each pause is drawn uniformly
     * from [0.5, 1.5) times this. Default {@link #DEFAULT_RETRY_DELAY}.
     *
     * @param retryDelay positive, at most {@link #MAX_TTL}
     * @return this builder
     * @throws NullPointerException if {@code retryDelay} is null
     * @throws IllegalArgumentException if it is not positive or is longer than {@link #MAX_TTL}
     */
    public Builder retryDelay(Duration retryDelay) {
      this.retryDelay = atMostOneDay(retryDelay, "retryDelay");
      return this;
    }

    /**
     * Sets the listener told of every acquire, denial, extend, loss and release, with each master's
     * answer. Default: none.
     *
     * @param listener a thread-safe listener; its exceptions are logged and ignored
     * @return this builder
     * @throws NullPointerException if {@code listener} is null
     */
    public Builder listener(RedLockListener listener) {
      this.listener = requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Turns fencing tokens on or off. On (the default), every lease carries a {@link
     * Lease#fencingToken() fencing token} greater than that of every earlier lease on the same
     * resource, at the cost of a second round to a quorum during acquire. Off, acquire is one round
     * and {@link Lease#fencingToken()} throws.
     *
     * @param enabled whether leases carry fencing tokens
     * @return this builder
     */
    public Builder fencing(boolean enabled) {
      this.fencing = enabled;
      return this;
    }

    /**
     * Turns the restart guard on or off. On (the default), a master does not vote until both its
     * server run and its dataset are older than {@link #maxLeaseTime} (stretched by twice the drift
     * factor), so it cannot help a second majority form while an earlier lease it had granted may
     * still be valid: a restart is seen by the server's {@code run_id} and {@code
     * uptime_in_seconds}, read by every new connection (every restart breaks it), whatever snapshot
     * the master reloads; a {@code FLUSHALL} or a failover to an empty replica by the dataset-birth
     * marker it removes. A restart of a master whose persistence loses nothing ({@code appendonly
     * yes} with {@code appendfsync always}) does not count. Every TTL must be at most {@link
     * #maxLeaseTime}. A brand-new cluster looks the same as a restarted one: admit it with {@link
     * RedLock#admitFreshNodes()}. The connection needs {@code INFO}: a master whose user may not
     * read it never votes with the guard on.
     *
     * @param enabled whether young masters' votes are ignored
     * @return this builder
     */
    public Builder restartGuard(boolean enabled) {
      this.restartGuard = enabled;
      return this;
    }

    /**
     * Sets the longest TTL this client will use (acquire, extend and renewal), which is how long
     * the restart guard keeps a restarted master from voting. Default {@link
     * #DEFAULT_MAX_LEASE_TIME}. Every RedLock sharing the masters should use the same value.
     *
     * @param maxLeaseTime positive, at most {@link #MAX_TTL}
     * @return this builder
     * @throws NullPointerException if {@code maxLeaseTime} is null
     * @throws IllegalArgumentException if it is not positive or is longer than {@link #MAX_TTL}
     */
    public Builder maxLeaseTime(Duration maxLeaseTime) {
      Arguments.positiveNanos(maxLeaseTime, "maxLeaseTime");
      if (maxLeaseTime.compareTo(MAX_TTL) > 0 || maxLeaseTime.toMillis() < 1) {
        throw new IllegalArgumentException(
            "maxLeaseTime must be between 1 ms and " + MAX_TTL + ": " + maxLeaseTime);
      }
      this.maxLeaseTime = maxLeaseTime;
      return this;
    }

    /**
     * Turns the per-master circuit breakers on or off. On (the default), a master whose recent
     * calls mostly failed or timed out is skipped at once, as a failed vote, instead of costing its
     * node timeout; after {@link #circuitBreakerWait} it is probed again and, if it answers, used
     * again. Releases are still sent to it.
     *
     * @param enabled whether to use circuit breakers
     * @return this builder
     */
    public Builder circuitBreakers(boolean enabled) {
      this.circuitBreakers = enabled;
      return this;
    }

    /**
     * Sets how long an open circuit breaker skips its master before probing it again. Default
     * {@link #DEFAULT_CIRCUIT_BREAKER_WAIT}.
     *
     * @param wait positive, at most {@link #MAX_TTL}
     * @return this builder
     * @throws NullPointerException if {@code wait} is null
     * @throws IllegalArgumentException if it is not positive or is longer than {@link #MAX_TTL}
     */
    public Builder circuitBreakerWait(Duration wait) {
      this.circuitBreakerWait = atMostOneDay(wait, "circuitBreakerWait");
      return this;
    }

    /**
     * Sets the TLS context for {@code rediss://} masters, for a private CA or client certificates.
     * Default: the JVM's default context (its default trust store). Either way the master's
     * certificate must name the host in its URI.
     *
     * @param sslContext an initialized context
     * @return this builder
     * @throws NullPointerException if {@code sslContext} is null
     */
    public Builder sslContext(SSLContext sslContext) {
      this.sslContext = requireNonNull(sslContext, "sslContext");
      return this;
    }

    /** Refuses settings that are each in range but together leave no TTL that could be granted. */
    private void checkSettingsTogether() {
      Duration longest = restartGuard ? maxLeaseTime : MAX_TTL;
      String longestName = restartGuard ? "maxLeaseTime" : "the longest TTL";
      Duration slowest = longestNodeTimeout();
      if (slowest.compareTo(longest) >= 0) {
        throw new IllegalArgumentException(
            "nodeTimeout ("
                + slowest
                + ") must be less than "
                + longestName
                + " ("
                + longest
                + "): every TTL must be above the one and at most the other");
      }
      long best = Validity.remainingNanos(longest.toNanos(), 0, driftFactor);
      if (best <= minValidity.toNanos()) {
        throw new IllegalArgumentException(
            "minValidity ("
                + minValidity
                + ") must be less than what the drift allowance (driftFactor "
                + driftFactor
                + ", plus 2 ms) leaves of "
                + longestName
                + " ("
                + longest
                + "): "
                + Duration.ofNanos(best)
                + "; no lease could ever be granted");
      }
    }

    private Duration longestNodeTimeout() {
      Duration longest = Duration.ZERO;
      for (Duration timeout : timeouts) {
        Duration own = timeout == null ? nodeTimeout : timeout;
        longest = own.compareTo(longest) > 0 ? own : longest;
      }
      return longest;
    }

    /**
     * How old a master's dataset and server run must be for the restart guard to count its vote:
     * the longest lease, stretched by twice the drift factor, since the run's age is measured on
     * this client's clock and the lease it protects on its holder's. 0 without the guard.
     */
    private long guardMillis() {
      long longest = maxLeaseTime.toMillis();
      return restartGuard ? longest + (long) Math.ceil(longest * 2 * driftFactor) : 0;
    }

    private static Duration atMostOneDay(Duration value, String name) {
      Arguments.positiveNanos(value, name);
      if (value.compareTo(MAX_TTL) > 0) {
        throw new IllegalArgumentException(name + " must be at most " + MAX_TTL + ": " + value);
      }
      return value;
    }

    Builder ticker(Ticker ticker) {
      this.ticker = requireNonNull(ticker, "ticker");
      return this;
    }

    Builder nodeClients(NodeClientFactory factory) {
      this.nodeClients = requireNonNull(factory, "factory");
      return this;
    }

    /** Picks the transport of plaintext masters, over {@link #TRANSPORT_PROPERTY}: for tests. */
    Builder transport(Transport transport) {
      this.transport = requireNonNull(transport, "transport");
      return this;
    }

    /**
     * Builds the coordinator: opens one connection per master in parallel and waits up to the
     * connect timeout for them. A master that cannot be reached does not fail the build; it counts
     * as a failed vote until it can.
     *
     * @return a new RedLock, which must be closed
     * @throws IllegalArgumentException if no node was added, or if the settings leave no TTL that
     *     could be granted (see {@link #maxLeaseTime})
     */
    public RedLock build() {
      if (addresses.isEmpty()) {
        throw new IllegalArgumentException("at least one node is required");
      }
      checkSettingsTogether();
      NodeClientFactory factory = nodeClients;
      Events events = new Events(listener);
      SelectorLoop io = null;
      if (factory == null) {
        SSLContext tls = sslContext != null ? sslContext : defaultSslContext(addresses);
        Transport plain = transport != null ? transport : Transport.fromProperty();
        if (plain == Transport.SELECTOR && addresses.stream().anyMatch(a -> !a.tls())) {
          io =
              new SelectorLoop(
                  (where, error) -> events.emitLater(l -> l.internalError(where, error)),
                  InetAddress::getAllByName);
        }
        SelectorLoop selector = io;
        factory =
            (address, index, timeout, t) ->
                selector == null || address.tls()
                    ? new PipelinedNodeClient(
                        address, index, timeout, connectTimeoutNanos(timeout), t, tls)
                    : new SelectorNodeClient(
                        address, timeout, connectTimeoutNanos(timeout), t, selector);
      }
      List<NodeClient> clients = new ArrayList<>(addresses.size());
      List<String> names = new ArrayList<>(addresses.size());
      long[] timeoutsNanos = new long[addresses.size()];
      Preflight preflight = new Preflight(restartGuard, guardMillis());
      try {
        for (int i = 0; i < addresses.size(); i++) {
          long timeoutNanos = (timeouts.get(i) == null ? nodeTimeout : timeouts.get(i)).toNanos();
          timeoutsNanos[i] = timeoutNanos;
          NodeClient client = factory.create(addresses.get(i), i, timeoutNanos, ticker);
          if (circuitBreakers) {
            client =
                new BreakerNodeClient(
                    client,
                    addresses.get(i).toString(),
                    timeoutNanos,
                    circuitBreakerWait,
                    ticker,
                    // Recorded on whatever thread completed the call, often the one reading every
                    // master's replies: the log line and the listener run on the event thread.
                    (node, state) ->
                        events.run(
                            () -> {
                              log.info("circuit breaker of {} is now {}", node, state);
                              events.emit(l -> l.circuitChanged(node, state));
                            }));
          }
          if (excludeUnfitMasters) {
            client =
                new FitNodeClient(
                    client,
                    preflight,
                    addresses.get(i).toString(),
                    datacenters.get(i),
                    PREFLIGHT_INTERVAL.toNanos(),
                    ticker,
                    events::run);
          }
          clients.add(client);
          names.add(addresses.get(i).toString());
        }
      } catch (RuntimeException | Error e) {
        clients.forEach(NodeClient::close);
        if (io != null) {
          io.close(nodeTimeout.toNanos());
        }
        throw e;
      }
      Masters masters = new Masters(clients, names, datacenters, timeoutsNanos, ticker, io);
      masters.awaitFirstConnect(ticker.read() + connectTimeoutNanos(masters.nodeTimeoutNanos()));
      if (excludeUnfitMasters) {
        // The first verdicts before the first round, bounded like inspect().
        long deadline = ticker.read() + preflightWaitNanos(masters.nodeTimeoutNanos());
        for (NodeClient client : clients) {
          ((FitNodeClient) client).awaitFirstCheck(deadline);
        }
      }
      return new RedLock(this, masters, events, preflight);
    }
  }

  /** The JVM's default TLS context, looked up only when some master uses {@code rediss://}. */
  private static SSLContext defaultSslContext(List<NodeAddress> addresses) {
    if (addresses.stream().noneMatch(NodeAddress::tls)) {
      return null;
    }
    try {
      return SSLContext.getDefault();
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("no default TLS context for rediss:// masters", e);
    }
  }

  /** Creates the client for one master; tests substitute fakes. */
  @FunctionalInterface
  interface NodeClientFactory {
    NodeClient create(NodeAddress address, int index, long nodeTimeoutNanos, Ticker ticker);
  }
}
