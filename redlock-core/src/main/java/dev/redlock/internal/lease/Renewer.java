package dev.redlock.internal.lease;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Extends leases held by the API's {@code withLock} and {@code LeaseLock} before they run low: when
 * a third of the TTL is left, by a quorum extend.
 *
 * <p>One daemon thread ({@code redlock-renewer}) schedules the renewals and never blocks: each
 * extend round is sent and its result arrives later (when a quorum has answered, or at the node
 * timeout), so a thousand leases due together are renewed together rather than in turn.
 *
 * <p>An extend that reaches no quorum is tried again after a random pause (uniform in [0.5, 1.5)
 * times the retry delay) for as long as the lease is valid: a blip on a majority costs a retry, not
 * the lease. The lease is lost only when a majority answers that the key is gone or another
 * token's, or when its validity runs out; an expired lease is never extended. Renewals stop when
 * the lease is released.
 */
public final class Renewer {

  private static final Logger log = LoggerFactory.getLogger(Renewer.class);

  private final Leases leases;
  private final long retryDelayNanos;
  private final ScheduledExecutorService timer;
  private final Jitter jitter;
  private final AtomicInteger inFlight = new AtomicInteger(); // extend rounds awaiting answers

  Renewer(Leases leases, long retryDelayNanos, Timing timing) {
    this.leases = leases;
    this.retryDelayNanos = retryDelayNanos;
    this.timer = timing.timers().start("redlock-renewer", false);
    this.jitter = timing.jitter();
  }

  /** Starts renewing {@code lease} with {@code ttlMillis} each time. */
  Renewal start(Grant lease, long ttlMillis) {
    Renewal renewal = new Renewal(lease, ttlMillis);
    renewal.renewWhenDue();
    return renewal;
  }

  /** How many renewal rounds have been sent and not yet decided. */
  int inFlight() {
    return inFlight.get();
  }

  void close(long timeoutNanos) {
    timer.shutdownNow();
    try {
      if (!timer.awaitTermination(timeoutNanos, TimeUnit.NANOSECONDS)) {
        log.debug("the renewal thread did not stop in time");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The renewal of one lease, until it is cancelled. */
  public final class Renewal {
    private final Grant lease;
    private final long ttlMillis;
    private final long thirdNanos;
    private volatile boolean cancelled;
    private volatile ScheduledFuture<?> next;

    private Renewal(Grant lease, long ttlMillis) {
      this.lease = lease;
      this.ttlMillis = ttlMillis;
      this.thirdNanos = TimeUnit.MILLISECONDS.toNanos(ttlMillis) / 3;
    }

    private void renewWhenDue() {
      schedule(lease.remainingNanos() - thirdNanos);
    }

    private void retrySoon() {
      long pause = retryDelayNanos / 2 + jitter.nextLong(retryDelayNanos);
      // Never past the deadline: an expired lease is signalled as lost when it expires.
      schedule(Math.min(pause, lease.remainingNanos()));
    }

    private void schedule(long delayNanos) {
      if (cancelled) {
        return;
      }
      try {
        next = timer.schedule(this::renew, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        return; // RedLock is closing: the lease will be released or expire
      }
      if (cancelled) {
        next.cancel(false); // cancel() ran while this was being scheduled
      }
    }

    /** On the timer's thread; sends the extend and returns. */
    private void renew() {
      if (cancelled || lease.isReleased()) {
        return;
      }
      if (!lease.isValid()) {
        leases.expired(lease);
        return;
      }
      inFlight.incrementAndGet();
      leases
          .extendAsync(lease, ttlMillis, timer)
          .whenComplete((result, error) -> inFlight.decrementAndGet())
          .thenAccept(
              result -> {
                switch (result) {
                  case EXTENDED -> renewWhenDue();
                  case NOT_EXTENDED -> retrySoon();
                  case LOST -> {
                    // lost and signalled by Leases; nothing left to renew
                  }
                }
              });
    }

    /** Stops renewing; an extend already sent still completes, and changes nothing after. */
    public void cancel() {
      cancelled = true;
      ScheduledFuture<?> scheduled = next;
      if (scheduled != null) {
        scheduled.cancel(false);
      }
    }
  }
}
