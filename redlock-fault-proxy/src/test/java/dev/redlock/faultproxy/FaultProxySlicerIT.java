package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import eu.rekawek.toxiproxy.model.toxic.Slicer;
import java.io.IOException;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The {@code slicer} toxic. */
class FaultProxySlicerIT {
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
  void slicerDeliversEveryByteIntactAndInOrder() throws IOException {
    Proxy proxy = fixture.echoProxy("sliced");
    Slicer upstream = proxy.toxics().slicer("up", ToxicDirection.UPSTREAM, 100, 20);
    upstream.setSizeVariation(40);
    proxy.toxics().slicer("down", ToxicDirection.DOWNSTREAM, 7, 0);
    byte[] payload = new byte[64 * 1024];
    new Random(11).nextBytes(payload);

    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.send(payload);
      byte[] echoed = client.read(payload.length, TIMEOUT);

      assertArrayEquals(payload, echoed);
    }
  }
}
