package dev.redlock;

import java.util.List;

/**
 * Thrown when too many masters failed to answer, or answered too slowly, for any lease to be
 * granted: more than {@code N - (N/2+1)} of them errored or timed out, or a majority granted but
 * the round took so long that no validity was left. This says the cluster is unhealthy, not that
 * the lock is taken.
 */
public final class QuorumUnavailableException extends RedLockException {

  private static final long serialVersionUID = 1L;

  QuorumUnavailableException(String message, List<NodeOutcome> outcomes) {
    super(message, outcomes);
  }
}
