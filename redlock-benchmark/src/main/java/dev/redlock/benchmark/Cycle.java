package dev.redlock.benchmark;

import java.io.IOException;

/**
 * One acquire+release on a new key, as one client of the benchmark does it on one thread: the unit
 * its latency and throughput rows time. Not thread-safe unless said: each measuring thread gets its
 * own from {@link PerThread}.
 */
@FunctionalInterface
interface Cycle {

  /**
   * Acquires {@code key} and, if granted, releases it (the token row also reads the lease's fencing
   * token in between).
   *
   * @return whether the cycle succeeded: the lock was granted (and its token stored, where read)
   * @throws IOException if the client cannot talk to a master at all (the floor's sockets)
   */
  boolean run(String key) throws IOException, InterruptedException;

  /** What each thread of a measurement runs: thread {@code index} gets a cycle of its own. */
  @FunctionalInterface
  interface PerThread {
    Cycle forThread(int index) throws IOException;
  }
}
