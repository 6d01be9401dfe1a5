package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import eu.rekawek.toxiproxy.model.toxic.Bandwidth;
import java.io.IOException;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The {@code bandwidth} toxic: pacing, and rate 0 as a cut that keeps the socket open. */
class FaultProxyBandwidthIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(10);

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
  void zeroRateHoldsDataUntilTheToxicIsRemoved() throws IOException {
    Proxy proxy = fixture.echoProxy("cut");
    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.roundTrip("before", TIMEOUT);
      Bandwidth cut = proxy.toxics().bandwidth("cut", ToxicDirection.DOWNSTREAM, 0);

      client.send("held back");
      TcpClient.End held = client.awaitEnd(Duration.ofMillis(500));
      assertEquals(TcpClient.Ending.STILL_OPEN, held.ending());
      assertEquals(0, held.received().length);

      cut.remove();

      assertEquals("held back", client.readText(9, TIMEOUT));
    }
  }

  @Test
  void rateLimitsThroughput() throws IOException {
    Proxy proxy = fixture.echoProxy("narrow");
    byte[] payload = new byte[75_000];
    new Random(7).nextBytes(payload);
    try (TcpClient client = ProxyFixture.connect(proxy)) {
      Duration baseline = client.roundTrip(payload, TIMEOUT);
      proxy.toxics().bandwidth("narrow", ToxicDirection.DOWNSTREAM, 50);

      long start = System.nanoTime();
      client.send(payload);
      byte[] echoed = client.read(payload.length, TIMEOUT);
      Duration paced = Duration.ofNanos(System.nanoTime() - start);

      assertArrayEquals(payload, echoed);
      assertTrue(paced.toMillis() >= 1_400, "75 KB at 50 KB/s took " + paced);
      assertTrue(paced.compareTo(baseline) > 0, paced + " vs baseline " + baseline);
    }
  }
}
