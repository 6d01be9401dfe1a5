package dev.redlock;

import dev.redlock.internal.lease.Grant;
import dev.redlock.internal.lease.Grant.FenceFailure;
import dev.redlock.internal.lease.ResourceSet;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The handle on one acquisition of a resource: valid until its deadline, which only a successful
 * quorum {@link #extend(Duration) extend} moves, and only forward.
 *
 * <p>A lease is thread-safe: any thread may check, extend or release it. Its identity (the resource
 * and the random token written to the masters) never changes, and {@link #toString()} never shows
 * the token. {@link #close()} releases it on every master, is idempotent and never throws.
 *
 * <p>Validity is measured on this process's monotonic clock; see {@link RedLock} for what it
 * assumes. Work that must not overlap with another holder's should check {@link #isValid()} (or
 * better, a fencing token in the guarded store) before each step.
 */
public final class Lease implements AutoCloseable {

  private final Grant grant;

  Lease(Grant grant) {
    this.grant = grant;
  }

  /**
   * Returns the resource this lease was acquired on.
   *
   * @return the resource name, as passed to {@link RedLock#tryAcquire}; for a lease on a set
   *     ({@link RedLock#tryAcquireAll}), the set's name, {@code [a, b, c]}, sorted
   */
  public String resource() {
    return grant.resource();
  }

  /**
   * Returns every resource this lease holds: the set given to {@link RedLock#tryAcquireAll} (and
   * the other multi-resource calls), sorted by the names' UTF-8 bytes; for a lease on one resource,
   * that resource.
   *
   * @return an immutable list of one or more names
   */
  public List<String> resources() {
    return ResourceSet.namesOf(grant);
  }

  /**
   * Returns the fencing token of {@code resource}, one of {@link #resources()}: greater than the
   * token of every earlier lease that held the same resource, alone or in a set, under the same
   * conditions as {@link #fencingToken()}. Every resource of a set has the same token, the lease's
   * one token; it is stored on the masters by the first call of this method, of {@link
   * #fencingTokens()} or of {@link #fencingToken()}, by one quorum round that stores it only where
   * every key of the set still holds this lease's token.
   *
   * @param resource a resource this lease holds
   * @return a positive token, fixed for the lease's lifetime
   * @throws NullPointerException if {@code resource} is null
   * @throws IllegalArgumentException if this lease does not hold {@code resource}
   * @throws IllegalStateException if the RedLock was built with fencing turned off
   * @throws LeaseLostException as for {@link #fencingToken()}
   * @throws QuorumUnavailableException as for {@link #fencingToken()}
   */
  public long fencingToken(String resource) {
    java.util.Objects.requireNonNull(resource, "resource");
    if (!resources().contains(resource)) {
      throw new IllegalArgumentException(
          "this lease does not hold "
              + (resource.length() <= 64 ? resource : resource.substring(0, 64) + "...")
              + "; it holds "
              + shownResource());
    }
    return fencingToken();
  }

  /**
   * Returns the fencing token of each resource this lease holds, as {@link #fencingToken(String)}
   * gives it.
   *
   * @return an immutable map from each of {@link #resources()}, in their order, to its token
   * @throws IllegalStateException if the RedLock was built with fencing turned off
   * @throws LeaseLostException as for {@link #fencingToken()}
   * @throws QuorumUnavailableException as for {@link #fencingToken()}
   */
  public Map<String, Long> fencingTokens() {
    long token = fencingToken();
    Map<String, Long> tokens = new LinkedHashMap<>();
    for (String resource : resources()) {
      tokens.put(resource, token);
    }
    return java.util.Collections.unmodifiableMap(tokens);
  }

  /**
   * Returns this lease's fencing token: greater than the token of every earlier lease on the same
   * resource, as long as the Redlock assumptions hold and no majority of masters lost its data at
   * once (see the README). Pass it with every write to the resource the lock protects, and have
   * that resource reject a write whose token is lower than the highest it has seen: a holder that
   * was paused past its validity is then refused.
   *
   * <p>The token is chosen during the acquire (from the fence counters and clocks the granting
   * masters reported) but stored on the masters only when this method is first called, by one
   * quorum round that stores it only where the key still holds this lease's token: a lease whose
   * token is never read costs no second round. The first call therefore blocks for at most the node
   * timeout; later calls return at once. The README explains why a token stored later is as good as
   * one stored during the acquire.
   *
   * @return a positive token, fixed for the lease's lifetime (extends keep it)
   * @throws IllegalStateException if the RedLock was built with fencing turned off
   * @throws LeaseLostException if the token was never stored and the lease is no longer valid, or a
   *     majority of masters answered that its key is gone or another's (the lease is then lost)
   * @throws QuorumUnavailableException if too few masters answered the store in time; the lease is
   *     unchanged and a later call tries again
   */
  public long fencingToken() {
    if (!grant.fenced()) {
      throw new IllegalStateException("fencing is turned off for this RedLock");
    }
    FenceFailure failure = grant.storeFence();
    if (failure != null) {
      throw Outcomes.failure(failure);
    }
    return grant.fence();
  }

  /**
   * Returns how much longer this lease can be trusted: zero once it has expired, was lost, or was
   * released.
   *
   * @return a non-negative duration
   */
  public Duration remainingValidity() {
    long left = grant.remainingNanos();
    return left > 0 ? Duration.ofNanos(left) : Duration.ZERO;
  }

  /**
   * Returns whether this lease is still held: not expired, not released, and not lost.
   *
   * @return true while the lease can be trusted
   */
  public boolean isValid() {
    return grant.isValid();
  }

  /**
   * Throws if this lease can no longer be trusted; call it before each step of work that must not
   * overlap with another holder's.
   *
   * @throws LeaseLostException if the lease expired, was lost, or was released
   */
  public void ensureValid() {
    if (!isValid()) {
      throw new LeaseLostException(
          "lease on " + shownResource() + " is no longer valid (" + grant.status() + ")");
    }
  }

  /**
   * Returns a stage that completes with this lease when it is lost: when a majority of masters
   * answers an extend (manual, or the automatic renewal of {@link RedLock#withLock}) that the key
   * is gone or holds another token, or when a renewed lease runs out before a renewal got through.
   * It does not complete when the lease is released, nor when an unrenewed lease simply runs out
   * (check {@link #isValid()} for that). By the time it completes, {@link #isValid()} is already
   * false; the masters that still held the key are released after it completes. Dependent actions
   * run on the thread that found the loss unless an async variant is used; they must not block.
   *
   * @return a stage completed at most once, never exceptionally
   */
  public CompletionStage<Lease> onLost() {
    return grant.whenLost().thenApply(lost -> this);
  }

  /**
   * Extends this lease on a quorum of masters so that it lasts {@code ttl} from the start of this
   * call (less the elapsed time and the clock drift, as on acquire). The masters' expiry is never
   * shortened, and an expired lock is never re-created.
   *
   * <p>If the lease is no longer valid this returns false without contacting any master. If a
   * quorum does not confirm the extension in time, this returns false and the lease is unchanged:
   * still valid until its old deadline (no master said the key was gone, and an extend never
   * shortens a key), so the call may be repeated. If a majority answers that the key is gone or
   * holds another token, the lease is lost: {@link #isValid()} is false from then on and {@link
   * #onLost()} completes. Blocks for at most the node timeout.
   *
   * @param ttl the new time to live; more than the node timeout
   * @return true if the lease was extended; false if it was not (check {@link #isValid()})
   * @throws NullPointerException if {@code ttl} is null
   * @throws IllegalArgumentException if {@code ttl} is not positive, is not above the node timeout
   *     and minimum validity, or is too long
   */
  public boolean extend(Duration ttl) {
    return grant.extend(ttl);
  }

  /**
   * Like {@link #extend}, without blocking the calling thread: the returned future completes with
   * what {@code extend} would return once the round is decided (within about the node timeout), on
   * the RedLock's event thread (see {@link RedLock#acquireAsync} for the threads). If the lease is
   * no longer valid it completes at once with false, contacting no master.
   *
   * @param ttl the new time to live, as for {@link #extend}
   * @return a future of true if the lease was extended, false if not (check {@link #isValid()})
   * @throws NullPointerException if {@code ttl} is null
   * @throws IllegalArgumentException if {@code ttl} is not positive, is not above the node timeout
   *     and minimum validity, or is too long
   */
  public CompletableFuture<Boolean> extendAsync(Duration ttl) {
    return grant.extendAsync(ttl);
  }

  /**
   * Like {@link #release()}, without blocking the calling thread: the returned future completes
   * once a majority of masters answered, or at the node timeout, on the RedLock's event thread (see
   * {@link RedLock#acquireAsync} for the threads); the other masters are followed in the background
   * as for {@code release()}. This handle is released from the call on: {@link #isValid()} is false
   * at once. Idempotent: a lease already released completes at once.
   *
   * @return a future completed when the release round is decided; never completed exceptionally
   */
  public CompletableFuture<Void> releaseAsync() {
    return grant.releaseAsync();
  }

  /**
   * Releases this lease: sends every master the compare-and-delete of this lease's key (deleted
   * only where it still holds this lease's token) and returns once a majority answered, or at the
   * node timeout; then no majority holds the key for this lease. The other masters are followed in
   * the background: a release that failed or was dropped is sent again once the master can be
   * reached, and a master whose acquire was lost in flight (it may still run it) gets a second
   * release once the first is answered, until every key of the lease must have expired anyway or
   * the RedLock is closed; {@link RedLockListener#releaseCompleted} tells how each ended.
   * Idempotent; never throws because masters failed (a key a master could not be reached for
   * expires with its TTL).
   */
  public void release() {
    grant.release();
  }

  /**
   * Releases this lease after {@code delay} rather than now: on every master where the key still
   * holds this lease's token, its expiry is shortened to {@code delay}; it is never lengthened and
   * never re-created. For a lock that must be kept at least until some time (ShedLock's {@code
   * lockAtLeastFor}) even though the work is done. From this call on the handle is released: {@link
   * #isValid()} is false and it cannot be extended. A zero or negative delay releases at once, as
   * {@link #release()} does. Blocks for at most the node timeout.
   *
   * @param delay how long the masters should keep the lock from now; shortened to whole
   *     milliseconds, at least 1
   * @return true if a majority of masters confirmed (the lock ends within {@code delay} there);
   *     false if not, in which case the key expires with its current TTL where it was not reached,
   *     or if this lease was already released or lost
   * @throws NullPointerException if {@code delay} is null
   */
  public boolean releaseAfter(Duration delay) {
    return grant.releaseAfter(delay);
  }

  /**
   * Returns whether this lease was lost: a majority of masters answered an extend that the key is
   * gone or holds another token, or a renewed lease ran out before a renewal got through. Once true
   * it stays true, also after {@link #release()}. A lease that was released while it held, or that
   * simply ran out without renewal, is not lost (but not valid either).
   *
   * @return true once the lease is lost; then {@link #onLost()} has completed
   */
  public boolean isLost() {
    return grant.isLost();
  }

  /** Same as {@link #release()}. */
  @Override
  public void close() {
    release();
  }

  @Override
  public String toString() {
    return "Lease{resource=" + shownResource() + ", " + grant.status() + "}";
  }

  private String shownResource() {
    String resource = grant.resource();
    return resource.length() <= 64 ? resource : resource.substring(0, 64) + "...";
  }

  /** The lease as its lifecycle sees it: for renewals. */
  Grant grant() {
    return grant;
  }
}
