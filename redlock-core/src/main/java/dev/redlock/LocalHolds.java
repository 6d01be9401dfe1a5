package dev.redlock;

import dev.redlock.internal.lease.Renewer;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The process-local side of every {@link LeaseLock} of one RedLock, by name: two lock objects on
 * the same resource (or the same set of resources) share one {@link Hold}, so they are one lock in
 * this process, reentrant for the holding thread, as Redisson's locks by name are. A hold is kept
 * only while a thread holds it or waits for it: the table is bounded by the locks held and waited
 * for, never by the names ever used.
 */
final class LocalHolds {

  private final ConcurrentHashMap<ByteBuffer, Hold> holds = new ConcurrentHashMap<>();

  /** One lock's state in this process, shared by every {@link LeaseLock} on its name. */
  static final class Hold {
    final ReentrantLock local = new ReentrantLock();
    private int users; // changed only inside the table's compute: holds taken plus waiters
    Lease lease; // guarded by local: set while held
    Renewer.Renewal renewal; // guarded by local: set while held
  }

  /**
   * The hold of {@code key}, made if there is none, counting the caller as a user until it calls
   * {@link #leave} once: a thread counts once per hold it takes and once while it tries.
   */
  Hold enter(byte[] key) {
    return holds.compute(
        ByteBuffer.wrap(key),
        (name, hold) -> {
          Hold entered = hold == null ? new Hold() : hold;
          entered.users++;
          return entered;
        });
  }

  /** Ends one use of {@code key}'s hold; the last one removes it from the table. */
  void leave(byte[] key) {
    holds.computeIfPresent(ByteBuffer.wrap(key), (name, hold) -> --hold.users == 0 ? null : hold);
  }

  /** The hold of {@code key} if a thread holds it or waits for it, else null. */
  Hold find(byte[] key) {
    return holds.get(ByteBuffer.wrap(key));
  }

  /** How many names have a hold: for tests. */
  int size() {
    return holds.size();
  }
}
