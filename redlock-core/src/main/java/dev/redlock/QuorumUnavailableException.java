package dev.redlock;

import java.util.List;

/**
 * Thrown when too many masters failed to answer, or answered too slowly, for any lease to be
 * granted: more than {@code N - (N/2+1)} of them errored or timed out, or a majority granted but
 * the round took so long that no validity was left. This says the cluster is unhealthy, not that
 * the lock is taken. The message says why, kind by kind, naming the masters and the remedy: the
 * restart guard not counting young masters (admission), unreachable masters, authentication
 * refused, permission denied (with the command), database index out of range;
 * docs/troubleshooting.md lists each.
 */
public final class QuorumUnavailableException extends RedLockException {

  private static final long serialVersionUID = 1L;

  QuorumUnavailableException(String message, List<NodeOutcome> outcomes) {
    super(message, outcomes);
  }
}
