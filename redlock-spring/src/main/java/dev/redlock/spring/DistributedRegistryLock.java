package dev.redlock.spring;

import dev.redlock.RedLock;
import java.time.Duration;
import org.springframework.integration.support.locks.DistributedLock;

/**
 * The lock {@link RedLockRegistry#obtain} returns on Spring Integration 7.x: a {@link RegistryLock}
 * that is also 7.x's {@link DistributedLock}, whose two methods it already has.
 *
 * <p>The only class of this module that names {@code DistributedLock}. The registry reaches it
 * through {@link #create} only when that interface is on the class path, so on 6.5 it is never
 * loaded (loading it there would fail: its interface is missing).
 */
final class DistributedRegistryLock extends RegistryLock implements DistributedLock {

  private DistributedRegistryLock(
      RedLockRegistry registry,
      RedLock redlock,
      String key,
      String resource,
      Duration ttl,
      Duration safetyMargin,
      long nowNanos) {
    super(registry, redlock, key, resource, ttl, safetyMargin, nowNanos);
  }

  /**
   * A new lock; declared to return a {@link RegistryLock} so that the registry's calling code is
   * verified without loading this class.
   */
  static RegistryLock create(
      RedLockRegistry registry,
      RedLock redlock,
      String key,
      String resource,
      Duration ttl,
      Duration safetyMargin,
      long nowNanos) {
    return new DistributedRegistryLock(
        registry, redlock, key, resource, ttl, safetyMargin, nowNanos);
  }
}
