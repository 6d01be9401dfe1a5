package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * When a master's pipeline reconnects after it lost a link: at once after an ordinary loss, after a
 * doubling back-off after a protocol error, and at once again once a link answered a command.
 */
class CommandPipelineBackOffTest {

  private final FakeTicker ticker = new FakeTicker();
  private final AtomicInteger connects = new AtomicInteger();
  private final CommandPipeline<Link> pipeline =
      new CommandPipeline<>(ticker, TimeUnit.SECONDS.toNanos(60), connects::incrementAndGet);

  @Test
  void aLinkLostOrdinarilyIsReconnectedByTheNextCommandAtOnce() {
    Link link = open();
    pipeline.lost(link, "connection closed by the master");
    NodeCommand next = command();
    pipeline.submit(next);
    assertEquals(1, connects.get(), "a master that restarted is back at once");
    assertFalse(next.reply.isDone(), "it waits for the new link");
  }

  @Test
  void afterAProtocolErrorCommandsFailUntilABackOffThatDoublesWithEachOneInARow() {
    List<Long> waits = new ArrayList<>();
    for (int i = 0; i < 7; i++) {
      Link link = open();
      pipeline.protocolError(link, "protocol error: unexpected reply type 'G'");
      waits.add(TimeUnit.NANOSECONDS.toMillis(waitUntilReconnect()));
    }
    assertEquals(List.of(100L, 200L, 400L, 800L, 1600L, 3000L, 3000L), waits);
  }

  @Test
  void aCommandAnsweredOnANewLinkEndsTheBackOff() {
    pipeline.protocolError(open(), "protocol error: a");
    waitUntilReconnect();
    pipeline.protocolError(open(), "protocol error: b");
    assertEquals(200, TimeUnit.NANOSECONDS.toMillis(waitUntilReconnect()));

    Link answering = open(); // with the command that asked for it
    assertTrue(pipeline.replied(answering, 1L), "answered");
    pipeline.protocolError(answering, "protocol error: c");
    assertEquals(100, TimeUnit.NANOSECONDS.toMillis(waitUntilReconnect()), "from the start");
  }

  @Test
  void aLinkLostAtItsFirstCommandWithoutAnsweringOneBacksOffAsAProtocolErrorDoes() {
    Link resetting = open();
    pipeline.submit(command()); // in flight, and the master resets the connection
    pipeline.lost(resetting, "Connection reset by peer");
    assertEquals(100, TimeUnit.NANOSECONDS.toMillis(waitUntilReconnect()));

    Link answering = open(); // with the command that asked for it
    assertTrue(pipeline.replied(answering, 1L), "answered");
    pipeline.submit(command());
    pipeline.lost(answering, "Connection reset by peer");
    NodeCommand next = command();
    pipeline.submit(next);
    assertFalse(next.reply.isDone(), "a link that had answered: reconnected at once");
  }

  @Test
  void aReplyWithNoCommandIsAProtocolErrorAndBacksOff() {
    Link link = open();
    assertFalse(pipeline.replied(link, 1L), "the link is dropped");
    assertTrue(link.closed);
    assertEquals(100, TimeUnit.NANOSECONDS.toMillis(waitUntilReconnect()));
  }

  /**
   * Opens a new link: the pipeline is connecting, its first time or since a command asked to; the
   * command that asked is written on it.
   */
  private Link open() {
    Link link = new Link();
    pipeline.connected(link, null, 0);
    return link;
  }

  /**
   * Submits a command every millisecond of fake time until one starts a connection; returns how
   * long after the first that was. Every command before it fails at once.
   */
  private long waitUntilReconnect() {
    int before = connects.get();
    long start = ticker.read();
    while (true) {
      NodeCommand probe = command();
      pipeline.submit(probe);
      if (connects.get() > before) {
        return ticker.read() - start;
      }
      assertTrue(probe.reply.isCompletedExceptionally(), "failed at once while backing off");
      ticker.advance(Duration.ofMillis(1));
    }
  }

  private static NodeCommand command() {
    return NodeCommand.of(
        Command.release(
            LockKey.of("job".getBytes(StandardCharsets.UTF_8)),
            "token".getBytes(StandardCharsets.UTF_8)));
  }

  /** A link that records nothing but whether it was closed. */
  static final class Link implements CommandPipeline.Link {
    boolean closed;

    @Override
    public void write(NodeCommand command) {
      if (closed) {
        throw new IllegalStateException("connection is closed");
      }
    }

    @Override
    public Incarnation.Facts facts() {
      return Incarnation.Facts.unknown("a fake link has no server");
    }

    @Override
    public void close() {
      closed = true;
    }

    @Override
    public boolean scriptsLoaded() {
      return true;
    }

    @Override
    public int sendBufferBytes() {
      return 1 << 20;
    }
  }
}
