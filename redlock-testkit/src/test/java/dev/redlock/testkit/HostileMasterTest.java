package dev.redlock.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.HostileMaster.Mode;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class HostileMasterTest {

  private static final String SCRIPT = "return redis.call('GET', KEYS[1])";

  @Test
  void theHandshakeIsAnsweredAsRedisWouldThenTheFloodNeverEndsALine() throws IOException {
    try (HostileMaster master = HostileMaster.start(Mode.FLOOD);
        RawClient client = new RawClient(master.port())) {
      // Pipelined in one write, as the library's handshake is.
      client.send(
          List.of("AUTH", "user", "secret"),
          List.of("SELECT", "3"),
          List.of("SCRIPT", "LOAD", SCRIPT),
          List.of("INFO", "server"),
          List.of("CONFIG", "GET", "appendonly"),
          List.of("CONFIG", "GET", "appendfsync"),
          List.of("CONFIG", "GET", "maxmemory"),
          List.of("PING"));
      assertEquals("+OK", client.line());
      assertEquals("+OK", client.line());
      assertEquals("$40", client.line());
      assertEquals(sha1(SCRIPT), client.line());
      String info = client.bulk();
      assertTrue(Pattern.compile("(?m)^run_id:[0-9a-f]{40}\\r?$").matcher(info).find(), info);
      assertTrue(
          Pattern.compile("(?m)^uptime_in_seconds:(\\d{5,})\\r?$").matcher(info).find(), info);
      assertEquals(List.of("*2", "$10", "appendonly", "$2", "no"), client.lines(5));
      assertEquals(List.of("*2", "$11", "appendfsync", "$8", "everysec"), client.lines(5));
      assertEquals("*0", client.line());
      assertEquals("+PONG", client.line());
      assertEquals(0, master.misbehaving());

      client.send(List.of("SET", "k", "token", "NX", "PX", "10000"));
      byte[] flood = client.bytes(1 << 20);
      assertEquals('+', flood[0]);
      for (int i = 1; i < flood.length; i++) {
        assertEquals('x', flood[i], "byte " + i);
      }
      assertEquals(1, master.accepted());
      assertEquals(1, master.misbehaving());
      assertTrue(master.bytesSent() >= flood.length, master.stats().toString());
    }
  }

  @Test
  void timeIsADiagnosticBeforeTheScriptsAreLoadedAndALockCommandAfter() throws IOException {
    try (HostileMaster master = HostileMaster.start(Mode.GARBAGE);
        RawClient client = new RawClient(master.port())) {
      client.send(List.of("TIME"));
      assertEquals("*2", client.line());
      client.lines(4);
      client.send(List.of("SCRIPT", "LOAD", SCRIPT), List.of("TIME"));
      client.lines(2);
      assertTrue(client.line().startsWith("?"), "TIME after SCRIPT LOAD met the mode");
      assertEquals(1, master.misbehaving());
    }
  }

  @Test
  void garbageAnswersEveryCommandWithALineNoRespVersionReads() throws IOException {
    try (HostileMaster master = HostileMaster.start(Mode.GARBAGE);
        RawClient client = new RawClient(master.port())) {
      client.send(List.of("PING"), List.of("EVALSHA", "abc", "1", "k", "t"), List.of("PING"));
      assertEquals("+PONG", client.line());
      String first = client.line();
      String second = client.line();
      for (String junk : List.of(first, second)) {
        assertTrue(junk.matches("\\?[!-~]{15,80}"), junk);
      }
      assertFalse(first.equals(second), "random junk, not one line repeated");
    }
  }

  @Test
  void aClientLibraryGetsThroughTheHandshakeAndChokesOnTheGarbage() {
    try (HostileMaster master = HostileMaster.start(Mode.GARBAGE);
        RedisAdmin admin = RedisAdmin.connect(master.host(), master.port())) {
      assertEquals("PONG", admin.command("PING"));
      RuntimeException e = assertThrows(RuntimeException.class, () -> admin.get("k"));
      assertTrue(String.valueOf(e.getMessage()).contains("?"), e.toString());
    }
  }

  @Test
  void slowlorisDribblesTheRightRepliesOneBytePerInterval() throws IOException {
    Duration interval = Duration.ofMillis(20);
    try (HostileMaster master =
            HostileMaster.builder().mode(Mode.SLOWLORIS).interval(interval).start();
        RawClient client = new RawClient(master.port())) {
      client.send(List.of("SCRIPT", "LOAD", SCRIPT));
      client.lines(2);
      long began = System.nanoTime();
      client.send(List.of("SET", "k", "t", "NX", "PX", "10000"), List.of("MGET", "f", "m"));
      byte[] reply = client.bytes("+OK\r\n*2\r\n$-1\r\n$-1\r\n".length());
      long elapsed = System.nanoTime() - began;

      assertEquals("+OK\r\n*2\r\n$-1\r\n$-1\r\n", new String(reply, StandardCharsets.US_ASCII));
      // 19 bytes, the first at once: at least 18 intervals.
      assertTrue(elapsed >= interval.multipliedBy(18).toNanos(), elapsed / 1_000_000 + " ms");
    }
  }

  @Test
  void oversizeAnnounces512MiBThenTricklesItsData() throws IOException {
    Duration interval = Duration.ofMillis(10);
    try (HostileMaster master =
            HostileMaster.builder().mode(Mode.OVERSIZE).interval(interval).start();
        RawClient client = new RawClient(master.port())) {
      client.send(List.of("EVALSHA", "abc", "1", "k", "t"));
      assertEquals("$536870912", client.line());
      byte[] data = client.bytes(3 * HostileMaster.TRICKLE_BYTES);
      for (byte b : data) {
        assertEquals('x', b);
      }
      assertTrue(master.bytesSent() < 1 << 20, "trickling, not flooding: " + master.stats());
    }
  }

  @Test
  void resetAnswersTheHandshakeThenResetsTheConnection() throws IOException {
    try (HostileMaster master = HostileMaster.start(Mode.RESET);
        RawClient client = new RawClient(master.port())) {
      client.send(List.of("PING"));
      assertEquals("+PONG", client.line());
      client.send(List.of("SET", "k", "t"));
      assertThrows(SocketException.class, client::line, "an RST, not a FIN");
      assertEquals(1, master.misbehaving());
    }
  }

  @Test
  void streamAnswersALockCommandWithWellFormedRepliesWithoutEnd() throws IOException {
    try (HostileMaster master = HostileMaster.start(Mode.STREAM);
        RawClient client = new RawClient(master.port())) {
      client.send(List.of("PING"), List.of("SET", "k", "t", "NX", "PX", "10000"));
      assertEquals("+PONG", client.line());
      // Sixteen writes' worth of replies to the one SET, every one of them ":1".
      int replies = 16 * HostileConnection.CHUNK_BYTES / 4;
      byte[] stream = client.bytes(4 * replies);
      assertEquals(":1\r\n".repeat(replies), new String(stream, StandardCharsets.US_ASCII));
      assertEquals(1, master.accepted());
      assertEquals(1, master.misbehaving());
      // Counted per finished write: the client may have read part of a write not yet returned.
      assertTrue(
          master.bytesSent() >= stream.length - HostileConnection.CHUNK_BYTES,
          master.stats().toString());
    }
  }

  @Test
  void aClientLibraryReadsTheStreamAsValidRepliesAndDoesNotChoke() {
    try (HostileMaster master = HostileMaster.start(Mode.STREAM);
        RedisAdmin admin = RedisAdmin.connect(master.host(), master.port())) {
      assertEquals("PONG", admin.command("PING"));
      for (int i = 0; i < 3; i++) {
        assertEquals(1L, admin.command("DEL", "k" + i), "the next ':1' of the stream");
      }
      assertEquals(1, master.misbehaving());
    }
  }

  @Test
  void inlineCommandsAreAnsweredToo() throws IOException {
    try (HostileMaster master = HostileMaster.start(Mode.FLOOD);
        RawClient client = new RawClient(master.port())) {
      client.raw("PING\r\nECHO hello\r\n");
      assertEquals("+PONG", client.line());
      assertEquals("$5", client.line());
      assertEquals("hello", client.line());
    }
  }

  @Test
  void aReconnectingClientGetsAFreshHandshakeEachTime() throws IOException {
    try (HostileMaster master = HostileMaster.start(Mode.GARBAGE)) {
      for (int i = 0; i < 2; i++) {
        try (RawClient client = new RawClient(master.port())) {
          client.send(List.of("PING"), List.of("SET", "k", "t"));
          assertEquals("+PONG", client.line());
          assertTrue(client.line().startsWith("?"));
        }
      }
      assertEquals(2, master.accepted());
      assertEquals(2, master.misbehaving());
    }
  }

  @Test
  void closeEndsEveryConnectionAndItsThread() throws IOException {
    HostileMaster master = HostileMaster.start(Mode.FLOOD);
    try (RawClient client = new RawClient(master.port())) {
      client.send(List.of("SET", "k", "t"));
      client.bytes(1024); // flooding now, and blocked once the socket is full
      master.close();
      master.close();
      // The rest of the flood, then the end of the stream (or a reset).
      Poll.until(
          Duration.ofSeconds(5), () -> client.drainedToTheEnd(), () -> "the connection closed");
      Poll.until(
          Duration.ofSeconds(5),
          () ->
              Thread.getAllStackTraces().keySet().stream()
                  .noneMatch(t -> t.getName().startsWith("hostile-master-flood-")),
          () -> "the master's threads ended");
    }
  }

  @Test
  void modesHaveCommandLineNames() {
    assertEquals("slowloris", Mode.SLOWLORIS.flag());
    assertEquals(Mode.OVERSIZE, Mode.of("Oversize"));
    assertThrows(IllegalArgumentException.class, () -> Mode.of("nice"));
    assertThrows(IllegalStateException.class, () -> HostileMaster.builder().start());
    assertThrows(IllegalArgumentException.class, () -> HostileMaster.builder().port(65536));
    assertThrows(
        IllegalArgumentException.class, () -> HostileMaster.builder().interval(Duration.ZERO));
  }

  private static String sha1(String script) {
    try {
      return HexFormat.of()
          .formatHex(
              java.security.MessageDigest.getInstance("SHA-1")
                  .digest(script.getBytes(StandardCharsets.UTF_8)));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }

  /** A client speaking RESP by hand over a blocking socket, every read bounded by 5 s. */
  static final class RawClient implements AutoCloseable {
    private final Socket socket;
    private final OutputStream out;
    private final DataInputStream in;

    RawClient(int port) throws IOException {
      socket = new Socket("127.0.0.1", port);
      socket.setSoTimeout(5_000);
      out = socket.getOutputStream();
      in = new DataInputStream(socket.getInputStream());
    }

    /** Writes the commands, each as an array of bulk strings, in one write. */
    @SafeVarargs
    final void send(List<String>... commands) throws IOException {
      StringBuilder batch = new StringBuilder();
      for (List<String> command : commands) {
        batch.append('*').append(command.size()).append("\r\n");
        for (String word : command) {
          batch.append('$').append(word.getBytes(StandardCharsets.UTF_8).length).append("\r\n");
          batch.append(word).append("\r\n");
        }
      }
      raw(batch.toString());
    }

    void raw(String text) throws IOException {
      out.write(text.getBytes(StandardCharsets.UTF_8));
      out.flush();
    }

    /** One line, without its CRLF. */
    String line() throws IOException {
      ByteArrayOutputStream line = new ByteArrayOutputStream();
      int b;
      while ((b = in.read()) != '\n') {
        if (b < 0) {
          throw new IOException("end of stream after '" + line + "'");
        }
        line.write(b);
      }
      String text = line.toString(StandardCharsets.UTF_8);
      assertTrue(text.endsWith("\r"), "a line ends with CRLF: " + text);
      return text.substring(0, text.length() - 1);
    }

    List<String> lines(int count) throws IOException {
      List<String> lines = new java.util.ArrayList<>();
      for (int i = 0; i < count; i++) {
        lines.add(line());
      }
      return lines;
    }

    /** A bulk string reply's content. */
    String bulk() throws IOException {
      String header = line();
      assertTrue(header.startsWith("$"), header);
      byte[] data = bytes(Integer.parseInt(header.substring(1)));
      assertEquals("", line());
      return new String(data, StandardCharsets.UTF_8);
    }

    byte[] bytes(int count) throws IOException {
      byte[] data = new byte[count];
      in.readFully(data);
      return data;
    }

    /** Reads what is there; true once the stream ended or was reset, false if it is quiet. */
    boolean drainedToTheEnd() {
      byte[] buffer = new byte[64 * 1024];
      try {
        socket.setSoTimeout(50);
        while (in.read(buffer) >= 0) {
          // the rest of what was sent
        }
        return true;
      } catch (SocketTimeoutException e) {
        return false;
      } catch (IOException e) {
        return true; // reset
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }
}
