package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The asynchronous API against real masters: the same results and failures as the blocking calls,
 * no thread per waiter, cancellation and close that leave nothing locked.
 */
class AsyncIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final long WAIT_SECONDS = 10; // every future here completes well within this

  /** Counts the rounds the listener hears of. */
  static class Rounds implements RedLockListener {
    final AtomicInteger acquired = new AtomicInteger();
    final AtomicInteger denied = new AtomicInteger();

    @Override
    public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
      acquired.incrementAndGet();
    }

    @Override
    public void denied(
        String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
      denied.incrementAndGet();
    }
  }

  private static RedLock redlock(RedisCluster cluster, int n, RedLockListener listener) {
    return redlock(cluster, n, listener, RedLocks.NODE_TIMEOUT);
  }

  private static RedLock redlock(
      RedisCluster cluster, int n, RedLockListener listener, Duration nodeTimeout) {
    return RedLocks.admitted(
        RedLock.builder()
            .nodes(cluster.uris().subList(0, n))
            .nodeTimeout(nodeTimeout)
            .retryDelay(Duration.ofMillis(50))
            .listener(listener)
            .build());
  }

  private static <T> T await(CompletableFuture<T> future) throws Exception {
    return future.get(WAIT_SECONDS, TimeUnit.SECONDS);
  }

  private static Throwable failure(CompletableFuture<?> future) {
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> future.get(WAIT_SECONDS, TimeUnit.SECONDS));
    return e.getCause();
  }

  /** The message up to the masters' answers, which vary with timing. */
  private static String withoutOutcomes(String message) {
    return message.substring(0, message.indexOf(": ["));
  }

  private static int[] all(int n) {
    return IntStream.range(0, n).toArray();
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {1, 3, 5})
  void acquireExtendAndReleaseWithoutBlockingAndLogNothingAtWarn(int n, RedisCluster cluster)
      throws Exception {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try (RedLock redlock = redlock(cluster, n, new Rounds())) {
      // Held first, so that the future completes only after the stage below is attached.
      Lease first = redlock.acquire("async:orders", Duration.ofSeconds(2), Duration.ofSeconds(1));
      AtomicReference<String> completedOn = new AtomicReference<>();
      CompletableFuture<Lease> pending =
          redlock
              .acquireAsync("async:orders", Duration.ofSeconds(2), Duration.ofSeconds(5))
              .whenComplete((l, e) -> completedOn.set(Thread.currentThread().getName()));
      first.release();
      Lease lease = await(pending);
      assertTrue(lease.isValid());
      assertTrue(
          completedOn.get().startsWith("redlock-events-"),
          "completed on the event thread, not an I/O thread: " + completedOn.get());
      // On a majority: woken by the first master's notice, the round can reach a master before the
      // release did, which then votes TAKEN (and the release deletes the old key there).
      int quorum = n / 2 + 1;
      int holding = 0;
      for (int i = 0; i < n; i++) {
        holding += cluster.node(i).admin().exists("async:orders") ? 1 : 0;
      }
      assertTrue(holding >= quorum, "key on " + holding + " of " + n + " masters");

      assertTrue(await(lease.extendAsync(Duration.ofSeconds(30))), "extended");
      int extended = 0;
      for (int i = 0; i < n; i++) {
        extended += cluster.node(i).admin().pttl("async:orders") > 20_000 ? 1 : 0;
      }
      assertTrue(extended >= quorum, "extended on " + extended + " of " + n + " masters");
      assertTrue(lease.remainingValidity().compareTo(Duration.ofSeconds(20)) > 0);

      CompletableFuture<Void> released = lease.releaseAsync();
      assertFalse(lease.isValid(), "released from the call on");
      await(released);
      RedLocks.eventually(
          "key gone from every master", () -> RedLocks.keysGone(cluster, "async:orders", all(n)));
      assertFalse(await(lease.extendAsync(TTL)), "a released lease is not extended");
      await(lease.releaseAsync()); // idempotent

      Optional<Lease> once = await(redlock.tryAcquireAsync("async:orders", TTL));
      assertTrue(once.isPresent());
      await(once.get().releaseAsync());
      assertEquals(0, redlock.leasesHeld());
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertFalse(log.contains("WARN") || log.contains("ERROR"), log);
  }

  @Test
  void contentionIsEmptyForTryAndTheBlockingExceptionForAcquire(RedisCluster cluster)
      throws Exception {
    // The subject is the exception's type and message, not a timeout: at the suite's 100 ms node
    // timeout a stall of two loaded cores turned the last round's answers into timeouts
    // (QuorumUnavailableException; seen in the flake check at load ~15). A second leaves the
    // masters' TAKEN answers the time to arrive.
    Duration patient = Duration.ofSeconds(1);
    try (RedLock holder = redlock(cluster, 5, new Rounds(), patient);
        RedLock other = redlock(cluster, 5, new Rounds(), patient)) {
      Lease held = holder.acquire("async:taken", TTL, Duration.ofSeconds(1));

      assertEquals(Optional.empty(), await(other.tryAcquireAsync("async:taken", TTL)));
      Throwable taken = failure(other.acquireAsync("async:taken", TTL, Duration.ofMillis(300)));
      LockTakenException blocking =
          assertThrows(
              LockTakenException.class,
              () -> other.acquire("async:taken", TTL, Duration.ofMillis(300)));
      assertInstanceOf(LockTakenException.class, taken);
      assertEquals(
          withoutOutcomes(blocking.getMessage()),
          withoutOutcomes(taken.getMessage()),
          "the blocking API's message");
      assertEquals(5, ((LockTakenException) taken).outcomes().size());
      assertThrows(
          IllegalArgumentException.class, () -> other.acquireAsync("x", TTL, Duration.ZERO));
      assertThrows(NullPointerException.class, () -> other.tryAcquireAsync(null, TTL));
      held.release();
      assertTrue(await(other.acquireAsync("async:taken", TTL, Duration.ofSeconds(1))).isValid());
    }
  }

  @Test
  void aMinorityOfMastersDownStillGrants(RedisCluster cluster) throws Exception {
    try (RedLock redlock = redlock(cluster, 5, new Rounds())) {
      cluster.node(3).stop();
      cluster.node(4).stop();
      Lease lease = await(redlock.acquireAsync("async:minority", TTL, Duration.ofSeconds(2)));
      assertTrue(lease.isValid());
      assertTrue(await(lease.extendAsync(TTL)));
      await(lease.releaseAsync());
      // The release completes once a majority answered: the third master's delete may still be on
      // its way.
      RedLocks.eventually(
          "released on the three masters up",
          () -> RedLocks.keysGone(cluster, "async:minority", 0, 1, 2));

      cluster.node(2).stop(); // now a majority is down
      Throwable unavailable = failure(redlock.tryAcquireAsync("async:minority", TTL));
      assertInstanceOf(QuorumUnavailableException.class, unavailable);
    }
  }

  @Test
  void closingFromAFuturesStageDoesNotWaitForItsOwnThread(RedisCluster cluster) throws Exception {
    RedLock redlock = redlock(cluster, 3, new Rounds());
    // The stage runs on the event thread, which the close would otherwise wait for: the grace of
    // the async rounds' close and then the grace of the event thread's, 1 s and more each.
    CompletableFuture<Long> closedIn =
        redlock
            .tryAcquireAsync("async:close-in-stage", TTL)
            .thenApply(
                granted -> {
                  long start = System.nanoTime();
                  redlock.close();
                  return System.nanoTime() - start;
                });
    long took = closedIn.get(30, TimeUnit.SECONDS);
    assertTrue(took < TimeUnit.MILLISECONDS.toNanos(500), "closed in " + took / 1_000_000 + " ms");
    assertThrows(IllegalStateException.class, () -> redlock.tryAcquire("async:after", TTL));
  }

  /** The names of the library's threads alive now, sorted: each starts with "redlock-". */
  private static List<String> libraryThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith("redlock-"))
        .map(Thread::getName)
        .sorted()
        .toList();
  }

  @Test
  void aThousandPendingAcquisitionsHoldNoThreadEach(RedisCluster cluster) throws Exception {
    Rounds rounds = new Rounds();
    try (RedLock holder = redlock(cluster, 3, new Rounds());
        RedLock waiting =
            RedLocks.admitted(
                RedLock.builder()
                    .nodes(cluster.uris().subList(0, 3))
                    .nodeTimeout(Duration.ofSeconds(1))
                    .retryDelay(Duration.ofMillis(200))
                    .listener(rounds)
                    .build())) {
      Lease held = holder.acquire("async:crowd", Duration.ofSeconds(30), Duration.ofSeconds(1));
      List<CompletableFuture<Lease>> pending = new ArrayList<>();
      // One waiter first, refused twice (its first round, then the one that queues it): the
      // threads any wait starts (the async timer, each subscriber connection's reading and writing
      // thread) are running.
      pending.add(waiting.acquireAsync("async:crowd", TTL, Duration.ofSeconds(60)));
      RedLocks.eventually("one waiter's two refused rounds", () -> rounds.denied.get() >= 2);
      List<String> one = libraryThreads();
      for (int i = 1; i < 1000; i++) {
        pending.add(waiting.acquireAsync("async:crowd", TTL, Duration.ofSeconds(60)));
      }
      // Every waiter has been refused and is pausing between rounds (or already in the next).
      RedLocks.eventually("2,000 refused rounds", () -> rounds.denied.get() >= 2000);
      List<String> thousand = libraryThreads();
      // Only the library's own threads are counted: the JVM's, JUnit's and the common pool's come
      // and go on their own. The other 999 add none of their own: at most the RedLock's timers
      // that start when first needed (its release retries', its renewals', its events': 3), one
      // each. (One may also have ended: an idle event thread does after 5 s.)
      List<String> added = new ArrayList<>(thousand);
      one.forEach(added::remove);
      assertTrue(
          added.size() <= 3 && added.size() == Set.copyOf(added).size(),
          "1,000 waiters run on library threads that one waiter did not: "
              + added
              + " ("
              + one
              + " -> "
              + thousand
              + ")");
      assertTrue(pending.stream().noneMatch(CompletableFuture::isDone), "all still waiting");

      pending.forEach(f -> f.cancel(true));
      int beforeCancel = rounds.acquired.get() + rounds.denied.get(); // each cancelled now
      assertEquals(0, waiting.pendingAcquisitions(), "cancelled acquisitions are dropped");
      // A round in flight at the cancel is still decided (refused: the lock is held), and may be
      // queued behind the cancelled waiters' leaves at the gate: wait until every such round is.
      // Those are the rounds in flight at the cancel: on a loaded machine (rounds of tens of ms
      // between pauses of 100 to 300 ms) a few hundred of the 1,000 waiters' (178 seen); a round
      // sent after the cancel would make about one per waiter more. Half the waiters between them.
      int afterCancel = awaitNoRoundDecidedFor(Duration.ofMillis(300), rounds) - beforeCancel;
      assertTrue(
          afterCancel < pending.size() / 2,
          afterCancel + " rounds decided after the cancel of " + pending.size() + " waiters");
      held.release();
      // No round is sent after the cancel, so with the lock free no cancelled waiter is granted,
      // over several retry delays.
      assertNoRoundGrantedFor(Duration.ofMillis(1000), rounds);
      assertTrue(RedLocks.keysGone(cluster, "async:crowd", 0, 1, 2));
      assertEquals(0, waiting.leasesHeld());
    }
  }

  /**
   * Waits, up to 10 s, until the listener has heard of no decided round for {@code window}; returns
   * how many it had heard of by then.
   */
  private static int awaitNoRoundDecidedFor(Duration window, Rounds rounds) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    int seen = -1;
    long quietSince = System.nanoTime();
    while (System.nanoTime() - deadline < 0) {
      int now = rounds.acquired.get() + rounds.denied.get();
      if (now != seen) {
        seen = now;
        quietSince = System.nanoTime();
      } else if (System.nanoTime() - quietSince >= window.toNanos()) {
        return seen;
      }
      java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
    throw new AssertionError("rounds still decided 10 s after the cancel: " + seen);
  }

  /** Polls, until {@code window} has passed, that the listener heard of no grant. */
  private static void assertNoRoundGrantedFor(Duration window, Rounds rounds) {
    long end = System.nanoTime() + window.toNanos();
    while (System.nanoTime() - end < 0) {
      assertEquals(0, rounds.acquired.get(), "a cancelled waiter was granted");
      java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
  }

  @Test
  void cancellingReleasesAGrantThatLandsAfterTheCancel(RedisCluster cluster) throws Exception {
    Rounds rounds = new Rounds();
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris().subList(0, 3))
                .nodeTimeout(Duration.ofSeconds(3))
                .listener(rounds)
                .build())) {
      for (int i = 0; i < 3; i++) {
        cluster.node(i).pause(); // the round is written, but nothing is answered yet
      }
      CompletableFuture<Lease> pending =
          redlock.acquireAsync("async:late", Duration.ofSeconds(30), Duration.ofSeconds(10));
      assertTrue(pending.cancel(true));
      for (int i = 0; i < 3; i++) {
        cluster.node(i).resume(); // the masters grant now, after the cancel
      }
      RedLocks.eventually("the late round granted", () -> rounds.acquired.get() == 1);
      RedLocks.eventually(
          "the late grant released on every master",
          () -> RedLocks.keysGone(cluster, "async:late", 0, 1, 2));
      assertEquals(0, redlock.leasesHeld());
      assertThrows(CancellationException.class, pending::join);
    }
  }

  @Test
  void cancellingAfterTheGrantButBeforeTheHandOverReleasesIt(RedisCluster cluster)
      throws Exception {
    CountDownLatch eventThreadFree = new CountDownLatch(1);
    CountDownLatch eventThreadBusy = new CountDownLatch(1);
    Rounds rounds =
        new Rounds() {
          @Override
          public void releaseCompleted(
              String resource, List<NodeOutcome> outcomes, Duration elapsed) {
            if (resource.equals("async:blocker")) {
              eventThreadBusy.countDown();
              try {
                eventThreadFree.await(WAIT_SECONDS, TimeUnit.SECONDS); // holds the event thread
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          }
        };
    try (RedLock redlock = redlock(cluster, 3, rounds)) {
      redlock.acquire("async:blocker", TTL, Duration.ofSeconds(1)).release();
      assertTrue(eventThreadBusy.await(WAIT_SECONDS, TimeUnit.SECONDS));
      int before = rounds.acquired.get();
      CompletableFuture<Lease> pending =
          redlock.acquireAsync("async:race", TTL, Duration.ofSeconds(5));
      // Granted on the masters; its hand-over waits behind the busy event thread.
      RedLocks.eventually("granted", () -> rounds.acquired.get() == before + 1);
      assertTrue(cluster.node(0).admin().exists("async:race"));
      assertTrue(pending.cancel(true), "not handed over yet");
      eventThreadFree.countDown();
      RedLocks.eventually(
          "the grant cancelled before its hand-over released on every master",
          () -> RedLocks.keysGone(cluster, "async:race", 0, 1, 2));
      RedLocks.eventually("no lease held", () -> redlock.leasesHeld() == 0);
    } finally {
      eventThreadFree.countDown();
    }
  }

  @Test
  void closeReleasesWhatARoundInFlightIsGranted(RedisCluster cluster) throws Exception {
    Rounds rounds = new Rounds();
    RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris().subList(0, 3))
                .nodeTimeout(Duration.ofSeconds(3))
                .listener(rounds)
                .build());
    for (int i = 0; i < 3; i++) {
      cluster.node(i).pause();
    }
    CompletableFuture<Lease> pending =
        redlock.acquireAsync("async:closing-grant", Duration.ofSeconds(30), Duration.ofSeconds(10));
    Thread closing = new Thread(redlock::close, "closing");
    closing.start();
    assertInstanceOf(IllegalStateException.class, failure(pending)); // failed first, at once
    assertTrue(closing.isAlive(), "close waits for the round in flight");
    for (int i = 0; i < 3; i++) {
      cluster.node(i).resume(); // the masters grant now, while close waits
    }
    closing.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
    assertFalse(closing.isAlive(), "close returned");
    assertTrue(
        RedLocks.keysGone(cluster, "async:closing-grant", 0, 1, 2),
        "released before the connections closed");
    assertEquals(1, rounds.acquired.get(), "the round in flight was granted");
  }

  @Test
  void cancellingAWaiterStopsItsRounds(RedisCluster cluster) throws Exception {
    Rounds rounds = new Rounds();
    try (RedLock holder = redlock(cluster, 3, new Rounds());
        RedLock waiting = redlock(cluster, 3, rounds)) {
      Lease held = holder.acquire("async:stop", TTL, Duration.ofSeconds(1));
      CompletableFuture<Lease> pending =
          waiting.acquireAsync("async:stop", TTL, Duration.ofSeconds(30));
      RedLocks.eventually("a few refused rounds", () -> rounds.denied.get() >= 3);
      pending.cancel(true);
      assertEquals(0, waiting.pendingAcquisitions());
      held.release();
      // With the holder gone, a waiter still retrying would be granted within a retry delay.
      assertNoRoundGrantedFor(Duration.ofMillis(500), rounds);
      assertTrue(RedLocks.keysGone(cluster, "async:stop", 0, 1, 2));
    }
  }

  @Test
  void workersJoiningAsyncCallsExcludeEachOtherAndAreNeverPinnedInTheLibrary(RedisCluster cluster)
      throws Exception {
    try (VirtualThreads threads = new VirtualThreads();
        RedLock redlock =
            RedLocks.admitted(
                RedLock.builder()
                    .nodes(cluster.uris().subList(0, 3))
                    .nodeTimeout(Duration.ofMillis(200))
                    .retryDelay(Duration.ofMillis(5))
                    .build())) {
      if (threads.virtual()) {
        joinInTurn(redlock, threads, 20); // warm-up: classes load and initialize
      }
      threads.record();
      int[] counter = joinInTurn(redlock, threads, 50);
      assertEquals(8 * 50, counter[0], "no update lost: the leases never overlapped");
      assertEquals(List.of(), threads.pinnedInLibrary(), "virtual threads pinned in the library");
    }
  }

  /** Eight workers, each {@code rounds} times: acquire (joined), a guarded update, release. */
  private static int[] joinInTurn(RedLock redlock, VirtualThreads threads, int rounds)
      throws InterruptedException {
    int[] counter = {0}; // deliberately unsynchronized: only the lock protects it
    AtomicReference<Throwable> failed = new AtomicReference<>();
    List<Thread> workers = new ArrayList<>();
    for (int w = 0; w < 8; w++) {
      Thread worker =
          threads
              .factory("async-worker-" + w)
              .newThread(
                  () -> {
                    try {
                      for (int i = 0; i < rounds; i++) {
                        Lease lease =
                            redlock.acquireAsync("async:turns", TTL, Duration.ofSeconds(30)).join();
                        int read = counter[0];
                        Thread.yield(); // invite an overlap, should the lock allow one
                        counter[0] = read + 1;
                        lease.releaseAsync().join();
                      }
                    } catch (Throwable e) {
                      failed.compareAndSet(null, e);
                    }
                  });
      workers.add(worker);
      worker.start();
    }
    for (Thread worker : workers) {
      worker.join(TimeUnit.SECONDS.toMillis(60));
      assertFalse(worker.isAlive(), "worker finished");
    }
    if (failed.get() != null) {
      throw new AssertionError("a worker failed", failed.get());
    }
    return counter;
  }

  @Test
  void closeCompletesPendingAcquisitionsExceptionally(RedisCluster cluster) throws Exception {
    try (RedLock holder = redlock(cluster, 3, new Rounds())) {
      Lease held = holder.acquire("async:closing", TTL, Duration.ofSeconds(1));
      RedLock waiting = redlock(cluster, 3, new Rounds());
      CompletableFuture<Lease> pending =
          waiting.acquireAsync("async:closing", TTL, Duration.ofSeconds(60));
      CompletableFuture<Optional<Lease>> once = waiting.tryAcquireAsync("async:closing", TTL);
      waiting.close();
      assertInstanceOf(IllegalStateException.class, failure(pending));
      assertTrue(once.isDone(), "a single round ends by the close too");
      assertThrows(
          IllegalStateException.class,
          () -> waiting.acquireAsync("async:closing", TTL, Duration.ofSeconds(1)));
      held.release();
    }
  }
}
