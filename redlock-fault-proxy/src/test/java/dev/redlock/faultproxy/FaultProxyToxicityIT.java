package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import eu.rekawek.toxiproxy.model.toxic.Timeout;
import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code toxicity}: the fraction of connections a toxic affects. */
class FaultProxyToxicityIT {
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
  void zeroToxicityAffectsNoConnection() throws IOException {
    Proxy proxy = fixture.echoProxy("harmless");
    Timeout blackhole = proxy.toxics().timeout("hole", ToxicDirection.DOWNSTREAM, 0);
    blackhole.setToxicity(0f);

    for (int i = 0; i < 10; i++) {
      try (TcpClient client = ProxyFixture.connect(proxy)) {
        client.roundTrip("connection " + i, TIMEOUT);
      }
    }
    assertEquals(0f, proxy.toxics().get("hole").getToxicity());
  }

  @Test
  void toxicityUpdateRedrawsForLiveConnections() throws IOException {
    Proxy proxy = fixture.echoProxy("redrawn");
    Timeout blackhole = proxy.toxics().timeout("hole", ToxicDirection.DOWNSTREAM, 0);
    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.send("lost");
      assertEquals(TcpClient.Ending.STILL_OPEN, client.awaitEnd(Duration.ofMillis(200)).ending());

      blackhole.setToxicity(0f);

      client.roundTrip("flows", TIMEOUT);
    }
  }
}
