package dev.redlock.internal.transport;

import java.util.concurrent.CompletableFuture;

/**
 * The future of one command's reply that knows how long the master itself kept the command waiting,
 * as a circuit breaker must judge it ({@link BreakerNodeClient}).
 *
 * <p>A master answers one connection's commands in order, so a command written behind many others
 * of this client's waits for their answers first, however healthy the master; and a command this
 * client has not written yet (waiting for the connection) has not reached the master at all. So the
 * master's time is counted from when the command was written, or from the master's previous answer
 * on the connection if that came later: a master that keeps answering is busy with this client's
 * own commands, not hung. A master silent for longer than that while the command waits, or slow to
 * answer a command alone, is still slow.
 *
 * <p>Thread-safe: written by the transport (under its pipeline's lock), read by any thread.
 * Dependent stages ({@code thenApply} and the like) are plain futures, untimed; a decorator that
 * completes a future of its own keeps the timing with {@link #following}.
 */
public final class TimedReply extends CompletableFuture<NodeReply> {

  /** When the master last answered on a connection, and how long its reader was not watching. */
  interface Progress {
    /** The ticker's time of the master's last answer (or of the connection's opening). */
    long heardAt();

    /**
     * How long, in all, the connection's reader has not been watching its socket, at {@code now}
     * ({@link ReaderWatch}); 0 for a reader that always is (a blocking read of its own).
     */
    default long notWatchingNanos(long now) {
      return 0;
    }

    /**
     * {@link #notWatchingNanos} at {@link #heardAt()}: written after it, so read it first (a reader
     * that sees a later hearing's value with an earlier hearing errs toward the master).
     */
    default long notWatchingAtHeard() {
      return 0;
    }
  }

  /** The timing of one command, shared by the futures a decorator makes to follow it. */
  private static final class Timing {
    volatile Progress progress; // set when written; null while the command waits in the client
    volatile long writtenAt;
    volatile long notWatchingAtWrite; // the reader's time not watching, when written
    volatile long masterNanos = -1; // set when answered
  }

  private final Timing timing;

  TimedReply() {
    this(new Timing());
  }

  private TimedReply(Timing timing) {
    this.timing = timing;
  }

  /**
   * Returns a new, incomplete future for a decorator to complete with {@code source}'s answer,
   * timed as {@code source} is (untimed if {@code source} is not a {@code TimedReply}).
   *
   * @param source the future the decorator follows
   * @return a future to complete
   */
  public static CompletableFuture<NodeReply> following(CompletableFuture<NodeReply> source) {
    return source instanceof TimedReply timed
        ? new TimedReply(timed.timing)
        : new CompletableFuture<>();
  }

  /**
   * The command was written at {@code nanos} on the connection whose answers {@code progress}
   * tells.
   */
  void written(long nanos, Progress progress) {
    timing.writtenAt = nanos;
    timing.notWatchingAtWrite = progress.notWatchingNanos(nanos);
    timing.progress = progress;
  }

  /**
   * The master's answer to the command was read at {@code nanos}; it had last answered before it at
   * {@code heardBefore}. The time the reader was not watching meanwhile is the client's, not the
   * master's: a reply may have waited unread in the socket then.
   *
   * @param nanos when the answer was read
   * @param heardBefore when the master answered before it
   * @param notWatchingAtHeardBefore the reader's time not watching then ({@link Progress})
   * @param notWatchingNow the reader's time not watching at {@code nanos}
   */
  void answered(long nanos, long heardBefore, long notWatchingAtHeardBefore, long notWatchingNow) {
    timing.masterNanos = masterTime(nanos, notWatchingNow, heardBefore, notWatchingAtHeardBefore);
  }

  /**
   * The master's time up to {@code until}: from when the command was written, or from the master's
   * answer at {@code heard} if that came later, less the time the reader was not watching between
   * the two ({@code notWatching} readings at {@code until} and at {@code heard}).
   */
  private long masterTime(long until, long notWatching, long heard, long notWatchingAtHeard) {
    boolean sinceWritten = timing.writtenAt >= heard;
    long start = sinceWritten ? timing.writtenAt : heard;
    long startNotWatching = sinceWritten ? timing.notWatchingAtWrite : notWatchingAtHeard;
    return Math.max(0, until - start - Math.max(0, notWatching - startNotWatching));
  }

  /**
   * Returns how long the master kept the command waiting, once answered: from when it was written,
   * or from the master's previous answer if that came later.
   *
   * @return nanoseconds, or -1 if the command was not answered (yet)
   */
  public long masterNanos() {
    return timing.masterNanos;
  }

  /**
   * Returns how long, at {@code now}, the master has been silent while the unanswered command
   * waited: from when it was written, or from the master's last answer if that came later, less the
   * time its reader was not watching the socket meanwhile (the client's, {@link ReaderWatch}).
   *
   * @param now the ticker's time
   * @return nanoseconds; -1 if the command has not been written yet: it waits for a connection the
   *     master has not completed (its handshake, or a script reload), and the caller times it from
   *     the call
   */
  public long silentNanos(long now) {
    Progress progress = timing.progress;
    if (progress == null) {
      return -1;
    }
    long heardNotWatching = progress.notWatchingAtHeard(); // before heardAt: see Progress
    long heard = progress.heardAt();
    return masterTime(now, progress.notWatchingNanos(now), heard, heardNotWatching);
  }
}
