package dev.redlock.spring.boot;

import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import dev.redlock.RedLockListener;

/** Builds the RedLock bean from the configured builder: how the metrics wrap its listener. */
@FunctionalInterface
interface RedLockFactory {
  /** Builds; {@code listener} is the application's, or null. */
  RedLock build(RedLockBuilder builder, RedLockListener listener);
}
