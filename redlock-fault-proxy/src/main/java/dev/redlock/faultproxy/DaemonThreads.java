package dev.redlock.faultproxy;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Creates the named daemon threads of one {@link FaultProxyServer} and remembers the live ones, so
 * {@code close()} can wait for them. Thread-safe.
 */
final class DaemonThreads {
  private final String prefix;
  private final Set<Thread> live = ConcurrentHashMap.newKeySet();
  private final AtomicLong ids = new AtomicLong();

  DaemonThreads(String prefix) {
    this.prefix = prefix;
  }

  /** The prefix of every thread name this instance hands out. */
  String prefix() {
    return prefix;
  }

  /** Starts a daemon thread named {@code prefix + name}. */
  Thread start(String name, Runnable task) {
    Thread thread = create(name, task);
    thread.start();
    return thread;
  }

  /** A factory for executors, numbering threads {@code prefix + name + "-" + n}. */
  ThreadFactory factory(String name) {
    return task -> create(name + "-" + ids.incrementAndGet(), task);
  }

  /**
   * Waits up to {@code timeout} in total for every thread handed out so far to end.
   *
   * @return true if none is left alive
   */
  boolean awaitTermination(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (Thread thread : List.copyOf(live)) {
      long left = deadline - System.nanoTime();
      if (left > 0) {
        thread.join(Math.max(1, left / 1_000_000));
      }
    }
    return live.stream().noneMatch(Thread::isAlive);
  }

  private Thread create(String name, Runnable task) {
    Thread thread =
        new Thread(
            () -> {
              try {
                task.run();
              } finally {
                live.remove(Thread.currentThread());
              }
            },
            prefix + name);
    thread.setDaemon(true);
    live.add(thread);
    return thread;
  }
}
