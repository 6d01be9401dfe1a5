package dev.redlock;

import dev.redlock.NodeOutcome.Status;

/**
 * One master's answer to one command. Only an acquire fills {@code fence} (the fence counter the
 * master had stored) and {@code timeMicros} (the master's clock); {@code detail} says why a master
 * answered RESTARTED, and is empty otherwise.
 */
record NodeReply(Status status, long fence, long timeMicros, String detail) {

  private static final NodeReply GRANTED = new NodeReply(Status.GRANTED, 0, 0);
  private static final NodeReply TAKEN = new NodeReply(Status.TAKEN, 0, 0);
  private static final NodeReply GONE = new NodeReply(Status.GONE, 0, 0);

  /** An answer without a detail. */
  NodeReply(Status status, long fence, long timeMicros) {
    this(status, fence, timeMicros, "");
  }

  /** The answer of a release, extend, fence or admit script: 1, 0 or -1. */
  static NodeReply ofScriptCode(long code) {
    return code == 1 ? GRANTED : code == 0 ? TAKEN : GONE;
  }

  static NodeReply of(Status status) {
    return switch (status) {
      case GRANTED -> GRANTED;
      case TAKEN -> TAKEN;
      case GONE -> GONE;
      default -> new NodeReply(status, 0, 0);
    };
  }
}
