package dev.redlock.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The RedLock's health on Spring Boot 4 ({@code org.springframework.boot.health}), from its
 * preflight: DOWN when the masters the preflight does not FAIL cannot make a quorum, with each
 * master's checks as details (by {@code host:port}, never a password). Each call runs {@link
 * RedLock#inspect()}, which blocks up to the longer of 1 s and twice the longest node timeout.
 * Thread-safe.
 */
public final class RedLockHealthIndicator implements HealthIndicator {

  private final RedLock redlock;

  /**
   * Creates the indicator.
   *
   * @param redlock the RedLock whose masters to check
   */
  public RedLockHealthIndicator(RedLock redlock) {
    this.redlock = requireNonNull(redlock, "redlock");
  }

  @Override
  public Health health() {
    HealthReport report = HealthReport.of(redlock.inspect());
    return (report.up() ? Health.up() : Health.down()).withDetails(report.details()).build();
  }
}
