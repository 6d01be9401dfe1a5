package dev.redlock.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RedisProcessTest {

  @Test
  void startedServerAnswersPingOnLoopback() {
    try (RedisProcess redis = RedisProcess.start()) {
      assertTrue(redis.isRunning());
      assertEquals("127.0.0.1", redis.host());
      assertEquals("redis://127.0.0.1:" + redis.port(), redis.uri());
      assertTrue(redis.pid() > 0);
      assertEquals("PONG", redis.admin().command("PING"));
      assertEquals(List.of("save", ""), redis.admin().command("CONFIG", "GET", "save"));
      assertEquals(
          List.of("appendonly", "no"), redis.admin().command("CONFIG", "GET", "appendonly"));
    }
  }

  @Test
  void adminReadsAndWritesKeys() {
    try (RedisProcess redis = RedisProcess.start()) {
      RedisAdmin admin = redis.admin();
      assertNull(admin.get("k"));
      assertFalse(admin.exists("k"));
      assertEquals(-2, admin.pttl("k"));
      admin.set("k", "v");
      assertEquals("v", admin.get("k"));
      assertTrue(admin.exists("k"));
      assertEquals(-1, admin.pttl("k"));
      assertEquals("OK", admin.command("SET", "t", "x", "PX", "60000"));
      assertTrue(admin.pttl("t") > 50_000);
      assertEquals(2, admin.dbSize());
      admin.flushAll();
      assertEquals(0, admin.dbSize());
    }
  }

  @Test
  void killedNodeComesBackEmptyAfterRestart() {
    try (RedisProcess redis = RedisProcess.start()) {
      int port = redis.port();
      long pid = redis.pid();
      redis.admin().set("k", "v");

      redis.kill();
      assertFalse(redis.isRunning());
      assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
      assertThrows(RuntimeException.class, () -> redis.admin().get("k"));

      redis.restart();
      assertTrue(redis.isRunning());
      assertEquals(port, redis.port());
      assertNotEquals(pid, redis.pid());
      assertEquals(0, redis.admin().dbSize());
    }
  }

  @Test
  void stoppedNodeRestartsOnTheSamePort() {
    try (RedisProcess redis = RedisProcess.start()) {
      int port = redis.port();
      redis.stop();
      assertFalse(redis.isRunning());
      redis.stop();

      redis.restart();
      assertEquals(port, redis.port());
      assertEquals("PONG", redis.admin().command("PING"));
    }
  }

  @Test
  void appendOnlyNodeKeepsAKeyAcrossKillAndRestart() {
    try (RedisProcess redis = RedisProcess.builder().persistence(true).start()) {
      assertEquals(
          List.of("appendfsync", "always"), redis.admin().command("CONFIG", "GET", "appendfsync"));
      redis.admin().set("k", "v");

      redis.kill();
      redis.restart();

      assertEquals("v", redis.admin().get("k"));
    }
  }

  @Test
  void pausedNodeTimesOutUntilResumed() {
    try (RedisProcess redis = RedisProcess.start()) {
      RedisAdmin admin = redis.admin();
      assertEquals("PONG", admin.command("PING"));

      redis.pause();
      assertTrue(redis.isRunning());
      long began = System.nanoTime();
      assertThrows(RuntimeException.class, () -> admin.command("PING"));
      long waitedMillis = (System.nanoTime() - began) / 1_000_000;
      assertTrue(
          waitedMillis >= RedisAdmin.TIMEOUT_MILLIS - 200, "failed after " + waitedMillis + " ms");

      redis.resume();
      assertEquals("PONG", admin.command("PING"));
    }
  }

  @Test
  void closeKillsAPausedServerAndIsIdempotent() {
    RedisProcess redis = RedisProcess.start();
    long pid = redis.pid();
    redis.pause();

    redis.close();
    redis.close();

    assertFalse(redis.isRunning());
    assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
    assertThrows(IllegalStateException.class, redis::admin);
    assertThrows(IllegalStateException.class, redis::restart);
  }

  @Test
  void explicitPortIsUsed() throws IOException {
    int port;
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      port = socket.getLocalPort();
    }
    try (RedisProcess redis = RedisProcess.builder().port(port).start()) {
      assertEquals(port, redis.port());
      assertEquals("PONG", redis.admin().command("PING"));
    }
  }

  @Test
  void secondServerOnATakenExplicitPortFailsWithTheServersOutput() {
    try (RedisProcess first = RedisProcess.start()) {
      IllegalStateException e =
          assertThrows(
              IllegalStateException.class,
              () -> RedisProcess.builder().port(first.port()).start().close());
      assertTrue(e.getMessage().contains(Integer.toString(first.port())), e.getMessage());
      assertTrue(first.isRunning());
    }
  }

  @Test
  void binaryThatExitsAtOnceFailsWithItsOutput() {
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> RedisProcess.builder().binary(Path.of("/bin/echo")).start().close());
    assertTrue(e.getMessage().contains("exited with code 0"), e.getMessage());
    assertTrue(e.getMessage().contains("--bind 127.0.0.1"), e.getMessage());
  }

  @Test
  void serverThatNeverAnswersFailsAfterTheStartTimeout(@TempDir Path tmp) throws IOException {
    Path silent = tmp.resolve("silent-server");
    Files.writeString(silent, "#!/bin/sh\nexec sleep 30\n");
    Files.setPosixFilePermissions(silent, PosixFilePermissions.fromString("rwx------"));
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () ->
                RedisProcess.builder()
                    .binary(silent)
                    .startTimeout(Duration.ofMillis(300))
                    .start()
                    .close());
    assertTrue(e.getMessage().contains("within 300 ms"), e.getMessage());
  }

  @Test
  void builderRejectsBadOptions() {
    assertThrows(IllegalArgumentException.class, () -> RedisProcess.builder().port(0));
    assertThrows(IllegalArgumentException.class, () -> RedisProcess.builder().port(65536));
    assertThrows(
        IllegalArgumentException.class, () -> RedisProcess.builder().startTimeout(Duration.ZERO));
    assertThrows(
        IllegalArgumentException.class,
        () -> RedisProcess.builder().binary(Path.of("/no/such/redis-server")));
    assertThrows(NullPointerException.class, () -> RedisProcess.builder().clockRate(null));
  }

  @Test
  void binaryDescriptionNamesTheBinaryAndItsVersion() {
    String description = RedisProcess.binaryDescription();
    assertTrue(description.contains("redis-server"), description);
    assertTrue(description.contains("v="), description);
  }
}
