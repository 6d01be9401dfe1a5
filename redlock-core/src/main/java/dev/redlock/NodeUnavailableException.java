package dev.redlock;

/**
 * A master could not run a command: it refused the connection, dropped it, answered an error, or is
 * being skipped after a failed connection attempt. It is counted as a failed vote and never escapes
 * the library. Carries no stack trace: it is expected, frequent under faults, and cheap.
 */
final class NodeUnavailableException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  NodeUnavailableException(String message) {
    super(message, null, false, false);
  }
}
