package dev.redlock.junit5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ServerBinaryTest {

  @TempDir Path dir;

  @Test
  void theSystemPropertyWinsOverTheEnvironmentAndThePath() throws IOException {
    Path chosen = executable("chosen/redis-server");
    Path other = executable("other/redis-server");
    ServerBinary.Choice choice =
        ServerBinary.select(chosen.toString(), other.toString(), other.getParent().toString());
    assertEquals(chosen, choice.path());
    assertEquals("system property redlock.redis.server", choice.reason());
  }

  @Test
  void theEnvironmentWinsOverThePath() throws IOException {
    Path chosen = executable("chosen/redis-server");
    Path other = executable("other/redis-server");
    ServerBinary.Choice choice =
        ServerBinary.select(" ", chosen.toString(), other.getParent().toString());
    assertEquals(chosen, choice.path());
    assertEquals("environment variable REDIS_SERVER", choice.reason());
  }

  @Test
  void aRedisServerOnThePathIsFound() throws IOException {
    Path onPath = executable("bin/redis-server");
    ServerBinary.Choice choice =
        ServerBinary.select(null, null, dir.resolve("empty") + ":" + onPath.getParent());
    assertEquals(onPath, choice.path());
  }

  @Test
  void withoutAnyTheBinaryBundledInEmbeddedRedisIsUsedIfItIsOnTheClassPath() {
    ServerBinary.Choice choice = ServerBinary.select(null, null, dir.toString());
    assertTrue(choice.reason().contains("embedded-redis"), choice.reason());
    assertTrue(Files.isExecutable(choice.path()), choice.path() + " is executable");
  }

  @Test
  void aSettingThatIsNoExecutableIsRefusedWithItsSource() {
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> ServerBinary.select(dir.resolve("missing").toString(), null, null));
    assertTrue(
        e.getMessage().startsWith("system property redlock.redis.server is '"), e.getMessage());
  }

  private Path executable(String name) throws IOException {
    Path file = dir.resolve(name);
    Files.createDirectories(file.getParent());
    Files.writeString(file, "#!/bin/sh\n");
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    return file;
  }
}
