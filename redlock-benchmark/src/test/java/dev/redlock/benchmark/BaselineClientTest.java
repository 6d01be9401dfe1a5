package dev.redlock.benchmark;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

/** The baseline's release script, without Redis. */
class BaselineClientTest {

  @Test
  void theReleaseScriptIsRedlockCoresOwnResource() {
    String script = BaselineClient.releaseScript();
    assertTrue(script.contains("redis.call('DEL', KEYS[1])"), script);
  }

  @Test
  void aClasspathWithoutRedlockCoreFailsClearly() throws Exception {
    try (URLClassLoader empty = new URLClassLoader(new URL[0], null)) {
      IllegalStateException e =
          assertThrows(IllegalStateException.class, () -> BaselineClient.releaseScript(empty));
      assertTrue(
          e.getMessage().contains("dev/redlock/internal/transport/release.lua"), e.getMessage());
      assertTrue(e.getMessage().contains("redlock-core"), e.getMessage());
    }
  }
}
