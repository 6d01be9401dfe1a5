package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** A blocking test client whose every read has a deadline. */
final class TcpClient implements AutoCloseable {
  /** How a connection ended while the test waited for it to end. */
  enum Ending {
    /** An orderly close (FIN): read returned -1. */
    CLOSED,
    /** A TCP reset. */
    RESET,
    /** Still open at the deadline. */
    STILL_OPEN
  }

  /** What {@link #awaitEnd} saw: how the connection ended, and the bytes that arrived first. */
  record End(Ending ending, byte[] received, Duration elapsed) {}

  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;

  private TcpClient(Socket socket) throws IOException {
    this.socket = socket;
    this.in = socket.getInputStream();
    this.out = socket.getOutputStream();
  }

  static TcpClient connect(int port) throws IOException {
    Socket socket = new Socket();
    socket.setTcpNoDelay(true);
    socket.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
    return new TcpClient(socket);
  }

  void send(byte[] bytes) throws IOException {
    out.write(bytes);
    out.flush();
  }

  void send(String text) throws IOException {
    send(text.getBytes(StandardCharsets.UTF_8));
  }

  /** Half-closes: the peer reads end of stream. */
  void shutdownOutput() throws IOException {
    socket.shutdownOutput();
  }

  /**
   * Reads exactly {@code count} bytes.
   *
   * @throws SocketTimeoutException if they do not all arrive within {@code timeout}
   * @throws EOFException if the connection closes first
   */
  byte[] read(int count, Duration timeout) throws IOException {
    long deadline = System.nanoTime() + timeout.toNanos();
    byte[] bytes = new byte[count];
    int filled = 0;
    while (filled < count) {
      socket.setSoTimeout(remainingMillis(deadline));
      int read = in.read(bytes, filled, count - filled);
      if (read < 0) {
        throw new EOFException("closed after " + filled + " of " + count + " bytes");
      }
      filled += read;
    }
    return bytes;
  }

  String readText(int count, Duration timeout) throws IOException {
    return new String(read(count, timeout), StandardCharsets.UTF_8);
  }

  /** Sends {@code message}, reads its echo and returns the time that took. */
  Duration roundTrip(byte[] message, Duration timeout) throws IOException {
    long start = System.nanoTime();
    send(message);
    byte[] echoed = read(message.length, timeout);
    Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
    assertArrayEquals(message, echoed, "echo");
    return elapsed;
  }

  Duration roundTrip(String message, Duration timeout) throws IOException {
    return roundTrip(message.getBytes(StandardCharsets.UTF_8), timeout);
  }

  /** The fastest of {@code times} round trips: a no-toxic baseline. */
  Duration fastestRoundTrip(String message, int times, Duration timeout) throws IOException {
    Duration fastest = null;
    for (int i = 0; i < times; i++) {
      Duration elapsed = roundTrip(message, timeout);
      fastest = fastest == null || elapsed.compareTo(fastest) < 0 ? elapsed : fastest;
    }
    return fastest;
  }

  /** Reads until the connection ends or {@code timeout} passes, keeping what arrives. */
  End awaitEnd(Duration timeout) throws IOException {
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    ByteArrayOutputStream received = new ByteArrayOutputStream();
    byte[] buffer = new byte[16 * 1024];
    Ending ending;
    while (true) {
      try {
        socket.setSoTimeout(remainingMillis(deadline));
        int read = in.read(buffer);
        if (read < 0) {
          ending = Ending.CLOSED;
          break;
        }
        received.write(buffer, 0, read);
      } catch (SocketTimeoutException e) {
        ending = Ending.STILL_OPEN;
        break;
      } catch (SocketException e) {
        if (String.valueOf(e.getMessage()).contains("reset")) {
          ending = Ending.RESET;
          break;
        }
        throw e;
      }
    }
    return new End(ending, received.toByteArray(), Duration.ofNanos(System.nanoTime() - start));
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }

  private static int remainingMillis(long deadline) throws SocketTimeoutException {
    long left = (deadline - System.nanoTime()) / 1_000_000;
    if (left <= 0) {
      throw new SocketTimeoutException("deadline passed");
    }
    return (int) Math.min(Integer.MAX_VALUE, left);
  }
}
