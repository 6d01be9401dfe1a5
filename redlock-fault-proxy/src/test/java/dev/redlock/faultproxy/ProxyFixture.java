package dev.redlock.faultproxy;

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.ToxiproxyClient;
import java.io.IOException;

/** A fault proxy server, an echo upstream and a Toxiproxy client pointed at the server. */
final class ProxyFixture implements AutoCloseable {
  final FaultProxyServer server;
  final EchoServer echo;
  final ToxiproxyClient client;

  private ProxyFixture(FaultProxyServer server, EchoServer echo) {
    this.server = server;
    this.echo = echo;
    this.client = new ToxiproxyClient(server.host(), server.apiPort());
  }

  static ProxyFixture start() throws IOException {
    FaultProxyServer server = FaultProxyServer.start();
    try {
      return new ProxyFixture(server, EchoServer.start());
    } catch (IOException e) {
      server.close();
      throw e;
    }
  }

  /** Creates a proxy on an ephemeral loopback port in front of the echo server. */
  Proxy echoProxy(String name) throws IOException {
    return client.createProxy(name, "127.0.0.1:0", echo.address());
  }

  /** Opens a client connection through {@code proxy}. */
  static TcpClient connect(Proxy proxy) throws IOException {
    return TcpClient.connect(port(proxy));
  }

  static int port(Proxy proxy) {
    String listen = proxy.getListen();
    return Integer.parseInt(listen.substring(listen.lastIndexOf(':') + 1));
  }

  @Override
  public void close() throws IOException {
    try {
      server.close();
    } finally {
      echo.close();
    }
  }
}
