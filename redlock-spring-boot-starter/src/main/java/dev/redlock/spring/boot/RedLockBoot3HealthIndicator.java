package dev.redlock.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * The RedLock's health on Spring Boot 3 ({@code org.springframework.boot.actuate.health}), as
 * {@link RedLockHealthIndicator} reports it on Boot 4. Thread-safe.
 */
public final class RedLockBoot3HealthIndicator implements HealthIndicator {

  private final RedLock redlock;

  /**
   * Creates the indicator.
   *
   * @param redlock the RedLock whose masters to check
   */
  public RedLockBoot3HealthIndicator(RedLock redlock) {
    this.redlock = requireNonNull(redlock, "redlock");
  }

  @Override
  public Health health() {
    HealthReport report = HealthReport.of(redlock.inspect());
    return (report.up() ? Health.up() : Health.down()).withDetails(report.details()).build();
  }
}
