package dev.redlock.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.shedlock.RedLockProvider;
import dev.redlock.spring.RedLockRegistry;
import org.junit.jupiter.api.Test;

/**
 * The properties' defaults are literals (so that the configuration processor puts them in the IDE
 * metadata): they must stay the library's.
 */
class RedLockPropertiesTest {

  @Test
  void theDefaultsAreTheLibrarys() {
    RedLockProperties properties = new RedLockProperties();
    assertEquals(RedLock.DEFAULT_NODE_TIMEOUT, properties.getNodeTimeout());
    assertEquals(RedLock.DEFAULT_CONNECT_TIMEOUT, properties.getConnectTimeout());
    assertEquals(RedLock.DEFAULT_DRIFT_FACTOR, properties.getDriftFactor());
    assertEquals(RedLock.DEFAULT_RETRY_DELAY, properties.getRetryDelay());
    assertNull(properties.getMaxLeaseTime()); // derived, at least RedLock.DEFAULT_MAX_LEASE_TIME
    assertEquals(RedLock.DEFAULT_CIRCUIT_BREAKER_WAIT, properties.getCircuitBreakerWait());
    assertEquals(RedLock.DEFAULT_NODE_TIMEOUT, new RedLockProperties.Datacenter().getNodeTimeout());
    assertEquals(RedLockRegistry.DEFAULT_TTL, properties.getRegistry().getTtl());
    assertEquals(RedLockProvider.DEFAULT_KEY_PREFIX, properties.getShedlock().getKeyPrefix());
    assertTrue(properties.isFencing() && properties.isRestartGuard());
    assertTrue(properties.isCircuitBreakers());
    assertTrue(!properties.isAdmitFreshMasters() && properties.isExcludeUnfitMasters());
  }
}
