package dev.redlock.internal.lease;

import dev.redlock.internal.transport.Vote;

/**
 * What one master answered in one round: the lease layer's own record of it. The API turns it into
 * its {@code NodeOutcome} only where someone looks (a listener, an exception), so a round without a
 * listener allocates nothing more for it; {@link #toString()} reads as {@code NodeOutcome}'s does,
 * for the log lines written from here.
 *
 * @param node the master's {@code host:port}, never with credentials
 * @param vote what the master answered, or why it did not
 * @param elapsedNanos from the start of the round to this master's answer, or to the moment the
 *     round was decided for a master that had not answered
 * @param detail the error for FAILED, why for RESTARTED, otherwise empty; never a token or a
 *     password
 */
public record Outcome(String node, Vote vote, long elapsedNanos, String detail) {

  /** As {@code NodeOutcome.toString()}: {@code host:port=VOTE(1.234 ms, detail)}. */
  @Override
  public String toString() {
    return node
        + "="
        + vote
        + "("
        + elapsedNanos / 1_000 / 1000.0
        + " ms"
        + (detail.isEmpty() ? "" : ", " + detail)
        + ")";
  }
}
