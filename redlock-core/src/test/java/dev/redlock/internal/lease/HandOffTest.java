package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeTicker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * After a release that waiting clients heard, this RedLock's next round of the resource pauses for
 * the hand-off, then still goes behind the waiters (through the gate) for as long again as the
 * retry delay: a client that comes back a little after the pause must not take the lock past the
 * queue on the other masters.
 */
class HandOffTest {

  private static final Duration RETRY_DELAY = Duration.ofMillis(50);
  private final FakeTicker ticker = new FakeTicker();
  private final byte[] key = "r".getBytes(StandardCharsets.UTF_8);

  private Wakeups wakeups() {
    return new Wakeups(ticker, RETRY_DELAY.toNanos(), true, listener -> List.of());
  }

  @Test
  void withinThePauseTheRoundWaits() {
    try (Wakeups wakeups = wakeups()) {
      wakeups.releasedToWaiters(key);
      ticker.advance(Duration.ofMillis(1));
      long pause = wakeups.handOffNanos(key);
      assertTrue(pause > 0, "pauses: " + pause);
      assertEquals(Wakeups.NO_WAITERS, wakeups.handOffNanos(key), "one round per release");
    }
  }

  @Test
  void aLittleAfterThePauseTheRoundGoesBehindTheWaitersAtOnce() {
    try (Wakeups wakeups = wakeups()) {
      wakeups.releasedToWaiters(key);
      ticker.advance(Duration.ofMillis(30)); // past the longest pause, half the retry delay: 25 ms
      assertEquals(0, wakeups.handOffNanos(key), "no pause, but behind the queue");
    }
  }

  @Test
  void longAfterThePauseTheReleaseIsForgotten() {
    try (Wakeups wakeups = wakeups()) {
      wakeups.releasedToWaiters(key);
      ticker.advance(Duration.ofMillis(25 + 50 + 1)); // past the longest pause and the retry delay
      assertEquals(Wakeups.NO_WAITERS, wakeups.handOffNanos(key));
      assertEquals(
          Wakeups.NO_WAITERS,
          wakeups.handOffNanos("other".getBytes(StandardCharsets.UTF_8)),
          "nor is another resource's round held back");
    }
  }
}
