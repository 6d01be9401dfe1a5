package dev.redlock.internal.transport;

/**
 * A master could not run a command: it refused the connection, dropped it, answered an error, or is
 * being skipped after a failed connection attempt. It is counted as a failed vote and never escapes
 * the library. Carries no stack trace: it is expected, frequent under faults, and cheap.
 */
public final class NodeUnavailableException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final boolean mayHaveRun;

  /**
   * A failure of a command that never reached the master's connection.
   *
   * @param message why, for the outcome's detail; never a token or a password
   */
  public NodeUnavailableException(String message) {
    this(message, false);
  }

  /**
   * A failure; {@code mayHaveRun} says whether the command had been written to a connection that
   * was then lost before its answer: the master may have run it, or may still run it once it reads
   * what the socket delivered.
   */
  NodeUnavailableException(String message, boolean mayHaveRun) {
    super(message, null, false, false);
    this.mayHaveRun = mayHaveRun;
  }

  /**
   * Returns whether the command was written and then lost unanswered: it may have run, or still
   * run.
   *
   * @return true if the master may still run the command
   */
  public boolean mayHaveRun() {
    return mayHaveRun;
  }
}
