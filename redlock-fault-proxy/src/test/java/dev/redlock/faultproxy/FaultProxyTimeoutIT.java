package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import eu.rekawek.toxiproxy.model.toxic.Timeout;
import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The {@code timeout} toxic: a black hole that may close the connection. */
class FaultProxyTimeoutIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  private ProxyFixture fixture;

  @BeforeEach
  void start() throws IOException {
    fixture = ProxyFixture.start();
  }

  @AfterEach
  void stop() throws IOException {
    fixture.close();
  }

  @Test
  void timeoutDropsDataAndClosesOnceNothingArrivedForItsTimeout() throws IOException {
    Proxy proxy = fixture.echoProxy("blackhole");
    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.roundTrip("alive", TIMEOUT);
      proxy.toxics().timeout("cut", ToxicDirection.DOWNSTREAM, 400);

      long sent = System.nanoTime();
      client.send("lost");
      TcpClient.End end = client.awaitEnd(TIMEOUT);

      assertEquals(TcpClient.Ending.CLOSED, end.ending());
      assertEquals(0, end.received().length, "data was dropped");
      assertTrue(
          System.nanoTime() - sent >= Duration.ofMillis(400).toNanos(),
          "closed only after the timeout");
    }
  }

  @Test
  void zeroTimeoutDropsDataButNeverCloses() throws IOException {
    Proxy proxy = fixture.echoProxy("forever");
    proxy.toxics().timeout("hole", ToxicDirection.UPSTREAM, 0);

    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.send("lost");
      TcpClient.End end = client.awaitEnd(Duration.ofMillis(800));

      assertEquals(TcpClient.Ending.STILL_OPEN, end.ending());
      assertEquals(0, end.received().length);
    }
  }

  @Test
  void removingATimeoutClosesTheConnectionsItAffected() throws IOException {
    Proxy proxy = fixture.echoProxy("cleanup");
    Timeout timeout = proxy.toxics().timeout("hole", ToxicDirection.DOWNSTREAM, 0);
    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.send("lost");
      assertEquals(TcpClient.Ending.STILL_OPEN, client.awaitEnd(Duration.ofMillis(200)).ending());

      timeout.remove();

      TcpClient.End end = client.awaitEnd(TIMEOUT);
      assertEquals(TcpClient.Ending.CLOSED, end.ending());
      assertEquals(0, end.received().length);
    }
    try (TcpClient fresh = ProxyFixture.connect(proxy)) {
      fresh.roundTrip("flows again", TIMEOUT);
    }
  }
}
