package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The happy path logs nothing at WARN or above (slf4j-simple writes to System.err). */
class QuietHappyPathIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void acquireExtendReleaseLogNothingAtWarnOrAbove(RedisCluster cluster) throws Exception {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder().nodes(cluster.uris()).nodeTimeout(Duration.ofMillis(200)).build())) {
      for (int i = 0; i < 20; i++) {
        try (Lease lease = redlock.acquire("quiet", Duration.ofSeconds(5), Duration.ofSeconds(5))) {
          assertTrue(lease.extend(Duration.ofSeconds(10)));
        }
        assertTrue(redlock.tryAcquire("quiet-" + i, Duration.ofSeconds(5)).isPresent());
      }
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertFalse(log.contains("WARN") || log.contains("ERROR"), log);
  }
}
