package dev.redlock;

import dev.redlock.QuorumRound.Tally;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lifecycle of the leases one {@link RedLock} grants: extend, release and lose. {@link Lease}
 * and the {@link Renewer} both go through here, so the order of each transition's side effects is
 * written once:
 *
 * <ul>
 *   <li><b>extend</b>: a quorum round; on success the deadline moves forward, then the listener
 *       hears of it;
 *   <li><b>lose</b>: the lease is marked lost first (so {@link Lease#isValid()} is false before any
 *       master forgets it), then the log, the listener and {@link Lease#onLost()}, and only then
 *       the releases of whatever the masters still hold;
 *   <li><b>release</b>: marked released, then a round on every master, then the listener.
 * </ul>
 */
final class Leases {

  private static final Logger log = LoggerFactory.getLogger(Leases.class);

  private final Masters masters;
  private final Events events;
  private final Arguments arguments;
  private final double driftFactor;
  private final long minValidityNanos;

  Leases(
      Masters masters,
      Events events,
      Arguments arguments,
      double driftFactor,
      long minValidityNanos) {
    this.masters = masters;
    this.events = events;
    this.arguments = arguments;
    this.driftFactor = driftFactor;
    this.minValidityNanos = minValidityNanos;
  }

  Ticker ticker() {
    return masters.ticker();
  }

  /** A new lease, valid until {@code deadlineNanos} on the ticker. */
  Lease grant(String resource, byte[] key, byte[] token, long deadlineNanos, long fence) {
    return new Lease(this, resource, key, token, deadlineNanos, fence);
  }

  /**
   * Extends {@code lease} on a quorum to {@code ttl} from now. Returns false without a round if the
   * lease is no longer valid; loses it if the round fails.
   */
  boolean extend(Lease lease, Duration ttl) {
    long ttlMillis = arguments.ttlMillis(ttl);
    if (!lease.isValid()) {
      return false;
    }
    byte[] key = lease.key();
    byte[] token = lease.token();
    Tally tally = masters.vote((node, i) -> node.extend(key, token, ttlMillis));
    long ttlNanos = TimeUnit.MILLISECONDS.toNanos(ttlMillis);
    long validity = Validity.remainingNanos(ttlNanos, tally.elapsedNanos(), driftFactor);
    Duration elapsed = Duration.ofNanos(tally.elapsedNanos());
    // The old lease must still have been valid when the quorum confirmed, so there is no gap.
    if (tally.reachedQuorum()
        && validity > minValidityNanos
        && lease.validAt(tally.decidedAtNanos())) {
      lease.moveDeadline(tally.decidedAtNanos() + validity);
      events.emit(l -> l.extended(lease.resource(), tally.outcomes(), elapsed));
      return true;
    }
    // The masters that did extend keep the key for the new TTL: free them now (compare-and-delete
    // of our own token, so harmless), rather than blocking others until it expires.
    masters.releaseAll(key, token);
    lose(lease, "extend failed: " + tally.outcomes(), tally.outcomes(), elapsed);
    return false;
  }

  /** Loses {@code lease} without a round: it ran out before it could be renewed. */
  void expired(Lease lease) {
    lose(lease, "it expired before it could be renewed", List.of(), Duration.ZERO);
  }

  private void lose(Lease lease, String why, List<NodeOutcome> outcomes, Duration elapsed) {
    if (lease.markLost()) {
      log.warn("lease on {} lost: {}", Arguments.quote(lease.resource()), why);
      events.emit(l -> l.lost(lease.resource(), outcomes, elapsed));
      lease.signalLost();
    }
  }

  /** Releases {@code lease} on every master, waiting at most the node timeout. */
  void release(Lease lease) {
    if (!lease.markReleased()) {
      return;
    }
    byte[] key = lease.key();
    byte[] token = lease.token();
    Tally tally = masters.all((node, i) -> node.release(key, token));
    if (tally.unreachable() > 0 && log.isDebugEnabled()) {
      log.debug(
          "release of {} incomplete: {}", Arguments.quote(lease.resource()), tally.outcomes());
    }
    if (events.enabled()) {
      events.emit(
          l ->
              l.released(
                  lease.resource(), tally.outcomes(), Duration.ofNanos(tally.elapsedNanos())));
    }
  }
}
