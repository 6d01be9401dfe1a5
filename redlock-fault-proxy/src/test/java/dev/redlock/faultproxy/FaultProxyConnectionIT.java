package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import eu.rekawek.toxiproxy.Proxy;
import java.io.IOException;
import java.net.ConnectException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The connection model: enable/disable, delete, upstream failures, teardown, shutdown. */
class FaultProxyConnectionIT {
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
  void disablingDropsLiveConnectionsAndRefusesNewOnesUntilReenabled() throws Exception {
    Proxy proxy = fixture.echoProxy("flappy");
    TcpClient live = ProxyFixture.connect(proxy);
    live.roundTrip("before", TIMEOUT);

    proxy.disable();

    assertNotEquals(TcpClient.Ending.STILL_OPEN, live.awaitEnd(TIMEOUT).ending());
    assertThrows(ConnectException.class, () -> ProxyFixture.connect(proxy).close());
    assertEquals(false, fixture.client.getProxy("flappy").isEnabled());

    proxy.enable();

    Proxy enabled = fixture.client.getProxy("flappy");
    assertEquals(proxy.getListen(), enabled.getListen());
    try (TcpClient fresh = ProxyFixture.connect(enabled)) {
      fresh.roundTrip("after", TIMEOUT);
    }
    live.close();
  }

  @Test
  void deletingAProxyDropsItsLiveConnections() throws Exception {
    Proxy proxy = fixture.echoProxy("deleted");
    try (TcpClient live = ProxyFixture.connect(proxy)) {
      live.roundTrip("hello", TIMEOUT);

      proxy.delete();

      assertNotEquals(TcpClient.Ending.STILL_OPEN, live.awaitEnd(TIMEOUT).ending());
    }
  }

  @Test
  void clientCloseClosesTheUpstreamSide() throws Exception {
    Proxy proxy = fixture.echoProxy("client-closes");
    TcpClient client = ProxyFixture.connect(proxy);
    client.roundTrip("hello", TIMEOUT);
    EchoServer.Peer upstreamSide = fixture.echo.awaitConnection(TIMEOUT);

    client.close();

    assertTrue(upstreamSide.awaitEnd(TIMEOUT), "upstream side closed");
  }

  @Test
  void serverCloseClosesTheClientSide() throws Exception {
    Proxy proxy = fixture.echoProxy("server-closes");
    try (TcpClient client = ProxyFixture.connect(proxy)) {
      client.roundTrip("hello", TIMEOUT);

      fixture.echo.awaitConnection(TIMEOUT).close();

      assertEquals(TcpClient.Ending.CLOSED, client.awaitEnd(TIMEOUT).ending());
    }
  }

  @Test
  void unreachableUpstreamClosesTheClient() throws Exception {
    int deadPort;
    try (ServerSocket reserved = new ServerSocket(0)) {
      deadPort = reserved.getLocalPort();
    }
    Proxy proxy = fixture.client.createProxy("dead-end", "127.0.0.1:0", "127.0.0.1:" + deadPort);

    try (TcpClient client = ProxyFixture.connect(proxy)) {
      assertNotEquals(TcpClient.Ending.STILL_OPEN, client.awaitEnd(TIMEOUT).ending());
    }
  }

  @Test
  void changingTheUpstreamDropsLiveConnectionsAndUsesTheNewOne() throws Exception {
    Proxy proxy = fixture.echoProxy("moving");
    try (EchoServer other = EchoServer.start();
        TcpClient live = ProxyFixture.connect(proxy)) {
      live.roundTrip("old", TIMEOUT);

      proxy.setUpstream(other.address());

      assertNotEquals(TcpClient.Ending.STILL_OPEN, live.awaitEnd(TIMEOUT).ending());
      try (TcpClient fresh = ProxyFixture.connect(fixture.client.getProxy("moving"))) {
        fresh.roundTrip("new", TIMEOUT);
        other.awaitConnection(TIMEOUT);
      }
    }
  }

  @Test
  void closingTheServerStopsProxiesConnectionsAndEveryThread() throws Exception {
    Proxy proxy = fixture.echoProxy("shutdown");
    TcpClient live = ProxyFixture.connect(proxy);
    live.roundTrip("hello", TIMEOUT);
    String prefix = fixture.server.threadNamePrefix();
    assertTrue(threadsNamed(prefix).size() >= 5, () -> "threads: " + threadsNamed(prefix));

    fixture.server.close();

    assertEquals(List.of(), threadsNamed(prefix));
    assertNotEquals(TcpClient.Ending.STILL_OPEN, live.awaitEnd(TIMEOUT).ending());
    assertThrows(ConnectException.class, () -> ProxyFixture.connect(proxy).close());
    assertThrows(IOException.class, fixture.client::version);
    live.close();
  }

  private static List<String> threadsNamed(String prefix) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(Thread::isAlive)
        .map(Thread::getName)
        .filter(name -> name.startsWith(prefix))
        .sorted()
        .collect(Collectors.toList());
  }
}
