package dev.redlock.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

class ClockRateTest {

  @Test
  void doubleClockRateExpiresAKeyInHalfTheRealTime() {
    assumeTrue(
        RedisProcess.clockRateSupported(),
        "faketime is not installed (apt-get install faketime); skipping clock-rate test");
    try (RedisProcess redis = RedisProcess.builder().clockRate("+0 x2").start()) {
      RedisAdmin admin = redis.admin();
      assertEquals("OK", admin.command("SET", "k", "v", "PX", "2000"));
      long began = System.nanoTime();

      long deadline = began + Duration.ofMillis(1900).toNanos();
      while (admin.pttl("k") != -2 && System.nanoTime() - deadline < 0) {
        LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
      }
      long elapsedMillis = (System.nanoTime() - began) / 1_000_000;

      assertEquals(-2, admin.pttl("k"), "key still there after " + elapsedMillis + " ms");
      assertTrue(elapsedMillis >= 700, "expired after only " + elapsedMillis + " ms");
    }
  }

  @Test
  void clockRateRunsTheEmbeddedBinary() {
    assumeTrue(
        RedisProcess.clockRateSupported(),
        "faketime is not installed (apt-get install faketime); skipping clock-rate test");
    try (RedisProcess redis = RedisProcess.builder().clockRate("+0 x1").start()) {
      String info = (String) redis.admin().command("INFO", "server");
      assertTrue(info.contains("redis_version:6.2."), info);
      // The pid is the server's, not the faketime wrapper's.
      assertTrue(info.contains("process_id:" + redis.pid() + "\r\n"), info);
    }
  }
}
