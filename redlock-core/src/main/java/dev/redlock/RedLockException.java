package dev.redlock;

import java.util.List;

/**
 * The base of the exceptions RedLock throws when a lock could not be acquired. It carries what each
 * master answered in the last round.
 *
 * <p>Instances are immutable and safe to share between threads.
 */
public class RedLockException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /** What each master answered in the last round; never serialized. */
  private final transient List<NodeOutcome> outcomes;

  /**
   * Creates an exception.
   *
   * @param message what went wrong
   * @param outcomes what each master answered in the last round
   */
  protected RedLockException(String message, List<NodeOutcome> outcomes) {
    super(message + ": " + outcomes);
    this.outcomes = List.copyOf(outcomes);
  }

  /**
   * Returns what each master answered in the last round, one entry per configured node in the order
   * the nodes were configured.
   *
   * @return an immutable list
   */
  public List<NodeOutcome> outcomes() {
    return outcomes == null ? List.of() : outcomes;
  }
}
