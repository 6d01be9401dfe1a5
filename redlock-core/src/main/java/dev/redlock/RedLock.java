package dev.redlock;

/** Placeholder while the coordinator is written. */
public final class RedLock {
  private RedLock() {}
}
