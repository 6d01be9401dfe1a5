package dev.redlock;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Extends leases held by {@link RedLock#withLock} before they run low: when a third of the TTL is
 * left, by a quorum extend on one daemon thread ({@code redlock-renewer}). A renewal that fails, or
 * finds the lease already expired, loses the lease (which fires its {@link Lease#onLost()}) and
 * stops; it never extends an expired lease. Renewals stop when the lease is released.
 *
 * <p>Extends run one at a time and each blocks for at most the node timeout, so many leases that
 * come due together are renewed in turn.
 */
final class Renewer {

  private static final Logger log = LoggerFactory.getLogger(Renewer.class);

  private final Leases leases;
  private final ScheduledThreadPoolExecutor executor;

  Renewer(Leases leases) {
    this.leases = leases;
    executor =
        new ScheduledThreadPoolExecutor(
            1,
            task -> {
              Thread thread = new Thread(task, "redlock-renewer");
              thread.setDaemon(true);
              return thread;
            });
    executor.setRemoveOnCancelPolicy(true);
    executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
  }

  /** Starts renewing {@code lease} with {@code ttlMillis} each time. */
  Renewal start(Lease lease, long ttlMillis) {
    Renewal renewal = new Renewal(lease, ttlMillis);
    renewal.scheduleNext();
    return renewal;
  }

  void close(long timeoutNanos) {
    executor.shutdownNow();
    try {
      if (!executor.awaitTermination(timeoutNanos, TimeUnit.NANOSECONDS)) {
        log.debug("the renewal thread did not stop in time");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The renewal of one lease. */
  final class Renewal {
    private final Lease lease;
    private final long ttlMillis;
    private final long thirdNanos;
    private volatile boolean cancelled;
    private ScheduledFuture<?> next; // guarded by this

    private Renewal(Lease lease, long ttlMillis) {
      this.lease = lease;
      this.ttlMillis = ttlMillis;
      this.thirdNanos = TimeUnit.MILLISECONDS.toNanos(ttlMillis) / 3;
    }

    private synchronized void scheduleNext() {
      if (cancelled) {
        return;
      }
      long delay = Math.max(0, lease.remainingValidity().toNanos() - thirdNanos);
      try {
        next = executor.schedule(this::renew, delay, TimeUnit.NANOSECONDS);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        // RedLock is closing: the lease will be released or expire.
      }
    }

    private void renew() {
      if (cancelled || lease.isReleased()) {
        return;
      }
      if (!lease.isValid()) {
        leases.expired(lease);
        return;
      }
      if (leases.extend(lease, java.time.Duration.ofMillis(ttlMillis))) {
        scheduleNext();
      } else if (!cancelled && !lease.isReleased()) {
        leases.expired(lease); // no-op if the failed extend already lost it
      }
    }

    /** Stops renewing; a renewal already running finishes. */
    void cancel() {
      cancelled = true;
      synchronized (this) {
        if (next != null) {
          next.cancel(false);
        }
      }
    }
  }
}
