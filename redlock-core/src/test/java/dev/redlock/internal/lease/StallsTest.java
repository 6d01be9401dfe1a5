package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.CapturedLog;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.Vote;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A wait without a quorum is named at WARN once its rounds have found none for the interval, and
 * again each interval after, to the nanosecond on a fake clock, with how many masters answered; and
 * a set's names are bounded in UTF-8 bytes together, as one name is. The log is slf4j-simple's, on
 * System.err.
 */
class StallsTest {

  private static final Duration INTERVAL = Duration.ofNanos(Stalls.INTERVAL_NANOS);

  private final FakeTicker ticker = new FakeTicker();
  @RegisterExtension final CapturedLog captured = new CapturedLog();

  private List<String> warned() {
    return captured.lines("WARN", "still waiting for 'stalled'");
  }

  /** A round in which one master granted, one refused and three failed: no quorum of 3. */
  private static Attempt unavailable() {
    List<Vote> votes = List.of(Vote.GRANTED, Vote.TAKEN, Vote.FAILED, Vote.FAILED, Vote.FAILED);
    return new Attempt(
        null,
        votes.stream().map(v -> new Outcome("m", v, 0, v == Vote.FAILED ? "refused" : "")).toList(),
        true);
  }

  @Test
  void aWaitWithoutAQuorumIsNamedEachIntervalToTheNanosecond() {
    Stalls stalls = new Stalls(ticker, Stalls.INTERVAL_NANOS);
    long start = ticker.read();
    ticker.advance(INTERVAL.minusNanos(1));
    stalls.after("stalled", start, Long.MAX_VALUE, unavailable(), 3, 0);
    assertEquals(0, warned().size(), "a nanosecond before the interval: " + captured);
    ticker.advance(Duration.ofNanos(1));
    stalls.after("stalled", start, Long.MAX_VALUE, unavailable(), 3, 0);
    assertEquals(1, warned().size(), "at the interval");
    assertTrue(
        warned()
            .get(0)
            .contains("after 10 s (no time limit): 2 of 5 masters answered, 3 must grant"),
        warned()::toString);
    ticker.advance(INTERVAL.minusNanos(1));
    stalls.after("stalled", start, Long.MAX_VALUE, unavailable(), 3, 0);
    assertEquals(1, warned().size(), "a nanosecond before the next interval");
    ticker.advance(Duration.ofNanos(1));
    stalls.after("stalled", start, Duration.ofMinutes(1).toNanos(), unavailable(), 3, 0);
    assertEquals(2, warned().size(), "at the next interval");
    assertTrue(warned().get(1).contains("after 20 s (of 60 s)"), warned()::toString);
  }

  @Test
  void theNamesOfASetAreBoundedTogetherInUtf8Bytes() {
    String half = "a".repeat(Arguments.MAX_RESOURCE_BYTES / 2);
    String otherHalf = "b".repeat(Arguments.MAX_RESOURCE_BYTES / 2);
    assertEquals(2, ResourceSet.of(List.of(half, otherHalf)).names().size(), "exactly the limit");
    assertThrows(
        IllegalArgumentException.class, () -> ResourceSet.of(List.of(half, otherHalf + "b")));
  }
}
