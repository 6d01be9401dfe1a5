package dev.redlock.benchmark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

class BlackHoleTest {

  @Test
  void itAcceptsSwallowsEverythingAndNeverAnswers() throws Exception {
    try (BlackHole hole = BlackHole.start()) {
      URI uri = URI.create(hole.uri());
      assertEquals("redis", uri.getScheme());
      assertEquals(hole.node(), uri.getHost() + ":" + uri.getPort());
      byte[] ping = "*1\r\n$4\r\nPING\r\n".getBytes(StandardCharsets.US_ASCII);
      try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
        socket.setSoTimeout(100);
        OutputStream out = socket.getOutputStream();
        out.write(ping);
        out.write(ping);
        out.flush();
        InputStream in = socket.getInputStream();
        assertThrows(SocketTimeoutException.class, in::read, "no answer, and no close");
        poll("both commands swallowed", () -> hole.discarded() == 2L * ping.length);
      }
      assertEquals(1, hole.accepted());
    }
  }

  @Test
  void closingItClosesTheConnectionsItHolds() throws Exception {
    BlackHole hole = BlackHole.start();
    URI uri = URI.create(hole.uri());
    try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
      socket.setSoTimeout(2_000);
      poll("accepted", () -> hole.accepted() == 1);
      hole.close();
      assertEquals(-1, socket.getInputStream().read(), "closed by the black hole");
    }
  }

  private static void poll(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + 2_000_000_000L;
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() - deadline < 0, "timed out waiting: " + what);
      Thread.sleep(5);
    }
  }
}
