package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import eu.rekawek.toxiproxy.model.toxic.LimitData;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The {@code limit_data} toxic. */
class FaultProxyLimitDataIT {
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
  void limitDataClosesTheConnectionAfterItsByteCount() throws IOException {
    Proxy proxy = fixture.echoProxy("limited");
    proxy.toxics().limitData("ten", ToxicDirection.DOWNSTREAM, 10);

    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.send("0123456789abcdefghij");
      TcpClient.End end = client.awaitEnd(TIMEOUT);

      assertEquals(TcpClient.Ending.CLOSED, end.ending());
      assertEquals("0123456789", new String(end.received(), StandardCharsets.UTF_8));
    }
  }

  @Test
  void limitCountsPerConnectionAndSurvivesUpdates() throws IOException {
    Proxy proxy = fixture.echoProxy("counted");
    LimitData limit = proxy.toxics().limitData("limit", ToxicDirection.DOWNSTREAM, 100);

    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.roundTrip("six b.", TIMEOUT);
      limit.setBytes(8);
      client.send("0123456789");
      TcpClient.End end = client.awaitEnd(TIMEOUT);

      assertEquals(TcpClient.Ending.CLOSED, end.ending());
      assertEquals("01", new String(end.received(), StandardCharsets.UTF_8));
    }
    try (TcpClient fresh = ProxyFixture.connect(proxy)) {
      fresh.roundTrip("8 bytes!", TIMEOUT);
    }
  }
}
