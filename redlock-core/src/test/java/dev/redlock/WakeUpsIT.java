package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Wake-ups on five real masters: a release wakes a waiter of another RedLock long before its retry
 * timer would; a release no one hears still ends the wait by the timer; the subscriber connections
 * recover from a reset and ride out a paused master; nothing stays subscribed when no one waits;
 * and a releaser that wants the lock again lets the waiters have it. The same for asynchronous
 * waiters (which leave the group when granted or cancelled) and for multi-resource leases (a set's
 * release wakes the waiters of its resources; a waiter on a set is woken by a release of any of
 * them; a failed set acquire's cleanup deletes what it took).
 */
class WakeUpsIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  /** The waiter's retry timer: a pause of 1 to 3 s between rounds. */
  private static final Duration SLOW_TIMER = Duration.ofSeconds(2);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(200);

  private static final Duration TTL = Duration.ofSeconds(10);

  private final List<AutoCloseable> closing = new ArrayList<>();
  private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
  private final PrintStream originalErr = System.err;
  private ExecutorService threads;

  @BeforeEach
  void captureTheLog() {
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void closeEverything() throws Exception {
    threads.shutdownNow();
    for (AutoCloseable c : closing) {
      c.close();
    }
    System.setErr(originalErr);
    System.err.print(captured.toString(StandardCharsets.UTF_8));
  }

  private RedLock redlock(RedisCluster cluster, Duration retryDelay) {
    RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(NODE_TIMEOUT)
                .retryDelay(retryDelay)
                .build());
    closing.add(redlock);
    return redlock;
  }

  private static long subscribers(RedisProcess node, String resource) {
    List<?> answer = (List<?>) node.admin().command("PUBSUB", "NUMSUB", "redlock:wake:" + resource);
    return (Long) answer.get(1);
  }

  /**
   * Waits until {@code count} clients are subscribed to the resource's channel on the masters whose
   * notices its waiters hear, its gate and the next master by name (none on the others); with 0, on
   * no master.
   */
  private static void awaitSubscribers(RedisCluster cluster, String resource, long count) {
    RedLocks.eventually(
        count + " subscriber(s) of " + resource + " on two masters",
        () -> {
          long heard = cluster.nodes().stream().filter(n -> subscribers(n, resource) > 0).count();
          boolean exact =
              cluster.nodes().stream()
                  .allMatch(
                      n -> subscribers(n, resource) == 0 || subscribers(n, resource) == count);
          return count == 0 ? heard == 0 : heard == 2 && exact;
        });
  }

  private Future<Lease> waitFor(RedLock redlock, String resource) {
    return threads.submit(() -> redlock.acquire(resource, TTL, Duration.ofSeconds(30)));
  }

  private void assertNothingWarned() {
    String log = captured.toString(StandardCharsets.UTF_8);
    assertFalse(log.contains("WARN") || log.contains("ERROR"), log);
  }

  /** How long after {@code release} the waiter held the lease, in nanoseconds. */
  private static long handOffNanos(Lease held, Future<Lease> waiting) throws Exception {
    long released = System.nanoTime();
    held.close();
    Lease got = waiting.get(30, TimeUnit.SECONDS);
    long took = System.nanoTime() - released;
    got.close();
    return took;
  }

  @Test
  void aReleaseWakesAWaiterOfAnotherRedLockLongBeforeItsTimer(RedisCluster cluster)
      throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER);
    RedLock waiter = redlock(cluster, SLOW_TIMER);
    Lease held = holder.tryAcquire("wake", TTL).orElseThrow();
    Future<Lease> waiting = waitFor(waiter, "wake");
    awaitSubscribers(cluster, "wake", 1);

    long took = handOffNanos(held, waiting);

    // The timer's shortest pause is half the retry delay: the notice must beat it tenfold.
    long shortestTimer = SLOW_TIMER.toNanos() / 2;
    assertTrue(
        took * 10 < shortestTimer,
        "woken after " + took / 1_000_000 + " ms, not well before the timer's " + shortestTimer);
    assertNothingWarned();
  }

  @Test
  void aReleaseNoOneHearsStillEndsTheWaitByTheTimer(RedisCluster cluster) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER);
    RedLock waiter = redlock(cluster, Duration.ofMillis(200));
    holder.tryAcquire("lost", TTL).orElseThrow();
    Future<Lease> waiting = waitFor(waiter, "lost");
    awaitSubscribers(cluster, "lost", 1);

    long removed = System.nanoTime();
    for (RedisProcess node : cluster.nodes()) {
      node.admin().command("DEL", "lost"); // the lock is gone, and no notice was published
    }
    Lease got = waiting.get(30, TimeUnit.SECONDS);
    long took = System.nanoTime() - removed;
    got.close();
    assertTrue(took < TimeUnit.SECONDS.toNanos(5), "acquired after " + took / 1_000_000 + " ms");
    assertNothingWarned();
  }

  @Test
  void aResetSubscriberConnectionRecovers(RedisCluster cluster) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER);
    RedLock waiter = redlock(cluster, SLOW_TIMER);
    Lease held = holder.tryAcquire("reset", TTL).orElseThrow();
    Future<Lease> waiting = waitFor(waiter, "reset");
    awaitSubscribers(cluster, "reset", 1);

    for (RedisProcess node : cluster.nodes()) {
      node.admin().command("CLIENT", "KILL", "TYPE", "pubsub");
    }
    awaitSubscribers(cluster, "reset", 1); // subscribed again on a new connection
    long took = handOffNanos(held, waiting);

    assertTrue(
        took * 10 < SLOW_TIMER.toNanos() / 2,
        "woken after " + took / 1_000_000 + " ms, not well before the timer");
  }

  @Test
  void aPausedMasterDoesNotKeepTheWaiterAsleep(RedisCluster cluster) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER);
    RedLock waiter = redlock(cluster, SLOW_TIMER);
    Lease held = holder.tryAcquire("paused", TTL).orElseThrow();
    Future<Lease> waiting = waitFor(waiter, "paused");
    awaitSubscribers(cluster, "paused", 1);

    RedisProcess paused = cluster.node(0);
    paused.pause(); // partitioned while the client waits: neither its notice nor its vote comes
    try {
      long took = handOffNanos(held, waiting);
      // Woken by the others' notices. Its round may still wait one node timeout for the paused
      // master: a round that reached two masters before the release did is split 2 to 2, and only
      // the paused master could still decide it. The shortest timer is 1 s.
      assertTrue(
          took < NODE_TIMEOUT.toNanos() + SLOW_TIMER.toNanos() / 10,
          "woken after " + took / 1_000_000 + " ms, not well before the timer");
    } finally {
      paused.resume();
    }
    // Back: the master's subscription is dropped with the others once no one waits.
    awaitSubscribers(cluster, "paused", 0);
  }

  @Test
  void nothingStaysSubscribedWhenNoOneWaits(RedisCluster cluster) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER);
    RedLock waiter = redlock(cluster, SLOW_TIMER);
    for (int i = 0; i < 20; i++) {
      String resource = "many-" + i;
      Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
      Future<Lease> waiting = waitFor(waiter, resource);
      awaitSubscribers(cluster, resource, 1);
      handOffNanos(held, waiting);
    }
    RedLocks.eventually(
        "no wake-up channel left on any master",
        () ->
            cluster.nodes().stream()
                .allMatch(
                    n ->
                        ((List<?>) n.admin().command("PUBSUB", "CHANNELS", "redlock:wake:*"))
                            .isEmpty()));
    assertNothingWarned();
  }

  @Test
  void aReleaserThatAsksAgainAtOnceLetsTheWaiterGoFirst(RedisCluster cluster) throws Exception {
    releaserAsksAgainAtOnce(cluster);
  }

  /** The waiter must go first in at least 14 of 20 hand-offs (see docs/fairness.md). */
  private void releaserAsksAgainAtOnce(RedisCluster cluster) throws Exception {
    RedLock releaser = redlock(cluster, Duration.ofMillis(50));
    RedLock waiter = redlock(cluster, Duration.ofMillis(50));
    int rounds = 20;
    int waiterFirst = 0;
    for (int i = 0; i < rounds; i++) {
      AtomicInteger order = new AtomicInteger();
      int[] waiterWas = new int[1];
      Lease held = releaser.acquire("yield", TTL, Duration.ofSeconds(10));
      Future<Lease> waiting =
          threads.submit(
              () -> {
                Lease got = waiter.acquire("yield", TTL, Duration.ofSeconds(30));
                waiterWas[0] = order.incrementAndGet();
                TimeUnit.MILLISECONDS.sleep(5); // the work under the lock
                got.close();
                return got;
              });
      awaitSubscribers(cluster, "yield", 1);
      held.close();
      try (Lease again = releaser.acquire("yield", TTL, Duration.ofSeconds(30))) {
        order.incrementAndGet();
      }
      waiting.get(30, TimeUnit.SECONDS);
      if (waiterWas[0] == 1) {
        waiterFirst++;
      }
    }
    System.out.println("the waiter went first in " + waiterFirst + " of " + rounds);
    assertTrue(
        waiterFirst * 10 >= rounds * 7,
        "the waiter went first in only " + waiterFirst + " of " + rounds + " hand-offs");
    assertNothingWarned();
  }

  @Test
  void aReleaserThatWantsTheLockAgainLetsTheWaitersHaveIt(RedisCluster cluster) throws Exception {
    int contenders = 4;
    List<RedLock> redlocks = new ArrayList<>();
    for (int i = 0; i < contenders; i++) {
      redlocks.add(redlock(cluster, Duration.ofMillis(50)));
    }
    int[] grants = new int[contenders];
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch start = new CountDownLatch(1);
    List<CompletableFuture<Void>> done = new ArrayList<>();
    for (int i = 0; i < contenders; i++) {
      int me = i;
      done.add(
          CompletableFuture.runAsync(
              () -> {
                try {
                  start.await();
                  while (!stop.get()) {
                    try (Lease lease =
                        redlocks.get(me).acquire("fair", TTL, Duration.ofSeconds(10))) {
                      grants[me]++;
                      TimeUnit.MILLISECONDS.sleep(1); // the work under the lock
                    } // and wants it again at once
                  }
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              threads));
    }
    start.countDown();
    RedLocks.eventually("enough grants", () -> Arrays.stream(grants).sum() > 400);
    stop.set(true);
    CompletableFuture.allOf(done.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
    int fewest = Arrays.stream(grants).min().orElseThrow();
    int most = Arrays.stream(grants).max().orElseThrow();
    System.out.println("grants per contender: " + Arrays.toString(grants));
    assertTrue(fewest * 2 >= most, "a contender starved: " + Arrays.toString(grants));
  }

  /** How long after {@code release} the lease came, in nanoseconds. */
  private static long handOffNanos(Lease held, CompletableFuture<Lease> waiting) throws Exception {
    long released = System.nanoTime();
    held.close();
    Lease got = waiting.get(30, TimeUnit.SECONDS);
    long took = System.nanoTime() - released;
    got.close();
    return took;
  }

  private static void assertWellBeforeTheTimer(long took) {
    // The timer's shortest pause is half the retry delay: the notice must beat it tenfold.
    long shortestTimer = SLOW_TIMER.toNanos() / 2;
    assertTrue(
        took * 10 < shortestTimer,
        "woken after " + took / 1_000_000 + " ms, not well before the timer's " + shortestTimer);
  }

  @Test
  void aReleaseWakesAnAsyncWaiterOfAnotherRedLockLongBeforeItsTimer(RedisCluster cluster)
      throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER);
    RedLock waiter = redlock(cluster, SLOW_TIMER);
    Lease held = holder.tryAcquire("async-wake", TTL).orElseThrow();
    CompletableFuture<Lease> waiting =
        waiter.acquireAsync("async-wake", TTL, Duration.ofSeconds(30));
    awaitSubscribers(cluster, "async-wake", 1);

    assertWellBeforeTheTimer(handOffNanos(held, waiting));
    awaitSubscribers(cluster, "async-wake", 0); // granted: left the group
    assertNothingWarned();
  }

  @Test
  void aCancelledAsyncWaiterLeavesTheGroup(RedisCluster cluster) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER);
    RedLock waiter = redlock(cluster, SLOW_TIMER);
    try (Lease held = holder.tryAcquire("async-cancel", TTL).orElseThrow()) {
      CompletableFuture<Lease> waiting =
          waiter.acquireAsync("async-cancel", TTL, Duration.ofSeconds(30));
      awaitSubscribers(cluster, "async-cancel", 1);
      waiting.cancel(true);
      awaitSubscribers(cluster, "async-cancel", 0);
      // Timed out too: the group is left, and the next waiter subscribes afresh.
      CompletableFuture<Lease> short_ =
          waiter.acquireAsync("async-cancel", TTL, Duration.ofMillis(300));
      awaitSubscribers(cluster, "async-cancel", 1);
      assertThrows(ExecutionException.class, () -> short_.get(30, TimeUnit.SECONDS));
      awaitSubscribers(cluster, "async-cancel", 0);
    }
    assertNothingWarned();
  }

  @Test
  void aSetsReleaseWakesAWaiterOnOneOfItsResources(RedisCluster cluster) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER);
    RedLock waiter = redlock(cluster, SLOW_TIMER);
    Lease held = holder.tryAcquireAll(List.of("set-a", "set-b"), TTL).orElseThrow();
    Future<Lease> waiting = waitFor(waiter, "set-b");
    awaitSubscribers(cluster, "set-b", 1);

    assertWellBeforeTheTimer(handOffNanos(held, waiting));
    assertNothingWarned();
  }

  @Test
  void aReleaseWakesAWaiterOnASetThatContainsIt(RedisCluster cluster) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER);
    RedLock waiter = redlock(cluster, SLOW_TIMER);
    Lease held = holder.tryAcquire("member-c", TTL).orElseThrow();
    Future<Lease> waiting =
        threads.submit(
            () -> waiter.acquireAll(List.of("member-c", "member-d"), TTL, Duration.ofSeconds(30)));
    awaitSubscribers(cluster, "member-c", 1);
    awaitSubscribers(cluster, "member-d", 1);

    assertWellBeforeTheTimer(handOffNanos(held, waiting));
    awaitSubscribers(cluster, "member-c", 0);
    awaitSubscribers(cluster, "member-d", 0);
    assertNothingWarned();
  }

  @Test
  void aFailedSetAcquireReleasesWhatItTook(RedisCluster cluster) throws Exception {
    RedLock redlock = redlock(cluster, SLOW_TIMER);
    List<RedisProcess> nodes = cluster.nodes();
    for (int i = 0; i < 3; i++) {
      nodes.get(i).admin().command("SET", "quiet-b", "someone-else", "PX", "30000");
    }
    // Taken on masters 3 and 4 only: refused, and cleaned up there at once (quietly).
    assertTrue(redlock.tryAcquireAll(List.of("quiet-a", "quiet-b"), TTL).isEmpty());
    RedLocks.eventually(
        "the failed set acquire's keys deleted on masters 3 and 4",
        () ->
            nodes.subList(3, 5).stream()
                .allMatch(
                    n ->
                        Long.valueOf(0).equals(n.admin().command("EXISTS", "quiet-a", "quiet-b"))));
  }
}
