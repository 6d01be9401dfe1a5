package dev.redlock.testkit;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class BinarySelectionTest {
  private static final String PROPERTY = "redlock.redis.server";

  private final String saved = System.getProperty(PROPERTY);

  @AfterEach
  void restoreProperty() {
    if (saved == null) {
      System.clearProperty(PROPERTY);
    } else {
      System.setProperty(PROPERTY, saved);
    }
  }

  @Test
  void propertyEmbeddedSelectsTheBundledBinary() {
    System.setProperty(PROPERTY, "embedded");

    assertTrue(RedisProcess.binaryDescription().contains("embedded-redis bundled binary"));
    try (RedisProcess redis = RedisProcess.start()) {
      String info = (String) redis.admin().command("INFO", "server");
      assertTrue(info.contains("redis_version:6.2."), info);
    }
  }

  @Test
  void propertyNamingAMissingFileFailsClearly() {
    System.setProperty(PROPERTY, "/no/such/redis-server");

    IllegalStateException e = assertThrows(IllegalStateException.class, RedisProcess::start);
    assertTrue(e.getMessage().contains("/no/such/redis-server"), e.getMessage());
  }
}
