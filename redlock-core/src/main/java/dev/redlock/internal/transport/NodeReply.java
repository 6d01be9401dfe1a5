package dev.redlock.internal.transport;

/**
 * One master's answer to one command. Only an acquire fills {@code fence} (the fence counter the
 * master had stored) and {@code timeMicros} (the master's clock); {@code detail} says why a master
 * answered RESTARTED, and is empty otherwise.
 */
public record NodeReply(Vote status, long fence, long timeMicros, String detail) {

  private static final NodeReply GRANTED = new NodeReply(Vote.GRANTED, 0, 0);
  private static final NodeReply TAKEN = new NodeReply(Vote.TAKEN, 0, 0);
  private static final NodeReply GONE = new NodeReply(Vote.GONE, 0, 0);

  /** An answer without a detail. */
  NodeReply(Vote status, long fence, long timeMicros) {
    this(status, fence, timeMicros, "");
  }

  /** The answer of a release, extend, fence or admit script: 1, 0 or -1. */
  static NodeReply ofScriptCode(long code) {
    return code == 1 ? GRANTED : code == 0 ? TAKEN : GONE;
  }

  static NodeReply of(Vote status) {
    return switch (status) {
      case GRANTED -> GRANTED;
      case TAKEN -> TAKEN;
      case GONE -> GONE;
      default -> new NodeReply(status, 0, 0);
    };
  }
}
