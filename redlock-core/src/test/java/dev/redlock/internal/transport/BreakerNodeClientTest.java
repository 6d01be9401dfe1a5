package dev.redlock.internal.transport;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class BreakerNodeClientTest {

  private static final long NODE_TIMEOUT = Duration.ofMillis(50).toNanos();

  private final FakeTicker ticker = new FakeTicker();
  private final FakeNode node = new FakeNode(ticker);
  private final List<BreakerState> told = new ArrayList<>();
  private final BreakerNodeClient client =
      new BreakerNodeClient(
          node, "fake:1", NODE_TIMEOUT, Duration.ofSeconds(1), ticker, (n, s) -> told.add(s));

  private CompletableFuture<NodeReply> acquire(int i) {
    assertTrue(client.permits(), "the breaker permits call " + i);
    return client.acquire(("k" + i).getBytes(US_ASCII), null, "t".getBytes(US_ASCII), 10_000, 0);
  }

  @Test
  void answeredCallsLeaveTheOverdueScanAtOnceBehindAnUnansweredOne() {
    node.onSet = FakeNode.Answer.HANG;
    CompletableFuture<NodeReply> hung = acquire(0);
    node.onSet = FakeNode.Answer.GRANT;
    for (int i = 1; i <= 1_000; i++) {
      assertTrue(acquire(i).isDone(), "call " + i + " answered");
    }
    // Left for the scan, the 1,000 answered calls stayed queued behind the hung one until its
    // timeout passed, and were then walked cold (a profile at 32 threads: 12% of the client's CPU).
    assertEquals(1, client.tracked(), "only the unanswered call is kept");
    assertFalse(hung.isDone());
  }

  @Test
  void aCallUnansweredPastTheNodeTimeoutIsRecordedOnceAndForgotten() {
    node.onSet = FakeNode.Answer.HANG;
    for (int i = 0; i < BreakerNodeClient.MINIMUM_CALLS; i++) {
      acquire(i);
    }
    ticker.advance(Duration.ofNanos(NODE_TIMEOUT + 1));
    assertFalse(client.permits(), "ten overdue calls opened the breaker");
    assertEquals(List.of(BreakerState.OPEN), told);
    assertEquals(0, client.tracked(), "the overdue calls are off the queue");
  }
}
