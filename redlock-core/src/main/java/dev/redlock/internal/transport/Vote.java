package dev.redlock.internal.transport;

/**
 * What one master answered in one round, or why it did not: the transport's and the round's own
 * mirror of the API's {@code NodeOutcome.Status}, with the same constants in the same order (the
 * API converts by ordinal; a test holds the two together). A {@link NodeReply} carries only the
 * first four; the round adds the others.
 */
public enum Vote {
  /** The master did what was asked: set the key, extended it or deleted it. */
  GRANTED,
  /** The key holds another client's token. */
  TAKEN,
  /** The key does not exist (it expired or was never set); extend never re-creates it. */
  GONE,
  /** The master is too young for the restart guard: its vote does not count. */
  RESTARTED,
  /** The master answered an error, refused the connection, or could not be reached. */
  FAILED,
  /** The master did not answer within the node timeout. */
  TIMED_OUT,
  /** The round was decided by the other masters before this one answered. */
  PENDING
}
