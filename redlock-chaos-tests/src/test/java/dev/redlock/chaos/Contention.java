package dev.redlock.chaos;

import dev.redlock.Lease;
import dev.redlock.LockTakenException;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Clients contending for one resource until a deadline, one thread and one RedLock each: every
 * lease's validity window, and a counter only the lock protects (read, a pause, then written), so a
 * broken lock shows as overlapping windows or as lost increments.
 */
final class Contention {

  private final List<LeaseRecord> leases = Collections.synchronizedList(new ArrayList<>());
  private final AtomicInteger counter = new AtomicInteger();
  private final AtomicInteger increments = new AtomicInteger();
  private final AtomicInteger taken = new AtomicInteger();
  private final AtomicInteger unavailable = new AtomicInteger();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final List<Thread> threads = new ArrayList<>();

  private Contention() {}

  /**
   * Starts one thread per client, acquiring {@code resource} for {@code ttl} until {@code stopAt}.
   */
  static Contention start(List<RedLock> clients, String resource, Duration ttl, long stopAt) {
    Contention contention = new Contention();
    for (int c = 0; c < clients.size(); c++) {
      RedLock redlock = clients.get(c);
      String client = "client-" + c;
      Thread thread =
          new Thread(() -> contention.run(client, redlock, resource, ttl, stopAt), client);
      thread.setDaemon(true);
      contention.threads.add(thread);
    }
    contention.threads.forEach(Thread::start);
    return contention;
  }

  private void run(String client, RedLock redlock, String resource, Duration ttl, long stopAt) {
    try {
      while (System.nanoTime() - stopAt < 0) {
        Lease lease;
        try {
          lease = redlock.acquire(resource, ttl, Duration.ofMillis(300));
        } catch (LockTakenException e) {
          taken.incrementAndGet();
          continue;
        } catch (QuorumUnavailableException e) {
          unavailable.incrementAndGet();
          continue;
        }
        long acquiredAt = System.nanoTime();
        long validUntil = acquiredAt + lease.remainingValidity().toNanos();
        int seen = counter.get();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1)); // widen the race
        if (lease.isValid()) {
          counter.set(seen + 1);
          increments.incrementAndGet();
        }
        long releasedAt = System.nanoTime();
        lease.release();
        leases.add(
            new LeaseRecord(client, "contended", acquiredAt, Math.min(releasedAt, validUntil)));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException | Error e) {
      failure.compareAndSet(null, e);
    }
  }

  /**
   * Waits for every client to stop.
   *
   * @throws AssertionError if one is still running after {@code timeout}, or one failed
   */
  void join(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (Thread thread : threads) {
      thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      if (thread.isAlive()) {
        throw new AssertionError(thread.getName() + " did not stop");
      }
    }
    if (failure.get() != null) {
      throw new AssertionError("a client failed", failure.get());
    }
  }

  List<LeaseRecord> leases() {
    synchronized (leases) {
      return List.copyOf(leases);
    }
  }

  /**
   * Increments that were confirmed, and the counter's final value: equal unless updates were lost.
   */
  int increments() {
    return increments.get();
  }

  int counter() {
    return counter.get();
  }

  String summary() {
    return leases.size()
        + " leases, "
        + taken.get()
        + " taken, "
        + unavailable.get()
        + " unavailable, "
        + increments.get()
        + " increments, counter "
        + counter.get();
  }
}
