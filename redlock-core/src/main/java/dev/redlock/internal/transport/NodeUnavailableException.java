package dev.redlock.internal.transport;

/**
 * A master could not run a command: it refused the connection, dropped it, answered an error, or is
 * being skipped after a failed connection attempt; or the client itself did not send it ({@link
 * #clientSide}: its own queue to the master was full, or it was closing). It is counted as a failed
 * vote and never escapes the library. Carries no stack trace: it is expected, frequent under
 * faults, and cheap.
 */
public final class NodeUnavailableException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final boolean mayHaveRun;
  private final boolean clientSide;

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
    this(message, mayHaveRun, false);
  }

  /**
   * A failure; {@code clientSide} says whether it is the client's own (see {@link #clientSide()}).
   */
  NodeUnavailableException(String message, boolean mayHaveRun, boolean clientSide) {
    super(message, null, false, false);
    this.mayHaveRun = mayHaveRun;
    this.clientSide = clientSide;
  }

  /**
   * A command this client did not send, for a reason of its own (its queue to the master was full,
   * it was closing): says nothing of the master, so no circuit breaker counts it.
   */
  static NodeUnavailableException clientSide(String message) {
    return new NodeUnavailableException(message, false, true);
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

  /**
   * Returns whether the client itself did not send the command (its own queue to the master was
   * full, or it was closing): a failure of the client's, not of the master's, which no circuit
   * breaker counts against the master.
   *
   * @return true if the failure is the client's own
   */
  public boolean clientSide() {
    return clientSide;
  }
}
