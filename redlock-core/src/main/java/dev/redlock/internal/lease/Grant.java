package dev.redlock.internal.lease;

import dev.redlock.internal.transport.LockKey;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One granted lease as its lifecycle sees it: its identity (resource, key, token), its deadline and
 * state, its fencing token, and where its keys may be. The API's {@code Lease} is a thin handle on
 * one; {@link Leases} moves it through its states. Thread-safe: the deadline only moves forward,
 * and the state leaves ACTIVE once.
 */
public final class Grant {

  /**
   * Where a lease is in its lifecycle: it leaves ACTIVE once, for LOST or RELEASED; a LOST lease
   * that is then released is LOST_RELEASED, so that it still says it was lost.
   */
  enum State {
    ACTIVE,
    LOST,
    RELEASED,
    LOST_RELEASED;

    /** The state a release leaves this one in. */
    State released() {
      return this == ACTIVE || this == RELEASED ? RELEASED : LOST_RELEASED;
    }
  }

  /** The fencing token of a lease acquired with fencing turned off. */
  static final long NO_FENCE = -1;

  /**
   * Why a fencing token was not stored; the API throws {@code LeaseLostException} for a lost lease
   * and {@code QuorumUnavailableException} (with the outcomes) otherwise.
   *
   * @param leaseLost whether the lease is lost (or was no longer valid), rather than too few
   *     masters having answered in time
   * @param message what happened, naming the resource
   * @param outcomes what each master answered, for an unavailable quorum; empty otherwise
   */
  public record FenceFailure(boolean leaseLost, String message, List<Outcome> outcomes) {}

  private final Leases owner;
  private final String resource;
  private final LockKey key;
  private final byte[] token;
  private final long fence; // the token to store when first asked for, or NO_FENCE
  private final Landing landing; // where the acquire may have set the key
  private final AtomicLong keysExpireBy; // when every key of this lease has expired, at the latest
  private final ReentrantLock fenceLock = new ReentrantLock();
  private volatile boolean fenceStored; // set once, under fenceLock
  private volatile List<Outcome> lastUnconfirmed = List.of(); // the last extend without a quorum
  private final AtomicLong deadlineNanos;
  private final AtomicReference<State> state = new AtomicReference<>(State.ACTIVE);
  private final CompletableFuture<Void> lost = new CompletableFuture<>();

  Grant(
      Leases owner,
      String resource,
      LockKey key,
      byte[] token,
      long deadlineNanos,
      long fence,
      Landing landing,
      long keysExpireByNanos) {
    this.owner = owner;
    this.resource = resource;
    this.key = key;
    this.token = token;
    this.fence = fence;
    this.landing = landing;
    this.keysExpireBy = new AtomicLong(keysExpireByNanos);
    this.deadlineNanos = new AtomicLong(deadlineNanos);
  }

  /**
   * Returns the resource the lease was acquired on.
   *
   * @return the resource name, as the caller passed it
   */
  public String resource() {
    return resource;
  }

  /**
   * Returns whether the lease carries a fencing token: whether its RedLock has fencing on.
   *
   * @return false with fencing turned off
   */
  public boolean fenced() {
    return fence != NO_FENCE;
  }

  /**
   * Returns the lease's fencing token, chosen during the acquire; stored on the masters only by
   * {@link #storeFence}.
   *
   * @return the token, or -1 without fencing
   */
  public long fence() {
    return fence;
  }

  /**
   * Stores the fencing token on the masters unless an earlier call did: one quorum round, the first
   * time, under this lease's own lock (see {@link Leases#storeFence}); later calls return at once.
   * Call it only for a {@link #fenced()} lease.
   *
   * @return null once the token is stored, by this call or an earlier one; otherwise why not (a
   *     later call tries again)
   */
  public FenceFailure storeFence() {
    if (fenceStored) {
      return null;
    }
    fenceLock.lock();
    try {
      if (!fenceStored) {
        FenceFailure failure = owner.storeFence(this);
        if (failure != null) {
          return failure;
        }
        fenceStored = true;
      }
      return null;
    } finally {
      fenceLock.unlock();
    }
  }

  /**
   * Returns how much longer the lease can be trusted, on the ticker.
   *
   * @return nanoseconds; zero once it has expired, was lost, or was released
   */
  public long remainingNanos() {
    if (state.get() != State.ACTIVE) {
      return 0;
    }
    long left = deadlineNanos.get() - owner.ticker().read();
    return left > 0 ? left : 0;
  }

  /**
   * Returns whether the lease is still held: not expired, not released, and not lost.
   *
   * @return true while the lease can be trusted
   */
  public boolean isValid() {
    return validAt(owner.ticker().read());
  }

