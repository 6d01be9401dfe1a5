package dev.redlock.spring.boot;

import dev.redlock.RedLock;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Auto-configures the health indicator {@code redlock} of the {@link RedLock} bean, on whichever
 * health API the application's Spring Boot has: {@link RedLockHealthIndicator} on Boot 4, {@link
 * RedLockBoot3HealthIndicator} on Boot 3. Off with {@code management.health.redlock.enabled=false}.
 */
@AutoConfiguration(after = RedLockAutoConfiguration.class)
@ConditionalOnClass(RedLock.class)
@ConditionalOnBean(RedLock.class)
@ConditionalOnProperty(
    prefix = "management.health.redlock",
    name = "enabled",
    havingValue = "true",
    matchIfMissing = true)
public class RedLockHealthConfiguration {

  /** Created by Spring Boot. */
  public RedLockHealthConfiguration() {}

  /** Boot 4. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class Boot4 {
    @Bean
    @ConditionalOnMissingBean(name = "redlockHealthIndicator")
    RedLockHealthIndicator redlockHealthIndicator(RedLock redlock) {
      return new RedLockHealthIndicator(redlock);
    }
  }

  /** Boot 3. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
  @ConditionalOnMissingClass("org.springframework.boot.health.contributor.HealthIndicator")
  static class Boot3 {
    @Bean
    @ConditionalOnMissingBean(name = "redlockHealthIndicator")
    RedLockBoot3HealthIndicator redlockHealthIndicator(RedLock redlock) {
      return new RedLockBoot3HealthIndicator(redlock);
    }
  }
}
