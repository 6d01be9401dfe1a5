package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Many threads, each with its own RedLock (as separate processes would have), contend for one
 * resource. Every lease's validity window is recorded on one monotonic clock; no two may overlap,
 * and a read-modify-write counter guarded by the lock must lose no update.
 */
class ContentionIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final int THREADS = 8;
  private static final Duration RUN = Duration.ofSeconds(3);

  record Window(long from, long to, int worker) {}

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {3, 5})
  void leasesOnOneResourceNeverOverlap(int n, RedisCluster cluster) throws Exception {
    try (VirtualThreads threads = new VirtualThreads()) {
      if (threads.virtual()) {
        contend(n, cluster, threads, Duration.ofSeconds(1)); // warm-up: classes load and init
      }
      threads.record();
      contend(n, cluster, threads, RUN);
      assertEquals(List.of(), threads.pinnedInLibrary(), "virtual threads pinned in the library");
    }
  }

  private void contend(int n, RedisCluster cluster, VirtualThreads threads, Duration run)
      throws Exception {
    List<RedLock> clients = new ArrayList<>();
    for (int i = 0; i < THREADS; i++) {
      clients.add(
          RedLocks.admitted(
              RedLock.builder()
                  .nodes(cluster.uris().subList(0, n))
                  .nodeTimeout(Duration.ofMillis(200))
                  .retryDelay(Duration.ofMillis(5))
                  .build()));
    }
    ConcurrentLinkedQueue<Window> windows = new ConcurrentLinkedQueue<>();
    AtomicInteger failures = new AtomicInteger();
    int[] counter = {0}; // deliberately unsynchronized: only the lock protects it
    CountDownLatch start = new CountDownLatch(1);
    long end = System.nanoTime() + run.toNanos();
    List<Thread> workers = new ArrayList<>();
    for (int w = 0; w < THREADS; w++) {
      int worker = w;
      RedLock redlock = clients.get(w);
      Thread thread =
          threads
              .factory("contender-" + w)
              .newThread(
                  () -> {
                    try {
                      start.await();
                      while (System.nanoTime() - end < 0) {
                        Lease lease;
                        try {
                          lease =
                              redlock.acquire(
                                  "inventory", Duration.ofSeconds(2), Duration.ofSeconds(5));
                        } catch (LockTakenException e) {
                          continue;
                        }
                        long from = System.nanoTime();
                        long validUntil = from + lease.remainingValidity().toNanos();
                        int read = counter[0];
                        Thread.yield(); // widen the read-modify-write window
                        if (ThreadLocalRandom.current().nextInt(4) == 0) {
                          TimeUnit.MICROSECONDS.sleep(200); // the work under the lock
                        }
                        counter[0] = read + 1;
                        long to = Math.min(System.nanoTime(), validUntil);
                        if (!lease.isValid()) {
                          failures.incrementAndGet(); // the work outlived the lease: a test bug
                        }
                        windows.add(new Window(from, to, worker));
                        lease.close();
                      }
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    } catch (RuntimeException e) {
                      failures.incrementAndGet();
                      throw e;
                    }
                  });
      workers.add(thread);
      thread.start();
    }
    start.countDown();
    for (Thread thread : workers) {
      thread.join(run.toMillis() + 30_000);
      assertTrue(!thread.isAlive(), thread.getName() + " finished");
    }
    clients.forEach(RedLock::close);

    List<Window> sorted = new ArrayList<>(windows);
    sorted.sort(Comparator.comparingLong(Window::from));
    int overlaps = 0;
    for (int i = 1; i < sorted.size(); i++) {
      if (sorted.get(i).from() - sorted.get(i - 1).to() < 0) {
        overlaps++;
      }
    }
    long winners = sorted.stream().map(Window::worker).distinct().count();
    System.out.printf(
        "N=%d: %d acquisitions by %d of %d %s workers, %d overlaps, counter %d%n",
        n,
        sorted.size(),
        winners,
        THREADS,
        threads.virtual() ? "virtual" : "platform",
        overlaps,
        counter[0]);
    assertEquals(0, failures.get(), "no worker failed");
    assertTrue(sorted.size() > 50, "enough acquisitions to mean something: " + sorted.size());
    assertTrue(winners > 1, "the lock changed hands between workers");
    assertEquals(0, overlaps, "validity windows overlap");
    assertEquals(sorted.size(), counter[0], "lost updates");
  }
}
