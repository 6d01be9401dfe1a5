package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A selector loop and the masters' clients a test opened on it, closed together after the test: the
 * fixture of the selector transport's tests, and of the lease layer's tests of rounds on it.
 */
public final class SelectorClients implements AutoCloseable {

  /** The loop every client here runs on. */
  public final SelectorLoop loop = new SelectorLoop();

  private final List<SelectorNodeClient> clients = new ArrayList<>();

  /**
   * Opens a client of {@code uri} on the loop and waits for its first connection attempt to end,
   * for at most its timeout and then {@code graceNanos} more.
   */
  public SelectorNodeClient open(String uri, long timeoutNanos, Ticker ticker, long graceNanos) {
    SelectorNodeClient client =
        new SelectorNodeClient(NodeAddress.parse(uri), timeoutNanos, timeoutNanos, ticker, loop);
    clients.add(client);
    client.awaitFirstConnect(System.nanoTime() + timeoutNanos + graceNanos);
    return client;
  }

  /** Closes every client, then asserts that the loop's thread stopped within 5 s. */
  @Override
  public void close() {
    clients.forEach(SelectorNodeClient::close);
    assertTrue(loop.close(TimeUnit.SECONDS.toNanos(5)), "the selector thread stopped");
  }
}
