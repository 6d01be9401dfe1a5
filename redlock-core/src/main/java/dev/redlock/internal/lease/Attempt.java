package dev.redlock.internal.lease;

import dev.redlock.internal.transport.Trouble;
import java.util.List;

/**
 * How one acquisition attempt (or the last of a bounded wait) ended. The API turns a failed one
 * into its exceptions: {@code LockTakenException}, or {@code QuorumUnavailableException} when
 * {@code unavailable}.
 *
 * @param grant the lease granted, or null
 * @param outcomes what each master answered in the round
 * @param unavailable whether too few masters answered in time (or the round was too slow), rather
 *     than the lock being held by others; false when granted
 * @param heldBack for the last attempt of a wait that failed: the outcome of a master that some
 *     round of the wait was not sent to because this client's own queue to it was full ({@link
 *     Trouble#CLIENT_LIMIT}), the latest one; null if none was held back (or granted)
 */
public record Attempt(Grant grant, List<Outcome> outcomes, boolean unavailable, Outcome heldBack) {

  /** An attempt with nothing held back, as one round reports it. */
  public Attempt(Grant grant, List<Outcome> outcomes, boolean unavailable) {
    this(grant, outcomes, unavailable, null);
  }

  /**
   * The outcome of a master this round was not sent to because this client's own queue to it was
   * full, or null if there is none.
   */
  static Outcome heldBackIn(List<Outcome> outcomes) {
    for (Outcome outcome : outcomes) {
      if (Trouble.of(outcome.vote(), outcome.detail()) == Trouble.CLIENT_LIMIT) {
        return outcome;
      }
    }
    return null;
  }

  /**
   * This failed attempt, the last of a wait, with {@code heldBack} (an outcome of an earlier round,
   * or null) recorded unless its own round was held back too (the latest one is kept).
   */
  Attempt after(Outcome heldBack) {
    if (grant != null) {
      return this;
    }
    Outcome latest = heldBackIn(outcomes);
    Outcome kept = latest != null ? latest : heldBack;
    return kept == this.heldBack ? this : new Attempt(null, outcomes, unavailable, kept);
  }
}
