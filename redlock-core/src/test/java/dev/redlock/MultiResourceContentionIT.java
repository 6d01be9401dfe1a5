package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Overlapping sets under contention: several threads, each with its own RedLock (as separate
 * processes would have), take random sets of two or three of six resources (and sometimes one
 * resource alone). Every lease's validity window is recorded per resource on one monotonic clock,
 * with the fencing token it got for that resource. Per resource no two windows may overlap, tokens
 * must rise in the order of the windows, and a read-modify-write counter per resource guarded only
 * by the lock must lose no update. {@link Checker} is the overlap checker; {@link
 * #theCheckerSeesAnOverlapAndAFallingToken()} shows it can see what it looks for.
 */
class MultiResourceContentionIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final int THREADS = 6;
  private static final int RESOURCES = 6;
  private static final Duration RUN = Duration.ofSeconds(3);

  /** One lease's hold of one resource: from the grant until the work ended (or the validity). */
  record Window(String resource, long from, long to, long token, int worker) {}

  /** Counts, per resource, the windows that overlap the one before and the tokens that fell. */
  static final class Checker {
    final Map<String, Integer> overlaps = new TreeMap<>();
    final Map<String, Integer> fallingTokens = new TreeMap<>();
    final Map<String, Integer> holds = new TreeMap<>();

    Checker(List<Window> windows) {
      Map<String, List<Window>> byResource = new TreeMap<>();
      for (Window window : windows) {
        byResource.computeIfAbsent(window.resource(), r -> new ArrayList<>()).add(window);
      }
      byResource.forEach(
          (resource, list) -> {
            list.sort(Comparator.comparingLong(Window::from));
            int overlapping = 0;
            int falling = 0;
            long reach = Long.MIN_VALUE; // the latest end of any earlier window
            for (int i = 0; i < list.size(); i++) {
              Window window = list.get(i);
              if (i > 0 && window.from() - reach < 0) {
                overlapping++;
              }
              if (i > 0 && window.token() <= list.get(i - 1).token()) {
                falling++;
              }
              reach = i == 0 || window.to() - reach > 0 ? window.to() : reach;
            }
            overlaps.put(resource, overlapping);
            fallingTokens.put(resource, falling);
            holds.put(resource, list.size());
          });
    }

    int totalOverlaps() {
      return overlaps.values().stream().mapToInt(Integer::intValue).sum();
    }

    int totalFallingTokens() {
      return fallingTokens.values().stream().mapToInt(Integer::intValue).sum();
    }
  }

  @Test
  void theCheckerSeesAnOverlapAndAFallingToken() {
    Checker clean =
        new Checker(
            List.of(
                new Window("a", 0, 10, 1, 0),
                new Window("b", 5, 20, 2, 1), // another resource: no overlap with "a"
                new Window("a", 11, 20, 3, 1),
                new Window("a", 21, 30, 4, 0)));
    assertEquals(Map.of("a", 0, "b", 0), clean.overlaps);
    assertEquals(0, clean.totalFallingTokens());
    Checker broken =
        new Checker(
            List.of(
                new Window("a", 0, 100, 5, 0),
                new Window("a", 10, 20, 6, 1), // inside the first
                new Window("a", 30, 40, 2, 2), // inside the first too, and a lower token
                new Window("b", 0, 10, 1, 0)));
    assertEquals(Map.of("a", 2, "b", 0), broken.overlaps);
    assertEquals(Map.of("a", 1, "b", 0), broken.fallingTokens);
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {3, 5})
  void overlappingSetsNeverOverlapOnAnyResourceAndTheirTokensRise(int n, RedisCluster cluster)
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
    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
    AtomicInteger sets = new AtomicInteger();
    AtomicInteger unavailable = new AtomicInteger();
    AtomicInteger lost = new AtomicInteger();
    int[] counters = new int[RESOURCES]; // deliberately unsynchronized: only the locks protect them
    AtomicInteger[] granted = new AtomicInteger[RESOURCES];
    for (int r = 0; r < RESOURCES; r++) {
      granted[r] = new AtomicInteger();
    }
    CountDownLatch start = new CountDownLatch(1);
    long end = System.nanoTime() + RUN.toNanos();
    List<Thread> workers = new ArrayList<>();
    for (int w = 0; w < THREADS; w++) {
      int worker = w;
      RedLock redlock = clients.get(w);
      Thread thread =
          new Thread(
              () -> {
                try {
                  start.await();
                  while (System.nanoTime() - end < 0) {
                    List<Integer> picked = pick();
                    List<String> names = picked.stream().map(r -> "r" + r).toList();
                    Lease lease;
                    try {
                      lease =
                          names.size() == 1
                              ? redlock.acquire(
                                  names.get(0), Duration.ofSeconds(2), Duration.ofSeconds(5))
                              : redlock.acquireAll(
                                  names, Duration.ofSeconds(2), Duration.ofSeconds(5));
                    } catch (LockTakenException e) {
                      continue;
                    } catch (QuorumUnavailableException e) {
                      unavailable.incrementAndGet(); // a stall of this loaded machine's masters
                      continue;
                    }
                    long from = System.nanoTime();
                    long validUntil = from + lease.remainingValidity().toNanos();
                    Map<String, Long> tokens;
                    try {
                      tokens = lease.fencingTokens();
                    } catch (QuorumUnavailableException e) {
                      unavailable.incrementAndGet(); // no token: the hold is not used
                      lease.close();
                      continue;
                    } catch (LeaseLostException e) {
                      lost.incrementAndGet(); // another holder took a key: asserted below
                      lease.close();
                      continue;
                    }
                    int[] read = new int[picked.size()];
                    for (int i = 0; i < read.length; i++) {
                      read[i] = counters[picked.get(i)];
                    }
                    Thread.yield(); // widen the read-modify-write window
                    if (ThreadLocalRandom.current().nextInt(4) == 0) {
                      TimeUnit.MICROSECONDS.sleep(200); // the work under the lock
                    }
                    for (int i = 0; i < read.length; i++) {
                      counters[picked.get(i)] = read[i] + 1;
                      granted[picked.get(i)].incrementAndGet();
                    }
                    long to = Math.min(System.nanoTime(), validUntil);
                    if (!lease.isValid()) {
                      throw new AssertionError("the work outlived the lease: a test bug");
                    }
                    for (String name : names) {
                      windows.add(new Window(name, from, to, tokens.get(name), worker));
                    }
                    if (names.size() > 1) {
                      sets.incrementAndGet();
                    }
                    lease.close();
                  }
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                } catch (RuntimeException | Error e) {
                  failures.add(e);
                }
              },
              "contender-" + w);
      workers.add(thread);
      thread.start();
    }
    start.countDown();
    for (Thread thread : workers) {
      thread.join(RUN.toMillis() + 30_000);
      assertTrue(!thread.isAlive(), thread.getName() + " finished");
    }
    clients.forEach(RedLock::close);

    Checker checker = new Checker(new ArrayList<>(windows));
    System.out.printf(
        "N=%d: %d holds (%d by sets) per resource %s, overlaps %s, falling tokens %s,"
            + " %d rounds without a quorum in time%n",
        n,
        windows.size(),
        sets.get(),
        checker.holds,
        checker.overlaps,
        checker.fallingTokens,
        unavailable.get());
    assertEquals(0, checker.totalOverlaps(), "validity windows overlap: " + checker.overlaps);
    assertEquals(0, checker.totalFallingTokens(), "tokens fell: " + checker.fallingTokens);
    assertEquals(List.of(), List.copyOf(failures), "no worker failed");
    assertEquals(0, lost.get(), "leases lost before their tokens were stored");
    assertTrue(sets.get() > 20, "enough set leases to mean something: " + sets.get());
    for (int r = 0; r < RESOURCES; r++) {
      assertEquals(granted[r].get(), counters[r], "lost updates on r" + r);
    }
    for (int i = 0; i < n; i++) {
      int node = i;
      RedLocks.eventually(
          "every key released on node " + i, () -> RedLocks.userKeys(cluster, node).isEmpty());
    }
  }

  /** One resource a quarter of the time, else two or three distinct ones, in random order. */
  private static List<Integer> pick() {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    int size = random.nextInt(4) == 0 ? 1 : 2 + random.nextInt(2);
    List<Integer> all = new ArrayList<>();
    for (int r = 0; r < RESOURCES; r++) {
      all.add(r);
    }
    Collections.shuffle(all, random);
    return all.subList(0, size);
  }
}
