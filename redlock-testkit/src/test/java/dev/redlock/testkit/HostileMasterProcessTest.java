package dev.redlock.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.HostileMaster.Mode;
import dev.redlock.testkit.HostileMaster.Stats;
import dev.redlock.testkit.HostileMasterTest.RawClient;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class HostileMasterProcessTest {

  @Test
  void aChildProcessFloodsAfterTheHandshakeAndCountsWhatItSent() throws IOException {
    Stats stats;
    long pid;
    try (HostileMasterProcess child = HostileMasterProcess.start(Mode.FLOOD)) {
      pid = child.pid();
      assertNotEquals(ProcessHandle.current().pid(), pid);
      assertEquals("redis://127.0.0.1:" + child.port(), child.uri());
      assertEquals(new Stats(0, 0, 0), child.stats());
      try (RawClient client = new RawClient(child.port())) {
        client.send(List.of("PING"), List.of("EVALSHA", "abc", "1", "k", "t"));
        assertEquals("+PONG", client.line());
        byte[] flood = client.bytes(256 * 1024);
        assertEquals('+', flood[0]);
        assertEquals('x', flood[flood.length - 1]);
      }
      stats = child.stats();
      assertTrue(child.isRunning());
    }
    assertEquals(1, stats.accepted());
    assertEquals(1, stats.misbehaving());
    // Counted per finished write of a 64 KiB chunk: the client may have read part of the chunk
    // whose write had not returned yet (the flood blocks whenever the socket is full).
    assertTrue(stats.bytesSent() >= (256 - 64) * 1024, stats.toString());
    assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "exited");
  }

  @Test
  void aClosedChildNoLongerAnswers() {
    HostileMasterProcess child = HostileMasterProcess.start(Mode.RESET, Duration.ofMillis(5));
    child.close();
    child.close();

    assertFalse(child.isRunning());
    assertThrows(IllegalStateException.class, child::stats);
  }

  @Test
  void statsLinesReadBack() {
    Stats stats = new Stats(3, 2, 12_345);
    assertEquals("stats accepted=3 misbehaving=2 sent=12345", stats.line());
    assertEquals(stats, Stats.parse(stats.line()));
    assertEquals(null, Stats.parse("12345"));
  }
}
