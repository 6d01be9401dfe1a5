package dev.redlock.faultproxy;

import java.io.IOException;
import java.net.Socket;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * One accepted client and its upstream socket, joined by an upstream link (client to server) and a
 * downstream link (server to client). When either link ends, both sockets close. Thread-safe.
 */
final class ProxiedConnection {
  private final Socket client;
  private final Socket server;
  private final ToxicLink upstream;
  private final ToxicLink downstream;
  private final Consumer<ProxiedConnection> onClosed;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final String name;

  /**
   * @param chains each direction's toxics at the moment the connection starts
   * @param onClosed told once, after both sockets are closed
   */
  ProxiedConnection(
      String name,
      Socket client,
      Socket server,
      Map<Direction, List<Toxic>> chains,
      Consumer<ProxiedConnection> onClosed)
      throws IOException {
    this.name = name;
    this.client = client;
    this.server = server;
    this.onClosed = onClosed;
    client.setTcpNoDelay(true);
    server.setTcpNoDelay(true);
    // Toxiproxy sets SO_LINGER 0 on both sockets when a link starts with a reset_peer toxic in its
    // chain, so only connections opened while one exists end with an RST.
    boolean resetPeer =
        chains.values().stream()
            .flatMap(List::stream)
            .anyMatch(toxic -> toxic.type() == ToxicType.RESET_PEER);
    if (resetPeer) {
      client.setSoLinger(true, 0);
      server.setSoLinger(true, 0);
    }
    this.upstream =
        new ToxicLink(
            name + "-upstream",
            client.getInputStream(),
            server.getOutputStream(),
            chains.get(Direction.UPSTREAM),
            this::close);
    this.downstream =
        new ToxicLink(
            name + "-downstream",
            server.getInputStream(),
            client.getOutputStream(),
            chains.get(Direction.DOWNSTREAM),
            this::close);
  }

  void start(DaemonThreads threads) {
    upstream.start(threads);
    downstream.start(threads);
  }

  ToxicLink link(Direction direction) {
    return direction == Direction.UPSTREAM ? upstream : downstream;
  }

  /** Closes both links and both sockets; idempotent, callable from any thread. */
  void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    upstream.close();
    downstream.close();
    closeQuietly(client);
    closeQuietly(server);
    onClosed.accept(this);
  }

  @Override
  public String toString() {
    return name;
  }

  static void closeQuietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException e) {
      // Nothing left to do with a socket that fails to close.
    }
  }
}
