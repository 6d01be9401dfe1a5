package dev.redlock.internal.transport;

/**
 * One master's answer to one command. Only an acquire fills {@code fence} (the fence counter the
 * master had stored), {@code timeMicros} (the master's clock) and, when guarded, {@code reading}
 * (what the restart guard judges: the codec reads it and decides nothing, {@link
 * RestartGuardRule#judge} does); {@code detail} says why a master answered RESTARTED, and is empty
 * otherwise.
 *
 * @param status the vote
 * @param fence the master's fence counter, read by an acquire; else 0
 * @param timeMicros the master's clock, read by an acquire; else 0
 * @param detail why the vote is RESTARTED; else empty
 * @param reading what a guarded acquire read for the restart guard; else null
 */
public record NodeReply(
    Vote status, long fence, long timeMicros, String detail, GuardReading reading) {

  /**
   * What a guarded acquire read of the master's dataset and server run, for the restart guard to
   * judge ({@link RestartGuardRule#judge}).
   *
   * @param born the dataset-birth marker's time (ms by the master's clock), or null if absent
   * @param marker the marker's bytes, or null
   * @param admitted the admission record's bytes, or null
   * @param incarnation the server run of the connection the acquire was written on, or null
   * @param writtenAtNanos when the acquire was written, on the client's ticker
   */
  public record GuardReading(
      Long born, byte[] marker, byte[] admitted, Incarnation incarnation, long writtenAtNanos) {}

  private static final NodeReply GRANTED = new NodeReply(Vote.GRANTED, 0, 0);
  private static final NodeReply TAKEN = new NodeReply(Vote.TAKEN, 0, 0);
  private static final NodeReply GONE = new NodeReply(Vote.GONE, 0, 0);

  /** A release that deleted the key and told some waiting client (the release script's 2). */
  private static final NodeReply RELEASED_TO_WAITERS = new NodeReply(Vote.GRANTED, 0, 0);

  /** A release that deleted the key, told no one, and saw clients waiting (the script's 3). */
  private static final NodeReply RELEASED_WAITERS_LISTENING = new NodeReply(Vote.GRANTED, 0, 0);

  /** An answer without a detail. */
  NodeReply(Vote status, long fence, long timeMicros) {
    this(status, fence, timeMicros, "", null);
  }

  /**
   * An answer with a detail and no reading.
   *
   * @param status the vote
   * @param fence the fence counter, or 0
   * @param timeMicros the master's clock, or 0
   * @param detail why, or empty
   */
  public NodeReply(Vote status, long fence, long timeMicros, String detail) {
    this(status, fence, timeMicros, detail, null);
  }

  /**
   * The answer of a release, extend, fence or admit script: 1, 0 or -1; the release's 2 is a grant
   * that some waiter was told of ({@link #waitersTold()}).
   */
  static NodeReply ofScriptCode(long code) {
    return code == 1
        ? GRANTED
        : code == 0
            ? TAKEN
            : code == 2 ? RELEASED_TO_WAITERS : code == 3 ? RELEASED_WAITERS_LISTENING : GONE;
  }

  /**
   * Whether this is the release at the master after a resource's gate ({@link
   * NodeClient#releaseAtNext}) that deleted the key and saw some client waiting on it there.
   *
   * @return true only for such a release's answer
   */
  public boolean waitersListening() {
    return this == RELEASED_WAITERS_LISTENING;
  }

  /**
   * Whether this is a release that deleted the key and was heard by some client subscribed to the
   * resource's wake-up channel: some client is waiting for the resource.
   *
   * @return true only for such a release's answer
   */
  public boolean waitersTold() {
    return this == RELEASED_TO_WAITERS;
  }

  /**
   * Whether this release says some client waits on the key at its master: it heard the release
   * ({@link #waitersTold()}), or the quiet release after the gate saw it listening ({@link
   * #waitersListening()}). The releaser then lets the waiters go first.
   *
   * @return true for either answer
   */
  public boolean waitersKnown() {
    return waitersTold() || waitersListening();
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
