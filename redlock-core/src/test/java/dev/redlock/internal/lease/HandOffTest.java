package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.redlock.internal.transport.FakeTicker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * After a release that waiting clients heard, this RedLock's next round of the resource pauses for
 * the hand-off, then still goes behind the waiters (through the gate) for as long again as the
 * retry delay: a client that comes back a little after the pause must not take the lock past the
 * queue on the other masters. The pause is four rounds' time, at least {@link
 * Wakeups#MIN_HAND_OFF_NANOS} and at most half the retry delay; on a fake clock each bound is
 * checked to the nanosecond.
 */
class HandOffTest {

  private static final Duration RETRY_DELAY = Duration.ofMillis(50);

  /** The longest hand-off pause: half the retry delay. */
  private static final long LONGEST_PAUSE = RETRY_DELAY.toNanos() / 2;

  private final FakeTicker ticker = new FakeTicker();
  private final byte[] key = "r".getBytes(StandardCharsets.UTF_8);

  private Wakeups wakeups() {
    return new Wakeups(ticker, RETRY_DELAY.toNanos(), true, listener -> List.of());
  }

  /** Records rounds of {@code nanos} until the moving average has settled on (about) it. */
  private static void roundsTook(Wakeups wakeups, long nanos) {
    for (int i = 0; i < 500; i++) {
      wakeups.rounds().took(nanos);
    }
  }

  @Test
  void withinThePauseTheRoundWaitsTheRestOfFourRoundsTime() {
    try (Wakeups wakeups = wakeups()) {
      roundsTook(wakeups, Duration.ofMillis(3).toNanos()); // 12 ms: within [2 ms, 25 ms]
      long pause = 4 * wakeups.rounds().nanos();
      wakeups.releasedToWaiters(key);
      ticker.advance(Duration.ofMillis(1));
      assertEquals(pause - Duration.ofMillis(1).toNanos(), wakeups.handOffNanos(key), "the rest");
      assertEquals(Wakeups.NO_WAITERS, wakeups.handOffNanos(key), "one round per release");
    }
  }

  @Test
  void fastRoundsPauseTheShortestHandOff() {
    try (Wakeups wakeups = wakeups()) {
      roundsTook(wakeups, Duration.ofNanos(1_000).toNanos()); // 4 µs: below the least pause
      wakeups.releasedToWaiters(key);
      assertEquals(Wakeups.MIN_HAND_OFF_NANOS, wakeups.handOffNanos(key));
    }
  }

  @Test
  void slowRoundsPauseAtMostHalfTheRetryDelay() {
    try (Wakeups wakeups = wakeups()) {
      roundsTook(wakeups, Duration.ofMillis(40).toNanos()); // 160 ms: above the longest pause
      wakeups.releasedToWaiters(key);
      assertEquals(LONGEST_PAUSE, wakeups.handOffNanos(key));
    }
  }

  @Test
  void atTheEndOfThePauseTheRoundGoesBehindTheWaitersAtOnce() {
    try (Wakeups wakeups = wakeups()) {
      roundsTook(wakeups, Duration.ofMillis(40).toNanos());
      wakeups.releasedToWaiters(key);
      ticker.advance(Duration.ofNanos(LONGEST_PAUSE)); // the pause is over to the nanosecond
      assertEquals(0, wakeups.handOffNanos(key), "no pause, but behind the queue");
    }
  }

  @Test
  void behindTheWaitersForExactlyTheRetryDelayAfterThePause() {
    try (Wakeups wakeups = wakeups()) {
      roundsTook(wakeups, Duration.ofMillis(40).toNanos());
      wakeups.releasedToWaiters(key);
      ticker.advance(Duration.ofNanos(LONGEST_PAUSE + RETRY_DELAY.toNanos() - 1));
      assertEquals(0, wakeups.handOffNanos(key), "a nanosecond before the end: behind them");
      wakeups.releasedToWaiters(key);
      ticker.advance(Duration.ofNanos(LONGEST_PAUSE + RETRY_DELAY.toNanos()));
      assertEquals(Wakeups.NO_WAITERS, wakeups.handOffNanos(key), "at the end: forgotten");
      assertEquals(
          Wakeups.NO_WAITERS,
          wakeups.handOffNanos("other".getBytes(StandardCharsets.UTF_8)),
          "nor is another resource's round held back");
    }
  }
}
