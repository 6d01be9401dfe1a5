package dev.redlock.benchmark;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A master that never answers: a loopback TCP server that accepts every connection, reads and
 * discards whatever arrives, and never writes a byte nor closes a connection itself. That is what a
 * Toxiproxy {@code timeout} toxic with timeout 0 does to a proxied Redis: the TCP handshake
 * succeeds, every command vanishes, and a client learns of it only from its own timeouts.
 *
 * <p>One daemon thread accepts ({@code blackhole-accept}), one daemon thread per connection reads
 * ({@code blackhole-read-N}) until the client closes it. Thread-safe.
 */
final class BlackHole implements AutoCloseable {

  private final ServerSocket server;
  private final Thread acceptor;
  private final List<Socket> connections = new ArrayList<>(); // guarded by itself
  private final AtomicLong accepted = new AtomicLong();
  private final AtomicLong discarded = new AtomicLong();
  private volatile boolean closed;

  private BlackHole(ServerSocket server) {
    this.server = server;
    this.acceptor = new Thread(this::accept, "blackhole-accept");
    acceptor.setDaemon(true);
  }

  /**
   * Listens on a free loopback port and starts accepting.
   *
   * @throws IOException if no port can be bound
   */
  static BlackHole start() throws IOException {
    ServerSocket server = new ServerSocket();
    try {
      server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    } catch (IOException | RuntimeException e) {
      server.close();
      throw e;
    }
    BlackHole hole = new BlackHole(server);
    hole.acceptor.start();
    return hole;
  }

  /** Returns {@code host:port}, as RedLock names the master in outcomes and listener calls. */
  String node() {
    return server.getInetAddress().getHostAddress() + ":" + server.getLocalPort();
  }

  /** Returns the URI to configure in place of a real master. */
  String uri() {
    return "redis://" + node();
  }

  /** Returns how many connections were accepted so far. */
  long accepted() {
    return accepted.get();
  }

  /** Returns how many bytes were read and thrown away so far. */
  long discarded() {
    return discarded.get();
  }

  private void accept() {
    while (!closed) {
      Socket socket;
      try {
        socket = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      synchronized (connections) {
        if (closed) {
          closeQuietly(socket);
          return;
        }
        connections.add(socket);
      }
      long n = accepted.incrementAndGet();
      Thread reader = new Thread(() -> swallow(socket), "blackhole-read-" + n);
      reader.setDaemon(true);
      reader.start();
    }
  }

  /** Reads and discards until the client closes the connection (or this server does). */
  private void swallow(Socket socket) {
    byte[] buffer = new byte[8192];
    try (InputStream in = socket.getInputStream()) {
      int n;
      while ((n = in.read(buffer)) >= 0) {
        discarded.addAndGet(n);
      }
    } catch (IOException e) {
      // reset by the client, or closed by close(): either way this connection is done
    } finally {
      closeQuietly(socket);
      synchronized (connections) {
        connections.remove(socket);
      }
    }
  }

  /** Stops accepting and closes every connection still open. Idempotent. */
  @Override
  public void close() {
    closed = true;
    closeQuietly(server);
    List<Socket> open;
    synchronized (connections) {
      open = new ArrayList<>(connections);
      connections.clear();
    }
    open.forEach(BlackHole::closeQuietly);
    try {
      acceptor.join(TimeUnit.SECONDS.toMillis(1));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception e) {
      // nothing to do: it is being thrown away
    }
  }

  @Override
  public String toString() {
    return "BlackHole{" + node() + "}";
  }
}
