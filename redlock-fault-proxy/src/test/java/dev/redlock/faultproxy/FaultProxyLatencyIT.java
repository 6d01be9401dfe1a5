package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import eu.rekawek.toxiproxy.model.toxic.Latency;
import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The {@code latency} toxic, measured against a no-toxic baseline on the same connection. */
class FaultProxyLatencyIT {
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
  void latencyAddsAtLeastItsDelayToARoundTrip() throws IOException {
    Proxy proxy = fixture.echoProxy("slow");
    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.fastestRoundTrip("warm-up", 5, TIMEOUT);
      Duration baseline = client.fastestRoundTrip("PING", 5, TIMEOUT);

      proxy.toxics().latency("delay", ToxicDirection.DOWNSTREAM, 200);
      Duration delayed = client.roundTrip("PING", TIMEOUT);

      assertAtLeast(baseline.plusMillis(200), delayed);
    }
  }

  @Test
  void latenciesInBothDirectionsAddUp() throws IOException {
    Proxy proxy = fixture.echoProxy("slow-both-ways");
    proxy.toxics().latency("up", ToxicDirection.UPSTREAM, 100);
    proxy.toxics().latency("down", ToxicDirection.DOWNSTREAM, 150);

    try (TcpClient client = ProxyFixture.connect(proxy)) {
      Duration delayed = client.roundTrip("PING", TIMEOUT);

      assertAtLeast(Duration.ofMillis(250), delayed);
    }
  }

  @Test
  void backToBackChunksDoNotAccumulateDelay() throws IOException {
    Proxy proxy = fixture.echoProxy("pipelined");
    proxy.toxics().latency("delay", ToxicDirection.DOWNSTREAM, 300);

    try (TcpClient client = ProxyFixture.connect(proxy)) {
      long start = System.nanoTime();
      for (int i = 0; i < 5; i++) {
        client.send("x" + i);
      }
      String echoed = client.readText(10, TIMEOUT);
      Duration elapsed = Duration.ofNanos(System.nanoTime() - start);

      assertEquals("x0x1x2x3x4", echoed);
      assertAtLeast(Duration.ofMillis(300), elapsed);
      assertTrue(elapsed.compareTo(Duration.ofMillis(1_200)) < 0, "not 5 x 300 ms: " + elapsed);
    }
  }

  @Test
  void latencyUpdateAppliesToALiveConnection() throws IOException {
    Proxy proxy = fixture.echoProxy("retuned");
    try (TcpClient client = ProxyFixture.connect(proxy)) {
      Latency latency = proxy.toxics().latency("delay", ToxicDirection.DOWNSTREAM, 50);
      assertAtLeast(Duration.ofMillis(50), client.roundTrip("first", TIMEOUT));

      latency.setLatency(400);

      assertEquals(400, latency.getLatency());
      assertAtLeast(Duration.ofMillis(400), client.roundTrip("second", TIMEOUT));
    }
  }

  private static void assertAtLeast(Duration expected, Duration actual) {
    assertTrue(actual.compareTo(expected) >= 0, () -> actual + " should be at least " + expected);
  }
}
