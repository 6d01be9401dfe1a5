package dev.redlock.internal.transport;

/**
 * When a master last answered on its connection, and how long the connection's reader had not been
 * watching its socket by then ({@link ReaderWatch}): what a {@link TimedReply} times its command
 * by. Written by the pipeline under its lock, read by any thread.
 */
final class Hearing implements TimedReply.Progress {

  private final ReaderWatch watch; // the reader's, or null: a reader that always watches
  private volatile long heardAt;
  private volatile long notWatchingAtHeard; // written after heardAt: see TimedReply.Progress

  Hearing(ReaderWatch watch) {
    this.watch = watch;
  }

  /** The master answered, or its connection opened, at {@code now}. */
  void heard(long now) {
    heardAt = now;
    notWatchingAtHeard = notWatchingNanos(now);
  }

  /**
   * The answer to {@code reply}'s command (if any) was read at {@code now}: times it, and hears.
   */
  void answered(TimedReply reply, long now) {
    long before = heardAt;
    long notWatchingBefore = notWatchingAtHeard;
    heard(now);
    if (reply != null) {
      reply.answered(now, before, notWatchingBefore, notWatchingAtHeard);
    }
  }

  @Override
  public long heardAt() {
    return heardAt;
  }

  @Override
  public long notWatchingNanos(long now) {
    return watch == null ? 0 : watch.notWatchingNanos(); // a duration: the selector's own clock
  }

  @Override
  public long notWatchingAtHeard() {
    return notWatchingAtHeard;
  }
}
