package dev.redlock.shedlock;

import dev.redlock.Lease;
import java.time.Duration;
import java.util.Optional;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

/**
 * One ShedLock lock on a {@link Lease}. {@link AbstractSimpleLock} refuses a second unlock or
 * extend, so each method here runs at most once per object; an extend hands the same lease on to a
 * new object with the new configuration.
 */
final class QuorumLock extends AbstractSimpleLock {

  private final Lease lease;

  QuorumLock(Lease lease, LockConfiguration configuration) {
    super(configuration);
    this.lease = lease;
  }

  /** Releases now, or shortens the expiry to {@code lockAtLeastUntil}: never lengthens it. */
  @Override
  protected void doUnlock() {
    // A zero delay releases at once, on every master.
    lease.releaseAfter(
        Deadlines.atLeast(ClockProvider.now(), lockConfiguration.getLockAtLeastUntil()));
  }

  @Override
  protected Optional<SimpleLock> doExtend(LockConfiguration next) {
    Duration ttl = Deadlines.atMost(ClockProvider.now(), next.getLockAtMostUntil());
    boolean extended;
    try {
      extended = lease.extend(ttl);
    } catch (IllegalArgumentException e) {
      // Thrown before anything was sent; ShedLock leaves this lock usable.
      throw RedLockProvider.refused("extend", next, ttl, e);
    }
    if (extended) {
      return Optional.of(new QuorumLock(lease, next));
    }
    // Gone, or not confirmed by a quorum in time. ShedLock lets no one use this lock again, so end
    // the handle; but a task may still be running under it, so the masters keep it until the
    // lockAtMostUntil it had: a shorten to that, which undoes what a minority extended, lengthens
    // nothing and re-creates nothing.
    lease.releaseAfter(
        Deadlines.atLeast(ClockProvider.now(), lockConfiguration.getLockAtMostUntil()));
    return Optional.empty();
  }

  @Override
  public String toString() {
    return "QuorumLock{" + lockConfiguration + ", " + lease + "}";
  }
}
