package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The {@code reset_peer} toxic. */
class FaultProxyResetPeerIT {
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
  void resetPeerResetsTheConnectionAfterItsTimeout() throws IOException {
    Proxy proxy = fixture.echoProxy("rst");
    proxy.toxics().resetPeer("rst", ToxicDirection.DOWNSTREAM, 200);

    try (TcpClient client = ProxyFixture.connect(proxy)) {
      long sent = System.nanoTime();
      client.send("PING");
      TcpClient.End end = client.awaitEnd(TIMEOUT);

      assertEquals(TcpClient.Ending.RESET, end.ending());
      assertEquals(0, end.received().length, "data was discarded");
      assertTrue(System.nanoTime() - sent >= Duration.ofMillis(200).toNanos());
    }
  }

  @Test
  void resetPeerWaitsForData() throws IOException {
    Proxy proxy = fixture.echoProxy("idle");
    proxy.toxics().resetPeer("rst", ToxicDirection.UPSTREAM, 0);

    try (TcpClient client = ProxyFixture.connect(proxy)) {
      assertEquals(TcpClient.Ending.STILL_OPEN, client.awaitEnd(Duration.ofMillis(300)).ending());

      client.send("PING");

      assertEquals(TcpClient.Ending.RESET, client.awaitEnd(TIMEOUT).ending());
    }
  }
}
