package dev.redlock.readme;

// README: ApiTour
import dev.redlock.Lease;
import dev.redlock.LeaseLock;
import dev.redlock.LeaseLostException;
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

class ApiTour {
  interface Store { // what the lock protects: it refuses a token lower than one it has seen
    void write(String what, long fencingToken);
  }

  static RedLock create(List<String> nodes) { // nodes: e.g. List.of("redis://10.0.0.1:6379", ...)
    return RedLock.builder()
        .nodes(nodes) // independent masters, 5 is the usual number
        .nodeTimeout(Duration.ofMillis(50)) // per master and reply; below every TTL
        .build(); // one per process; thread-safe; close() at shutdown
  }

  static void leases(RedLock redlock, Store store, List<String> batches)
      throws InterruptedException {
    // One round: empty if someone else holds it.
    Optional<Lease> maybe = redlock.tryAcquire("orders:42", Duration.ofSeconds(10));
    maybe.ifPresent(Lease::close);

    // Retry with random jitter for up to 3 s; throws LockTakenException (held by others) or
    // QuorumUnavailableException (too few masters answered), each carrying every master's answer.
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
  }

  static void sets(RedLock redlock, Store store) throws InterruptedException {
    // All or nothing over up to 64 resources, in any order: one lease with one fencing token,
    // above every earlier token of each resource in the set (fencingToken(r) gives it for each).
    // tryAcquireAll, and withLock, callWithLock and newLock given a collection, take sets too.
    List<String> both = List.of("stock:9", "cart:3");
    try (Lease lease = redlock.acquireAll(both, Duration.ofSeconds(10), Duration.ofSeconds(3))) {
      store.write("stock 9", lease.fencingToken("stock:9")); // extend, release: every key
    }
  }

  static CompletableFuture<Void> async(RedLock redlock, Executor pool, Consumer<Lease> work) {
    // No thread waits for the lock; cancel() stops the wait and releases what it was granted.
    // The future completes on the library's event thread: hand blocking work to your executor.
    return redlock
        .acquireAsync("orders:42", Duration.ofSeconds(10), Duration.ofSeconds(3))
        .thenCompose(
            lease ->
                CompletableFuture.runAsync(() -> work.accept(lease), pool)
                    .whenComplete((done, failed) -> lease.releaseAsync()));
  }

  static void lock(RedLock redlock, Store store) {
    // A java.util.concurrent.locks.Lock, reentrant, its lease renewed while held:
    LeaseLock lock = redlock.newLock("orders:42", Duration.ofSeconds(10));
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
  }
}
// end README: ApiTour