  /**
   * Returns whether the lease was lost; once true it stays true, also after a release.
   *
   * @return true once the lease is lost
   */
  public boolean isLost() {
    State now = state.get();
    return now == State.LOST || now == State.LOST_RELEASED;
  }

  /** Whether the lease was released (lost or not). */
  boolean isReleased() {
    State now = state.get();
    return now == State.RELEASED || now == State.LOST_RELEASED;
  }

  /**
   * Returns where the lease is, for messages: {@code released}, {@code lost}, {@code valid for N
   * ms} or {@code expired}.
   *
   * @return a short description, never the token
   */
  public String status() {
    return switch (state.get()) {
      case RELEASED -> "released";
      case LOST, LOST_RELEASED -> "lost";
      default -> isValid() ? "valid for " + remainingNanos() / 1_000_000 + " ms" : "expired";
    };
  }

  /**
   * Returns a stage completed when the lease is lost, after the listener has heard of it, on the
   * thread that found the loss.
   *
   * @return a stage completed at most once, never exceptionally
   */
  public CompletionStage<Void> whenLost() {
    return lost.minimalCompletionStage();
  }

  /**
   * Extends the lease on a quorum to {@code ttl} from now; see {@link Leases#extend}.
   *
   * @param ttl the new time to live
   * @return whether the lease was extended
   * @throws NullPointerException if {@code ttl} is null
   * @throws IllegalArgumentException if {@code ttl} is out of range
   */
  public boolean extend(Duration ttl) {
    return owner.extend(this, ttl);
  }

  /**
   * Extends as {@link #extend} does, without blocking; see {@link AsyncLeases#extend}.
   *
   * @param ttl the new time to live
   * @return whether the lease was extended
   * @throws NullPointerException if {@code ttl} is null
   * @throws IllegalArgumentException if {@code ttl} is out of range
   */
  public CompletableFuture<Boolean> extendAsync(Duration ttl) {
    return owner.async().extend(this, ttl);
  }

  /**
   * Releases as {@link #release} does, without blocking; see {@link AsyncLeases#release}.
   *
   * @return completed when a majority answered, or at the node timeout; never exceptionally
   */
  public CompletableFuture<Void> releaseAsync() {
    return owner.async().release(this);
  }

  /** Releases the lease on every master; idempotent. See {@link Leases#release}. */
  public void release() {
    owner.release(this);
  }

  /**
   * Releases the lease after {@code delay}; see {@link Leases#releaseAfter}.
   *
   * @param delay how long the masters should keep the lock from now
   * @return whether a majority confirmed
   * @throws NullPointerException if {@code delay} is null
   */
  public boolean releaseAfter(Duration delay) {
    return owner.releaseAfter(this, delay);
  }

  LockKey key() {
    return key;
  }

  byte[] token() {
    return token;
  }

  /** Where this lease's acquire may have set its key. */
  Landing landing() {
    return landing;
  }

  /** When every key of this lease has expired at the latest, on the ticker. */
  long keysExpireBy() {
    return keysExpireBy.get();
  }

  /** Notes an extend sent now: the keys may live until {@code candidate} (only ever later). */
  void keysLiveUntil(long candidate) {
    keysExpireBy.accumulateAndGet(
        candidate, (current, next) -> next - current > 0 ? next : current);
  }

  boolean validAt(long nowNanos) {
    return state.get() == State.ACTIVE && deadlineNanos.get() - nowNanos > 0;
  }

  /** Moves the deadline to {@code candidate} if that is later; never moves it back. */
  void moveDeadline(long candidate) {
    deadlineNanos.accumulateAndGet(
        candidate, (current, next) -> next - current > 0 ? next : current);
  }

  /** Marks the lease released (a lost one stays lost); returns the state it was in. */
  State markReleased() {
    return state.getAndUpdate(State::released);
  }

  /**
   * Marks the lease lost; a released lease stays released. Returns whether this call lost it; the
   * caller then tells the listener and calls {@link #signalLost()}.
   */
  /** Records what the masters answered to an extend that reached no quorum, for the loss's why. */
  void unconfirmed(List<Outcome> outcomes) {
    lastUnconfirmed = outcomes;
  }

  /** What the masters answered to the last extend that reached no quorum; empty if none. */
  List<Outcome> lastUnconfirmed() {
    return lastUnconfirmed;
  }

  boolean markLost() {
    return state.compareAndSet(State.ACTIVE, State.LOST);
  }

  /** Completes {@link #whenLost()}, after the listener has heard of the loss. */
  void signalLost() {
    lost.complete(null);
  }
}
