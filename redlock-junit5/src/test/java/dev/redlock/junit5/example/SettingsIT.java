package dev.redlock.junit5.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.junit5.RedLockMasters;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The docs page's settings example, and that the settings reach the test's RedLock. */
class SettingsIT {

  // README: JUnit5 settings
  @RegisterExtension
  static final RedLockMasters masters =
      RedLockMasters.of(3)
          .configure(b -> b.nodeTimeout(Duration.ofMillis(100)).fencing(false))
          .startTimeout(Duration.ofSeconds(30));

  // end README: JUnit5 settings

  @Test
  void theTestsRedLockIsBuiltWithTheSettings(RedLock redlock) {
    assertEquals(3, masters.uris().size());
    try (Lease lease = redlock.tryAcquire("report", Duration.ofSeconds(5)).orElseThrow()) {
      assertThrows(IllegalStateException.class, lease::fencingToken, "fencing is off");
    }
  }
}
