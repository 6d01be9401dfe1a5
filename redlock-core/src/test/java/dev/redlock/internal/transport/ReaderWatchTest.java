package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The reader's time not watching: what it adds up, and what it leaves out. */
class ReaderWatchTest {

  private final FakeTicker ticker = new FakeTicker();

  @Test
  void countsOnlyTheTimeTheReaderWasNotWaitingInSelect() {
    ReaderWatch watch = new ReaderWatch(ticker);
    ticker.advance(Duration.ofMillis(3)); // made, not yet selecting: not watching
    assertEquals(ms(3), watch.notWatchingNanos());
    watch.watching();
    ticker.advance(Duration.ofMillis(50)); // waiting in select(): watching
    assertEquals(ms(3), watch.notWatchingNanos());
    watch.stopped();
    watch.stopped(); // each key handed over says so again: counted once
    ticker.advance(Duration.ofMillis(200)); // kept from its sockets, still so
    assertEquals(ms(203), watch.notWatchingNanos(), "an ongoing stall counts as it goes");
    watch.watching();
    watch.watching();
    ticker.advance(Duration.ofMillis(7));
    assertEquals(ms(203), watch.notWatchingNanos());
  }

  private static long ms(long millis) {
    return Duration.ofMillis(millis).toNanos();
  }
}
