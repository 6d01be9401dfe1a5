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
    return client.send(
        new Command.Acquire(
            LockKey.of(("k" + i).getBytes(US_ASCII)), "t".getBytes(US_ASCII), 10_000, false, 0));
  }

  /**
   * A probe (the master called although its breaker is open, for a round's quorum) asks what the
   * caller asked: a waiter's acquire in turn queues it at the gate, and its leave leaves, rather
   * than the plain acquire and no leave, which left a waiter believing it was queued where it was
   * not (it waited for a naming that never came).
   */
  @Test
  void aProbeQueuesAndLeavesAsTheClientDoes() {
    List<String> calls = new ArrayList<>();
    NodeClient recording =
        new ForwardingNodeClient(node) {
          @Override
          @SuppressWarnings("unchecked") // an acquire in turn answers a NodeReply
          public <R> CompletableFuture<R> send(Command<R> command) {
            switch (command.kind()) {
              case ACQUIRE -> calls.add("acquire");
              case ACQUIRE_IN_TURN -> {
                calls.add("in turn");
                return (CompletableFuture<R>)
                    CompletableFuture.completedFuture(NodeReply.of(Vote.TAKEN));
              }
              case LEAVE -> calls.add("leave");
              default -> {}
            }
            return super.send(command);
          }
        };
    BreakerNodeClient breaker =
        new BreakerNodeClient(
            recording, "fake:1", NODE_TIMEOUT, Duration.ofSeconds(1), ticker, (n, s) -> {});
    NodeClient probe = breaker.probe();
    probe.send(new Command.AcquireInTurn(KEY, KEY, 10_000, 0, KEY, 1_000));
    probe.send(new Command.Leave(KEY, KEY));
    assertEquals(List.of("in turn", "leave"), calls);
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

  @Test
  void failuresOfTheClientsOwnNeverCountAgainstTheMaster() {
    Scripted scripted = new Scripted();
    BreakerNodeClient breaker = breaker(scripted);
    for (int i = 0; i < 2 * BreakerNodeClient.WINDOW; i++) {
      assertTrue(breaker.permits(), "call " + i + " permitted");
      scripted.next =
          CompletableFuture.failedFuture(
              NodeUnavailableException.clientSide(QueueLimit.QUEUE_FULL + " (a test)"));
      breaker.send(new Command.Acquire(LockKey.of(KEY), KEY, 10_000, false, 0));
    }
    assertTrue(breaker.closed(), "still closed");
    assertEquals(List.of(), told);
    for (int i = 0; i < BreakerNodeClient.MINIMUM_CALLS; i++) { // the master's own failures do
      assertTrue(breaker.permits());
      scripted.next = CompletableFuture.failedFuture(new NodeUnavailableException("refused"));
      breaker.send(new Command.Acquire(LockKey.of(KEY), KEY, 10_000, false, 0));
    }
    assertEquals(List.of(BreakerState.OPEN), told);
  }

  @Test
  void aCallQueuedBehindTheClientsOwnCommandsIsNotSlowWhileTheMasterKeepsAnswering() {
    Scripted scripted = new Scripted();
    BreakerNodeClient breaker = breaker(scripted);
    long[] heard = {ticker.read()};
    TimedReply.Progress master = () -> heard[0];
    for (int i = 0; i < 2 * BreakerNodeClient.WINDOW; i++) {
      TimedReply reply = new TimedReply();
      scripted.next = reply;
      assertTrue(breaker.permits(), "call " + i + " permitted");
      breaker.send(new Command.Acquire(LockKey.of(KEY), KEY, 10_000, false, 0));
      reply.written(ticker.read(), master);
      // Twice the node timeout before its answer, the master answering earlier commands all along.
      for (int step = 0; step < 10; step++) {
        ticker.advance(Duration.ofNanos(NODE_TIMEOUT / 5));
        heard[0] = ticker.read();
        assertTrue(breaker.permits(), "not overdue: the master is answering");
      }
      long before = heard[0];
      ticker.advance(Duration.ofMillis(1));
      reply.answered(ticker.read(), before, 0, 0);
      heard[0] = ticker.read();
      reply.complete(NodeReply.of(Vote.GRANTED));
    }
    assertEquals(List.of(), told, "never slow, never overdue");

    // Not written yet: the commands wait for a connection the master does not complete (a paused
    // master accepts the socket and never answers the handshake). That is the master's silence,
    // timed from the call: it opens the breaker as a hung master does (PauseChaosIT).
    for (int i = 0; i < BreakerNodeClient.MINIMUM_CALLS; i++) {
      TimedReply reply = new TimedReply();
      scripted.next = reply;
      assertTrue(breaker.permits());
      breaker.send(new Command.Acquire(LockKey.of(KEY), KEY, 10_000, false, 0));
    }
    ticker.advance(Duration.ofNanos(NODE_TIMEOUT + 1));
    assertFalse(breaker.permits(), "the unconnectable master's breaker opened");
    assertEquals(List.of(BreakerState.OPEN), told);
  }

  /** A master's connection whose reader the test says is watching or not. */
  private final class Reader implements TimedReply.Progress {
    long heard = ticker.read();
    long notWatching; // in all, up to the last start of watching
    long stoppedAt = -1; // when it stopped watching; -1 while it watches

    void stop() {
      stoppedAt = ticker.read();
    }

    void watch() {
      notWatching += ticker.read() - stoppedAt;
      stoppedAt = -1;
    }

    @Override
    public long heardAt() {
      return heard;
    }

    @Override
    public long notWatchingNanos(long now) {
      return stoppedAt < 0 ? notWatching : notWatching + now - stoppedAt;
    }
  }

  @Test
  void aReplyLeftUnreadWhileTheReaderWasNotWatchingIsNotHeldAgainstTheMaster() {
    Scripted scripted = new Scripted();
    BreakerNodeClient breaker = breaker(scripted);
    Reader reader = new Reader();
    for (int i = 0; i < 2 * BreakerNodeClient.WINDOW; i++) {
      TimedReply reply = new TimedReply();
      scripted.next = reply;
      assertTrue(breaker.permits(), "call " + i + " permitted");
      breaker.send(new Command.Acquire(LockKey.of(KEY), KEY, 10_000, false, 0));
      reply.written(ticker.read(), reader);
      // The reader stops watching (it waits for a lock a caller holds) for ten node timeouts,
      // while other callers' calls look for overdue ones: nothing of it is the master's silence.
      reader.stop();
      for (int step = 0; step < 10; step++) {
        ticker.advance(Duration.ofNanos(NODE_TIMEOUT));
        assertTrue(breaker.permits(), "not overdue: the reader was not watching");
      }
      // It reads the answer that waited in the socket: not a slow call either.
      long before = reader.heard;
      reply.answered(ticker.read(), before, 0, reader.notWatchingNanos(ticker.read()));
      reader.heard = ticker.read();
      reader.watch();
      reply.complete(NodeReply.of(Vote.GRANTED));
    }
    assertEquals(List.of(), told, "never slow, never overdue");

    // A master silent for a node timeout while the reader watched still opens it.
    List<TimedReply> written = new ArrayList<>();
    for (int i = 0; i < BreakerNodeClient.MINIMUM_CALLS; i++) {
      TimedReply reply = new TimedReply();
      written.add(reply);
      scripted.next = reply;
      assertTrue(breaker.permits());
      breaker.send(new Command.Acquire(LockKey.of(KEY), KEY, 10_000, false, 0));
      reply.written(ticker.read(), reader);
    }
    ticker.advance(Duration.ofNanos(NODE_TIMEOUT + 1));
    assertFalse(breaker.permits(), "the silent master's breaker opened");
    assertEquals(List.of(BreakerState.OPEN), told);
  }

  /**
   * An open breaker waits its open wait on the client's ticker, not the wall clock: monotonic (a
   * wall clock stepped back would keep a master out for as long), and on virtual time in a test or
   * a simulation. Its probe is permitted when the ticker says the wait is over, to the nanosecond.
   */
  @Test
  void anOpenBreakerWaitsOnTheTickerNotTheWallClock() {
    node.onSet = FakeNode.Answer.FAIL;
    for (int i = 0; i < BreakerNodeClient.MINIMUM_CALLS; i++) {
      acquire(i);
    }
    assertFalse(client.permits(), "ten failures opened the breaker");
    ticker.advance(Duration.ofSeconds(1).minusNanos(1));
    assertFalse(client.permits(), "a nanosecond of its open wait left");
    ticker.advance(Duration.ofNanos(2));
    assertTrue(client.permits(), "its open wait over on the ticker: a probe");
    assertEquals(List.of(BreakerState.OPEN, BreakerState.HALF_OPEN), told);
  }

  private static final byte[] KEY = "k".getBytes(US_ASCII);

  private BreakerNodeClient breaker(NodeClient delegate) {
    return new BreakerNodeClient(
        delegate, "fake:2", NODE_TIMEOUT, Duration.ofSeconds(1), ticker, (n, s) -> told.add(s));
  }

  /** A master whose next acquire's future the test gives. */
  private static final class Scripted implements NodeClient {
    CompletableFuture<NodeReply> next;

    @Override
    @SuppressWarnings("unchecked") // an acquire answers a NodeReply
    public <R> CompletableFuture<R> send(Command<R> command) {
      if (command.kind() != Command.Kind.ACQUIRE) {
        throw new UnsupportedOperationException(command.kind().name());
      }
      return (CompletableFuture<R>) next;
    }

    @Override
    public void close() {}
  }
}
