package dev.redlock.internal.lease;

import dev.redlock.internal.lease.Grant.FenceFailure;
import dev.redlock.internal.lease.QuorumRound.Tally;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Vote;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lifecycle of the leases one RedLock grants: extend, release and lose. Each {@link Grant} (the
 * API's lease) and the {@link Renewer} both go through here, so the order of each transition's side
 * effects is written once:
 *
 * <ul>
 *   <li><b>extend</b>: a quorum round; on success the deadline moves forward, then the listener
 *       hears of it. A round that reaches no quorum changes nothing: the masters never said the key
 *       was gone, so the lease stands until its old deadline and may be extended again;
 *   <li><b>lose</b>, when a majority answers that the key is gone or another token's, or the
 *       validity ran out: the lease is marked lost first (so {@link Grant#isValid()} is false
 *       before any master forgets it), then the log, the listener and {@link Grant#whenLost()}, and
 *       only then the releases of whatever the masters still hold;
 *   <li><b>release</b>: marked released, then a round on every master, decided once a majority
 *       answered, then the listener; {@link Releases} follows the other masters to their final
 *       answer (sending again what failed or was dropped) and tells the listener of those too.
 * </ul>
 */
final class Leases {

  private static final Logger log = LoggerFactory.getLogger(Leases.class);

  /** How an extend ended. */
  enum Extension {
    /** A quorum extended it in time: the deadline moved. */
    EXTENDED,
    /** No quorum in time, but no majority said the key was gone: the old deadline stands. */
    NOT_EXTENDED,
    /** A majority said the key is gone or another's, or the lease ran out: it is lost. */
    LOST
  }

  private final Masters masters;
  private final Releases releases;
  private final Events events;
  private final Arguments arguments;
  private final double driftFactor;
  private final long minValidityNanos;
  private final AtomicInteger held = new AtomicInteger(); // granted, not yet released or lost
  private final AsyncLeases async;

  Leases(
      Masters masters,
      Releases releases,
      Events events,
      Arguments arguments,
      double driftFactor,
      long minValidityNanos,
      Timing timing) {
    this.masters = masters;
    this.releases = releases;
    this.events = events;
    this.arguments = arguments;
    this.driftFactor = driftFactor;
    this.minValidityNanos = minValidityNanos;
    this.async = new AsyncLeases(this, events, masters.ticker(), timing);
  }

  /** The asynchronous operations on these leases. */
  AsyncLeases async() {
    return async;
  }

  Arguments arguments() {
    return arguments;
  }

  Ticker ticker() {
    return masters.ticker();
  }

  /**
   * A new lease, valid until {@code deadlineNanos} on the ticker, whose fencing token {@code fence}
   * (or NO_FENCE) is stored in the masters' fence counters when first asked for; {@code landing}
   * says where its acquire may have set its key, until {@code keysExpireByNanos} at the latest.
   */
  Grant grant(
      String resource,
      LockKey key,
      byte[] token,
      long deadlineNanos,
      long fence,
      Landing landing,
      long keysExpireByNanos) {
    held.incrementAndGet();
    return new Grant(this, resource, key, token, deadlineNanos, fence, landing, keysExpireByNanos);
  }

  /**
   * Stores {@code lease}'s fencing token on the masters, only where its key still holds its token,
   * and returns null once a majority did while the lease was valid. Called by {@link
   * Grant#storeFence()} (the API's first {@code Lease.fencingToken()}), under the lease's own lock,
   * until it succeeds.
   *
   * <p>Why a token stored now is as good as one stored during the acquire. The token t was chosen
   * above every counter the granting majority M had stored when each of them ran our SET NX (the
   * acquire reads the counter after its SET, on the same connection). Take any earlier lease that
   * stored its token t' on a majority M'. Each master of M' stored t' while the key held that
   * lease's token; on a master x in both M and M', that key had to be gone before our SET NX
   * succeeded there, and a key is never re-created, so x stored t' before it ran our acquire and we
   * read at least t'. Hence t > t'. Symmetrically, we store t now only where our key still holds,
   * so on every master of our store majority the store happens before any later lease's SET NX, and
   * every later lease reads at least t. A lease that is never asked for its token stores nothing
   * and orders nothing, and nothing relies on it. A token that cannot be stored on a majority while
   * the key holds is never returned.
   *
   * <p>The failures, which the API throws: a lease no longer valid, or refused by a majority (then
   * lost), is a lost lease; too few answers in time, an unavailable quorum.
   */
  FenceFailure storeFence(Grant lease) {
    if (!lease.isValid()) {
      return new FenceFailure(
          true,
          "lease on "
              + Arguments.quote(lease.resource())
              + " is no longer valid: a fencing token is stored only while the lease holds",
          List.of());
    }
    LockKey key = lease.key();
    byte[] token = lease.token();
    long fence = lease.fence();
    Tally tally = masters.vote((node, i) -> node.send(new Command.Fence(key, token, fence)));
    boolean stillValid = lease.validAt(tally.decidedAtNanos());
    if (tally.reachedQuorum() && stillValid) {
      return null;
    }
    if (!stillValid || refusedByMajority(tally)) {
      lose(
          lease,
          "its fencing token could not be stored: " + tally.outcomes(),
          tally.outcomes(),
          tally.elapsedNanos());
      return new FenceFailure(
          true,
          "lease on "
              + Arguments.quote(lease.resource())
              + " was lost before its fencing token could be stored",
          List.of());
    }
    return new FenceFailure(
        false,
        "could not store the fencing token of "
            + Arguments.quote(lease.resource())
            + ": "
            + Diagnosis.explain(tally.outcomes(), masters.quorum(), 0),
        tally.outcomes());
  }

  /** How many leases were granted and are neither released nor lost. */
  int held() {
    return held.get();
  }

  /**
   * Extends {@code lease} on a quorum to {@code ttl} from now, blocking for at most the node
   * timeout. Returns false without a round if the lease is no longer valid.
   */
  boolean extend(Grant lease, Duration ttl) {
    long ttlMillis = arguments.ttlMillis(ttl);
    if (!lease.isValid()) {
      return false;
    }
    lease.keysLiveUntil(keysExpireBy(ticker().read(), ttlMillis));
    Tally tally = masters.vote(extendCall(lease, ttlMillis));
    return settle(lease, ttlMillis, tally) == Extension.EXTENDED;
  }

  /** Extends as {@link #extend} does, without blocking; the result completes on the timer. */
  CompletableFuture<Extension> extendAsync(
      Grant lease, long ttlMillis, ScheduledExecutorService timer) {
    lease.keysLiveUntil(keysExpireBy(ticker().read(), ttlMillis));
    return masters
        .voteAsync(extendCall(lease, ttlMillis), timer)
        .thenApply(tally -> settle(lease, ttlMillis, tally));
  }

  private static Masters.Call extendCall(Grant lease, long ttlMillis) {
    LockKey key = lease.key();
    byte[] token = lease.token();
    return (node, i) -> node.send(new Command.Extend(key, token, ttlMillis));
  }

  private Extension settle(Grant lease, long ttlMillis, Tally tally) {
    long ttlNanos = TimeUnit.MILLISECONDS.toNanos(ttlMillis);
    long validity = Validity.remainingNanos(ttlNanos, tally.elapsedNanos(), driftFactor);
    long elapsed = tally.elapsedNanos();
    long decidedAt = tally.decidedAtNanos();
    // The old lease must still have been valid when the quorum confirmed, so there is no gap.
    boolean stillValid = lease.validAt(decidedAt);
    if (tally.reachedQuorum() && validity > minValidityNanos && stillValid) {
      lease.moveDeadline(decidedAt + validity);
      events.emit(l -> l.extended(lease.resource(), tally.outcomes(), elapsed));
      return Extension.EXTENDED;
    }
    if (!stillValid || refusedByMajority(tally)) {
      // An extend that expired with no quorum says why, as an expiry between renewals does.
      String why =
          stillValid
              ? "a majority no longer holds it"
              : "it expired during the extend"
                  + (tally.reachedQuorum()
                      ? ""
                      : "; the extend reached "
                          + Diagnosis.explain(tally.outcomes(), masters.quorum(), 0));
      lose(lease, why + ": " + tally.outcomes(), tally.outcomes(), elapsed);
      return Extension.LOST;
    }
    if (log.isDebugEnabled()) {
      log.debug(
          "extend of {} not confirmed; it stands until its deadline: {}",
          Arguments.quote(lease.resource()),
          tally.outcomes());
    }
    lease.unconfirmed(tally.outcomes());
    events.emit(l -> l.notExtended(lease.resource(), tally.outcomes(), elapsed));
    return Extension.NOT_EXTENDED;
  }

  /**
   * When a key set (or extended) at {@code sentNanos} with {@code ttlMillis} has expired on every
   * master at the latest, on this client's clock: its TTL stretched by twice the drift factor (a
   * master's clock may run slower than ours).
   */
  long keysExpireBy(long sentNanos, long ttlMillis) {
    long ttlNanos = TimeUnit.MILLISECONDS.toNanos(ttlMillis);
    return sentNanos
        + ttlNanos
        + (long) (ttlNanos * 2 * driftFactor)
        + TimeUnit.MILLISECONDS.toNanos(2);
  }

  /** Whether a majority answered that the key is gone or holds another token. */
  private static boolean refusedByMajority(Tally tally) {
    int refused = 0;
    for (Outcome outcome : tally.outcomes()) {
      if (outcome.vote() == Vote.TAKEN || outcome.vote() == Vote.GONE) {
        refused++;
      }
    }
    return refused >= tally.quorum();
  }

  /** Loses {@code lease} without a round: it ran out before it could be renewed. */
  void expired(Grant lease) {
    List<Outcome> last = lease.lastUnconfirmed();
    lose(
        lease,
        "it expired before it could be renewed"
            + (last.isEmpty()
                ? ""
                : "; the last renewal reached "
                    + Diagnosis.explain(last, masters.quorum(), 0)
                    + ": "
                    + last),
        List.of(), // no round lost it: the listener's contract for an expiry
        0);
  }

  /** The one place a lease is lost; see the class comment for the order. */
  private void lose(Grant lease, String why, List<Outcome> outcomes, long elapsedNanos) {
    if (!lease.markLost()) {
      return; // already lost or released
    }
    held.decrementAndGet();
    log.warn("lease on {} lost: {}", Arguments.quote(lease.resource()), why);
    events.emit(l -> l.lost(lease.resource(), outcomes, elapsedNanos));
    lease.signalLost();
    // Masters that still hold the key for us would block others until it expires: free them
    // (compare-and-delete of our own token, so harmless).
    releases.releaseAll(lease.key(), lease.token(), lease.landing(), lease.keysExpireBy());
  }

  /**
   * Releases {@code lease} on every master, waiting at most the node timeout, for a majority's
   * answers; the others are followed by {@link Releases}.
   */
  void release(Grant lease) {
    if (ended(lease)) {
      return;
    }
    Releases.Job job =
        releases.start(lease.resource(), lease.landing(), lease.keysExpireBy(), releaseOf(lease));
    released(lease, masters.freed(job::send));
  }

  /**
   * Releases {@code lease} as {@link #release} does, without blocking: the result completes on
   * {@code timer} once a majority answered, or at the node timeout.
   */
  CompletableFuture<Void> releaseAsync(Grant lease, ScheduledExecutorService timer) {
    if (ended(lease)) {
      return CompletableFuture.completedFuture(null);
    }
    Releases.Job job =
        releases.start(lease.resource(), lease.landing(), lease.keysExpireBy(), releaseOf(lease));
    return masters.freedAsync(job::send, timer).thenAccept(tally -> released(lease, tally));
  }

  /**
   * Releases a lease no caller received (its acquisition was cancelled or closed meanwhile) on
   * every master, without waiting; {@link Releases} follows it. Unlike the cleanup of a failed
   * acquire, it tells the waiters, as {@link #release} does: a majority held the lock, so other
   * clients may be waiting on it, queued at its gate for a release to name the next of them (the
   * acquisition left the queue before its grant was discarded, so the release names the next).
   */
  void discard(Grant lease) {
    if (ended(lease)) {
      return;
    }
    releases.releaseAll(lease.landing(), lease.keysExpireBy(), releaseOf(lease));
  }

  /**
   * The release of {@code lease} on each master: at its key's gate, the release that names the
   * first waiter queued there ({@link NodeClient#releaseAtGate}); on the next master by name, the
   * other one its waiters hear, a release that tells them only if the gate does not take it (see
   * {@link Fallback}); elsewhere a quiet one: no waiter of a key with a gate hears those masters
   * ({@code Masters#heardFor}), so a notice there would cost each of them a script's SHA-1 and a
   * PUBLISH, and this client a hand-off check, for no one.
   */
  private Releases.Send releaseOf(Grant lease) {
    LockKey key = lease.key();
    byte[] token = lease.token();
    NodeClient gate = key instanceof LockKey.One ? masters.gateClient(key.bytes()) : null;
    if (gate == null) {
      return (node, now) -> node.send(Command.release(key, token)); // a set has no gate
    }
    Fallback fallback = new Fallback(masters.fallbackClient(key.bytes()), key.bytes(), token);
    return (node, now) -> {
      if (node == gate) {
        return fallback.atGate(node.send(Command.releaseAtGate(key, token)));
      }
      return node == fallback.next
          ? fallback.atNext(node.send(Command.releaseAtNext(key, token)))
          : node.send(Command.releaseQuietly(key, token));
    };
  }

  /**
   * The notice a release owes its key's waiters on the next master by name when the gate does not
   * take it. The gate's release tells only the waiter whose turn it is (one notice however many
   * clients wait), so the release on the next master is quiet; but a gate that failed, no longer
   * held the key, told no one (the waiters' subscriptions there not yet confirmed), or has not
   * answered {@link Masters#fallbackDelayNanos} after the next master did, named no one, and its
   * waiters would sleep until their timers. Then, if the next master saw clients waiting on the key
   * (with none, nothing is owed, and an uncontended release schedules nothing), it is told to
   * notify them: after its own release answered, so the notice cannot come before the delete there.
   * Sent once, however often the releases are sent again.
   */
  private final class Fallback {
    final NodeClient next;
    private final byte[] key;
    private final byte[] token;
    private final AtomicReference<Marks> marks = new AtomicReference<>(Marks.NONE);

    Fallback(NodeClient next, byte[] key, byte[] token) {
      this.next = next;
      this.key = key;
      this.token = token;
    }

    CompletableFuture<NodeReply> atGate(CompletableFuture<NodeReply> release) {
      release.whenComplete(
          (answer, error) ->
              // Taken and heard; else failed, or taken with no one hearing it there (their
              // subscriptions at the gate not yet confirmed, or lost) while some listen next door.
              mark(
                  error == null && answer.status() == Vote.GRANTED && answer.waitersTold()
                      ? Marks::tookAtGate
                      : Marks::failedAtGate));
      return release;
    }

    CompletableFuture<NodeReply> atNext(CompletableFuture<NodeReply> release) {
      release.whenComplete(
          (answer, error) -> {
            if (error == null && answer.waitersListening()) {
              Marks before = mark(Marks::heardNext);
              if (!before.gateTook() && !before.gateFailed()) {
                // The gate has not answered yet: it may be slow, or paused.
                releases.later(() -> mark(Marks::failedAtGate), masters.fallbackDelayNanos(key));
              }
            }
          });
      return release;
    }

    /**
     * Adds a mark; tells the waiters, once, when the gate failed, none took it there, and clients
     * wait at the next master. Returns the marks before.
     */
    private Marks mark(UnaryOperator<Marks> mark) {
      Marks before;
      Marks after;
      do {
        before = marks.get();
        after = mark.apply(before);
        if (after.gateFailed() && after.nextHeard() && !after.gateTook() && !after.told()) {
          after = after.sent();
        }
      } while (!marks.compareAndSet(before, after));
      if (after.told() && !before.told()) {
        try {
          next.send(new Command.Notice(key, token));
        } catch (RuntimeException e) {
          log.debug("the fallback notice of a release was not sent: {}", e.toString());
        }
      }
      return before;
    }
  }

  /**
   * What a release's fallback notice has learned, one value replaced by compare-and-set.
   *
   * @param gateTook some waiter heard the gate's release
   * @param gateFailed the gate failed, no longer held the key, told no one, or was late
   * @param nextHeard clients wait on the key at the next master
   * @param told the notice was sent
   */
  private record Marks(boolean gateTook, boolean gateFailed, boolean nextHeard, boolean told) {
    static final Marks NONE = new Marks(false, false, false, false);

    Marks tookAtGate() {
      return new Marks(true, gateFailed, nextHeard, told);
    }

    Marks failedAtGate() {
      return new Marks(gateTook, true, nextHeard, told);
    }

    Marks heardNext() {
      return new Marks(gateTook, gateFailed, true, told);
    }

    Marks sent() {
      return new Marks(gateTook, gateFailed, nextHeard, true);
    }
  }

  /**
   * Releases {@code lease} after {@code delay}: shortens its keys' expiry to the delay where they
   * still hold its token. Returns whether a majority confirmed.
   */
  boolean releaseAfter(Grant lease, Duration delay) {
    java.util.Objects.requireNonNull(delay, "delay");
    if (delay.isNegative() || delay.isZero() || delay.toMillis() < 1) {
      boolean active = lease.isValid();
      release(lease);
      return active;
    }
    if (ended(lease)) {
      return false;
    }
    LockKey key = lease.key();
    byte[] token = lease.token();
    // Sent again later, a shorten aims at the same moment: what is left of the delay, at least 1
    // ms.
    long target =
        ticker().read()
            + (delay.compareTo(Arguments.MAX_TTL) > 0 ? Arguments.MAX_TTL : delay).toNanos();
    Releases.Job job =
        releases.start(
            lease.resource(),
            lease.landing(),
            lease.keysExpireBy(),
            (node, now) ->
                node.send(
                    new Command.Shorten(
                        key, token, Math.max(1, TimeUnit.NANOSECONDS.toMillis(target - now)))));
    Tally tally = masters.all(job::send);
    released(lease, tally);
    return tally.reachedQuorum();
  }

  /** Marks {@code lease} released; returns true if it already was (nothing left to do). */
  private boolean ended(Grant lease) {
    Grant.State before = lease.markReleased();
    if (before == Grant.State.ACTIVE) {
      held.decrementAndGet();
    }
    return before == Grant.State.RELEASED || before == Grant.State.LOST_RELEASED;
  }

  private void released(Grant lease, Tally tally) {
    if (tally.unreachable() > 0 && log.isDebugEnabled()) {
      log.debug(
          "release of {} incomplete: {}", Arguments.quote(lease.resource()), tally.outcomes());
    }
    if (events.enabled()) {
      events.emit(l -> l.released(lease.resource(), tally.outcomes(), tally.elapsedNanos()));
    }
  }
}
