package dev.redlock;

import java.util.List;

/**
 * Thrown by {@link RedLock#acquire} when the wait ran out while another client held the lock (or
 * competing clients split the votes): enough masters answered, but not enough of them granted.
 */
public final class LockTakenException extends RedLockException {

  private static final long serialVersionUID = 1L;

  LockTakenException(String message, List<NodeOutcome> outcomes) {
    super(message, outcomes);
  }
}
