package dev.redlock.faultproxy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A loopback TCP server that echoes every byte back; the upstream of the contract tests. */
final class EchoServer implements AutoCloseable {
  private final ServerSocket listener;
  private final BlockingQueue<Peer> accepted = new LinkedBlockingQueue<>();
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();

  private EchoServer(ServerSocket listener) {
    this.listener = listener;
  }

  static EchoServer start() throws IOException {
    ServerSocket listener = new ServerSocket();
    listener.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
    EchoServer server = new EchoServer(listener);
    Thread acceptor = new Thread(server::acceptLoop, "echo-accept-" + listener.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
    return server;
  }

  /** The {@code host:port} to use as a proxy's upstream. */
  String address() {
    return "127.0.0.1:" + listener.getLocalPort();
  }

  /** The server side of one accepted connection. */
  static final class Peer {
    private final Socket socket;
    private final CountDownLatch ended = new CountDownLatch(1);

    private Peer(Socket socket) {
      this.socket = socket;
    }

    /** Closes the server side, as a server that hangs up would. */
    void close() throws IOException {
      socket.close();
    }

    /** Whether the echo loop saw the connection end within {@code timeout}. */
    boolean awaitEnd(Duration timeout) throws InterruptedException {
      return ended.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /** The next connection accepted, waiting up to {@code timeout}. */
  Peer awaitConnection(Duration timeout) throws InterruptedException {
    Peer peer = accepted.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (peer == null) {
      throw new AssertionError("no connection reached the echo server within " + timeout);
    }
    return peer;
  }

  @Override
  public void close() throws IOException {
    listener.close();
    for (Socket socket : open) {
      socket.close();
    }
  }

  private void acceptLoop() {
    while (true) {
      Socket socket;
      try {
        socket = listener.accept();
        socket.setTcpNoDelay(true);
      } catch (IOException e) {
        return;
      }
      open.add(socket);
      Peer peer = new Peer(socket);
      accepted.add(peer);
      Thread echo = new Thread(() -> echo(peer), "echo-" + socket.getPort());
      echo.setDaemon(true);
      echo.start();
    }
  }

  private void echo(Peer peer) {
    Socket socket = peer.socket;
    try (socket) {
      InputStream in = socket.getInputStream();
      OutputStream out = socket.getOutputStream();
      byte[] buffer = new byte[16 * 1024];
      int count;
      while ((count = in.read(buffer)) >= 0) {
        out.write(buffer, 0, count);
      }
    } catch (IOException e) {
      // The test closed or reset the connection.
    } finally {
      open.remove(socket);
      peer.ended.countDown();
    }
  }
}
