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

/** The {@code slow_close} toxic. */
class FaultProxySlowCloseIT {
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
  void slowCloseDelaysTheCloseButNotTheData() throws Exception {
    Proxy proxy = fixture.echoProxy("lingering");
    Duration baseline = timeToSeeServerClose(proxy);
    proxy.toxics().slowClose("linger", ToxicDirection.DOWNSTREAM, 500);

    Duration delayed = timeToSeeServerClose(proxy);

    assertTrue(delayed.toMillis() >= 500, "close seen after " + delayed);
    assertTrue(delayed.compareTo(baseline) > 0, delayed + " vs baseline " + baseline);
  }

  /**
   * Round-trips, has the server hang up and times how long the client takes to see it: from just
   * before the server closes, since the toxic's delay starts when the proxy sees the close, which
   * can be before this thread gets back from {@code close()} on a loaded machine (timed from then,
   * the delay came in under 500 ms now and then).
   */
  private Duration timeToSeeServerClose(Proxy proxy) throws Exception {
    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.roundTrip("data flows at once", TIMEOUT);
      EchoServer.Peer server = fixture.echo.awaitConnection(TIMEOUT);

      long closing = System.nanoTime();
      server.close();
      TcpClient.End end = client.awaitEnd(TIMEOUT);
      Duration seen = Duration.ofNanos(System.nanoTime() - closing);

      assertEquals(TcpClient.Ending.CLOSED, end.ending());
      return seen;
    }
  }
}
