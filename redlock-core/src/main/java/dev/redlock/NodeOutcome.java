package dev.redlock;

import static java.util.Objects.requireNonNull;

import java.time.Duration;

/**
 * What one Redis master answered in one round of an acquire, extend or release.
 *
 * @param node the master's {@code host:port}, never with credentials
 * @param status what the master answered, or why it did not
 * @param elapsed time from the start of the round to this master's answer, or to the moment the
 *     round was decided for a master that had not answered
 * @param detail the error for {@link Status#FAILED}, why for {@link Status#RESTARTED}, otherwise
 *     empty; never contains a token or a password
 */
public record NodeOutcome(String node, Status status, Duration elapsed, String detail) {

  /** The possible answers of one master. */
  public enum Status {
    /** The master did what was asked: set the key, extended it or deleted it. */
    GRANTED,
    /** The key holds another client's token. */
    TAKEN,
    /** The key does not exist (it expired or was never set); extend never re-creates it. */
    GONE,
    /**
     * The master restarted, or its dataset was flushed, less than the maximum lease time ago (or
     * the guard cannot tell when it restarted), so its vote does not count; the outcome's detail
     * says why and when it will vote. See {@link RedLockBuilder#restartGuard(boolean)}.
     */
    RESTARTED,
    /** The master answered an error, refused the connection, or could not be reached. */
    FAILED,
    /** The master did not answer within the node timeout. */
    TIMED_OUT,
    /** The round was decided by the other masters before this one answered. */
    PENDING
  }

  /**
   * Creates an outcome.
   *
   * @param node the master's {@code host:port}
   * @param status what the master answered
   * @param elapsed time from the start of the round to the answer
   * @param detail the error, or empty
   * @throws NullPointerException if any argument is null
   */
  public NodeOutcome {
    requireNonNull(node, "node");
    requireNonNull(status, "status");
    requireNonNull(elapsed, "elapsed");
    requireNonNull(detail, "detail");
  }

  @Override
  public String toString() {
    return node
        + "="
        + status
        + "("
        + elapsed.toNanos() / 1_000 / 1000.0
        + " ms"
        + (detail.isEmpty() ? "" : ", " + detail)
        + ")";
  }
}
