package dev.redlock.internal.transport;

/**
 * How long the reader of the masters' replies has not been watching their sockets, so that a
 * circuit breaker holds against a master only the silence this client could have seen ({@link
 * TimedReply}). A selector's reader watches while it waits in {@code select()}: a reply that
 * arrives then is read at once. Everything else it does (reading and deciding what arrived, the
 * loop's tasks and timers, a wait for a lock that a caller holds, a gap with no thread leading) is
 * time in which a reply may sit unread in its socket: the client's time, not the master's. Not
 * seen: a reader the operating system does not schedule while it waits in {@code select()}, and a
 * pause of the whole JVM.
 *
 * <p>Written by the selector's leader only (one thread at a time, handed over with a happens-before
 * edge: {@link Leadership}), read by any thread. A reader that sees one update half done counts the
 * reader's last gap twice, never not at all: it errs toward the master.
 */
final class ReaderWatch {

  private static final long WATCHING = Long.MIN_VALUE;

  private final Ticker ticker;
  private volatile long total; // the time not watching, up to the last start of watching
  private volatile long since; // when the reader last stopped watching; WATCHING while it watches

  /** A reader that is not watching yet, on {@code ticker}'s time (the selector's own). */
  ReaderWatch(Ticker ticker) {
    this.ticker = ticker;
    this.since = ticker.read();
  }

  /** The leader starts waiting in {@code select()}. */
  void watching() {
    long now = ticker.read();
    long stopped = since;
    if (stopped != WATCHING) {
      total += Math.max(0, now - stopped); // one writer: no update is lost
      since = WATCHING; // after total: a reader that sees it sees the new total
    }
  }

  /** The leader's {@code select()} returned, or began handing it what arrived. */
  void stopped() {
    if (since == WATCHING) {
      since = ticker.read();
    }
  }

  /**
   * Returns how long, in all, the reader has not been watching, now: the difference of two readings
   * is the part of the interval between them that was the client's. A duration on the selector's
   * own ticker, whatever clock the caller keeps.
   *
   * @return nanoseconds
   */
  long notWatchingNanos() {
    long stopped = since; // before total: a half-done update then counts a gap twice, not never
    long sum = total;
    return stopped == WATCHING ? sum : sum + Math.max(0, ticker.read() - stopped);
  }
}
