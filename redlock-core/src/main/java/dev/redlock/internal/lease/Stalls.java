package dev.redlock.internal.lease;

import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Vote;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Says, at WARN, that a wait goes on without a quorum: a {@code lock()} (which waits without limit)
 * or a long {@code maxWait} on masters that cannot make one would otherwise wait in silence. A wait
 * whose rounds have found no quorum for {@link #INTERVAL_NANOS} is named, with how many masters
 * answered, how many must grant and why not ({@link Diagnosis}); at most one such line per interval
 * for the whole RedLock, however many callers wait. A wait for a lock held by others is not a
 * stall: it says nothing. Thread-safe.
 */
final class Stalls {

  /** How long a wait goes without a quorum before it is named, and how often at most after. */
  static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

  private static final Logger log = LoggerFactory.getLogger(Stalls.class);

  private final Ticker ticker;
  private final long intervalNanos;
  private final AtomicLong nextNanos; // the earliest time of the next line

  Stalls(Ticker ticker, long intervalNanos) {
    this.ticker = ticker;
    this.intervalNanos = intervalNanos;
    this.nextNanos = new AtomicLong(ticker.read());
  }

  /**
   * After a round of a wait that did not grant: logs the stall if the round found no quorum, the
   * wait has lasted an interval, and no line was logged in the last interval.
   *
   * @param resource the resource, as the caller named it
   * @param startNanos when the wait started, on the ticker
   * @param waitNanos how long it may wait; {@link Long#MAX_VALUE} for no limit
   * @param attempt the round's attempt
   * @param quorum how many masters must grant
   * @param guardMillis the restart guard's time, for the explanation
   */
  void after(
      String resource,
      long startNanos,
      long waitNanos,
      Attempt attempt,
      int quorum,
      long guardMillis) {
    if (!attempt.unavailable()) {
      return;
    }
    long now = ticker.read();
    long next = nextNanos.get();
    if (now - startNanos < intervalNanos
        || now - next < 0
        || !nextNanos.compareAndSet(next, now + intervalNanos)) {
      return;
    }
    int answered = 0;
    for (Outcome outcome : attempt.outcomes()) {
      Vote vote = outcome.vote();
      if (vote == Vote.GRANTED || vote == Vote.TAKEN || vote == Vote.GONE) {
        answered++;
      }
    }
    log.warn(
        "still waiting for {} after {} s{}: {} of {} masters answered, {} must grant; {}; it keeps"
            + " trying",
        Arguments.quote(resource),
        TimeUnit.NANOSECONDS.toSeconds(now - startNanos),
        waitNanos == Long.MAX_VALUE
            ? " (no time limit)"
            : " (of " + TimeUnit.NANOSECONDS.toSeconds(waitNanos) + " s)",
        answered,
        attempt.outcomes().size(),
        quorum,
        Diagnosis.explain(attempt.outcomes(), quorum, guardMillis));
  }
}
