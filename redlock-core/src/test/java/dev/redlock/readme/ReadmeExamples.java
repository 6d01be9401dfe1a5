package dev.redlock.readme;

import dev.redlock.Lease;
import dev.redlock.LeaseLock;
import dev.redlock.LeaseLostException;
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The README's code, compiled with the tests and run by {@link ReadmeExamplesIT} against real
 * masters: edit it here and copy it to the README, so the README never shows code that does not
 * compile. It uses only the public API (this package is outside {@code dev.redlock}).
 */
final class ReadmeExamples {

  /** What the examples write to: the store the lock protects. */
  interface Store {
    void write(String order, long fencingToken);
  }

  private ReadmeExamples() {}

  static void usage(List<String> nodes, Store store, List<String> batches) throws Exception {
    // README: Usage
    // nodes: five independent masters, e.g. List.of("redis://10.0.0.1:6379", ...)
    RedLock redlock =
        RedLock.builder()
            .nodes(nodes)
            .nodeTimeout(Duration.ofMillis(50))
            .build(); // one per process; thread-safe; close() at shutdown

    // Once, when the cluster is brand new (see "Restart guard"):
    redlock.admitFreshNodes();

    // One round: empty if someone else holds it.
    Optional<Lease> maybe = redlock.tryAcquire("orders:42", Duration.ofSeconds(10));
    maybe.ifPresent(Lease::close);

    // Retry with random jitter for up to 3 s; throws LockTakenException (held by others) or
    // QuorumUnavailableException (too many masters down), each carrying every master's answer.
    try (Lease lease =
        redlock.acquire("orders:42", Duration.ofSeconds(10), Duration.ofSeconds(3))) {
      store.write("order 42", lease.fencingToken()); // the store rejects lower tokens than it saw
      if (!lease.extend(Duration.ofSeconds(10)) && !lease.isValid()) {
        return; // lost: a majority said the key is gone (a false extend alone changes nothing)
      }
    } // close() = release() on every master, idempotent

    // Or let the library renew the lease while the body runs:
    redlock.withLock(
        "reports:daily",
        Duration.ofSeconds(30),
        Duration.ofSeconds(5),
        lease -> {
          for (String batch : batches) {
            lease.ensureValid(); // throws LeaseLostException once the lease is lost
            store.write(batch, lease.fencingToken());
          }
        });
    // end README: Usage
    redlock.close();
  }

  static void lockFacade(RedLock redlock, Store store) {
    // README: Lock
    LeaseLock lock = redlock.newLock("orders:42", Duration.ofSeconds(10)); // renewed while held
    lock.lock();
    try {
      lock.lease().ensureValid(); // before each step that must not overlap another holder's
      store.write("order 42", lock.lease().fencingToken());
    } finally {
      try {
        lock.unlock();
      } catch (LeaseLostException e) {
        // Lost while held: the lock is released, but the work may have overlapped another
        // holder's. Check or undo it here.
      }
    }
    // end README: Lock
  }
}
