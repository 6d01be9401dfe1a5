package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The {@link Lock} facade: the same scenarios run against {@link ReentrantLock} and against a
 * {@link LeaseLock} on real masters must end the same way where the {@code Lock} contract applies;
 * then what only a distributed lock has: waits on another process, contention between clients, and
 * a lock lost while held.
 */
class LeaseLockIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final Duration TTL = Duration.ofSeconds(1);
  private static final long WAIT_SECONDS = 10;

  private final List<RedLock> clients = new ArrayList<>();

  /** What the threads a test starts threw: the test fails if any did (see {@link #start}). */
  private final ConcurrentLinkedQueue<Throwable> threadFailures = new ConcurrentLinkedQueue<>();

  @BeforeEach
  void clean(RedisCluster cluster) {
    for (int i = 0; i < 3; i++) {
      cluster.node(i).admin().command("DEL", "job");
    }
  }

  @AfterEach
  void close() {
    clients.forEach(RedLock::close);
    assertNoThreadFailed();
  }

  /**
   * Starts {@code body} on a new thread whose exception, if it throws one, fails the test (at the
   * latest after it, in {@link #close()}) instead of ending the thread with a stack trace alone.
   */
  private Thread start(String name, Runnable body) {
    Thread thread = new Thread(body, name);
    thread.setUncaughtExceptionHandler((t, e) -> threadFailures.add(e));
    thread.start();
    return thread;
  }

  private void assertNoThreadFailed() {
    Throwable first = threadFailures.peek();
    if (first != null) {
      throw new AssertionError(
          threadFailures.size() + " test threads threw; the first: " + first, first);
    }
  }

  private RedLock client(RedisCluster cluster) {
    RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(Duration.ofMillis(100))
                .retryDelay(Duration.ofMillis(10))
                .build());
    clients.add(redlock);
    return redlock;
  }

  static Stream<Arguments> locks() {
    return Stream.of(
        Arguments.of(
            "ReentrantLock",
            (Function<LeaseLockIT, Function<RedisCluster, Lock>>)
                test -> cluster -> new ReentrantLock()),
        Arguments.of(
            "LeaseLock",
            (Function<LeaseLockIT, Function<RedisCluster, Lock>>)
                test -> cluster -> test.client(cluster).newLock("job", TTL)));
  }

  private Lock lock(Function<LeaseLockIT, Function<RedisCluster, Lock>> factory, RedisCluster c) {
    return factory.apply(this).apply(c);
  }

  /** Runs {@code body} on another thread and waits for its answer. */
  private static boolean elsewhere(java.util.concurrent.Callable<Boolean> body) throws Exception {
    CompletableFuture<Boolean> result = new CompletableFuture<>();
    Thread thread =
        new Thread(
            () -> {
              try {
                result.complete(body.call());
              } catch (Throwable e) {
                result.completeExceptionally(e);
              }
            });
    thread.start();
    try {
      return result.get(WAIT_SECONDS, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("locks")
  void theHolderMayLockAgainAndOnlyItsLastUnlockFreesTheLock(
      String name, Function<LeaseLockIT, Function<RedisCluster, Lock>> factory, RedisCluster c)
      throws Exception {
    Lock lock = lock(factory, c);
    lock.lock();
    lock.lock();
    assertTrue(lock.tryLock(), "a third hold");
    lock.unlock();
    lock.unlock();
    assertFalse(elsewhere(lock::tryLock), "still held once");
    lock.unlock();
    assertTrue(
        elsewhere(
            () -> {
              boolean got = lock.tryLock(WAIT_SECONDS, TimeUnit.SECONDS);
              lock.unlock();
              return got;
            }),
        "free after the last unlock");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("locks")
  void unlockByAThreadThatDoesNotHoldTheLockThrows(
      String name, Function<LeaseLockIT, Function<RedisCluster, Lock>> factory, RedisCluster c)
      throws Exception {
    Lock lock = lock(factory, c);
    assertThrows(IllegalMonitorStateException.class, lock::unlock, "never locked");
    lock.lock();
    assertThrows(
        IllegalMonitorStateException.class,
        () ->
            elsewhere(
                () -> {
                  lock.unlock();
                  return true;
                }),
        "another thread's hold");
    assertFalse(elsewhere(lock::tryLock), "the foreign unlock changed nothing");
    lock.unlock();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("locks")
  void aThreadInterruptedWhileWaitingInterruptiblyGivesUpHoldingNothing(
      String name, Function<LeaseLockIT, Function<RedisCluster, Lock>> factory, RedisCluster c)
      throws Exception {
    Lock lock = lock(factory, c);
    lock.lock();
    CountDownLatch waiting = new CountDownLatch(1);
    AtomicBoolean interrupted = new AtomicBoolean();
    Thread waiter =
        start(
            "waiter",
            () -> {
              waiting.countDown();
              try {
                lock.lockInterruptibly();
                lock.unlock();
              } catch (InterruptedException e) {
                interrupted.set(true);
              }
            });
    waiting.await();
    awaitBlocked(waiter);
    waiter.interrupt();
    waiter.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
    assertFalse(waiter.isAlive());
    assertTrue(interrupted.get(), "threw InterruptedException");
    lock.unlock();
    assertTrue(elsewhere(lock::tryLock), "the interrupted waiter holds nothing");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("locks")
  void lockWaitsThroughAnInterruptAndKeepsItPending(
      String name, Function<LeaseLockIT, Function<RedisCluster, Lock>> factory, RedisCluster c)
      throws Exception {
    Lock lock = lock(factory, c);
    lock.lock();
    CountDownLatch acquired = new CountDownLatch(1);
    AtomicBoolean stillInterrupted = new AtomicBoolean();
    Thread waiter =
        start(
            "waiter",
            () -> {
              lock.lock();
              stillInterrupted.set(Thread.currentThread().isInterrupted());
              acquired.countDown();
              lock.unlock();
            });
    awaitBlocked(waiter);
    waiter.interrupt();
    assertFalse(acquired.await(200, TimeUnit.MILLISECONDS), "still waiting after the interrupt");
    lock.unlock();
    assertTrue(acquired.await(WAIT_SECONDS, TimeUnit.SECONDS), "acquired once free");
    assertTrue(stillInterrupted.get(), "the interrupt was kept pending");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("locks")
  void aTimedWaitEndsFalseAfterItsTimeAndTrueOnceFree(
      String name, Function<LeaseLockIT, Function<RedisCluster, Lock>> factory, RedisCluster c)
      throws Exception {
    Lock lock = lock(factory, c);
    lock.lock();
    long start = System.nanoTime();
    assertFalse(elsewhere(() -> lock.tryLock(150, TimeUnit.MILLISECONDS)));
    long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertTrue(waitedMillis >= 150, "waited its time: " + waitedMillis + " ms");
    assertFalse(elsewhere(() -> lock.tryLock(0, TimeUnit.SECONDS)), "zero: one try");
    lock.unlock();
    assertTrue(
        elsewhere(
            () -> {
              boolean got = lock.tryLock(0, TimeUnit.SECONDS);
              lock.unlock();
              return got;
            }));
  }

  @Test
  void conditionsAreRefusedSayingWhy(RedisCluster cluster) {
    LeaseLock lock = client(cluster).newLock("job", TTL);
    UnsupportedOperationException e =
        assertThrows(UnsupportedOperationException.class, lock::newCondition);
    assertTrue(e.getMessage().contains("span processes"), e.getMessage());
  }

  @Test
  void aLockHeldByAnotherProcessIsWaitedForAndTheHolderSeesItsLease(RedisCluster cluster)
      throws Exception {
    // Counters far above the masters' clock on a majority (see FencingIT.SEED): the tokens below
    // must come from the counters, not from the one clock these masters share.
    for (int i = 0; i < 2; i++) {
      cluster.node(i).admin().set("redlock:fence", Long.toString(FencingIT.SEED));
    }
    LeaseLock mine = client(cluster).newLock("job", TTL);
    LeaseLock theirs = client(cluster).newLock("job", TTL);
    theirs.lock();
    long token = theirs.lease().fencingToken();
    assertTrue(token > FencingIT.SEED, token + " comes from the seeded counters");
    assertFalse(elsewhere(mine::tryLock), "held in the other process");
    assertFalse(elsewhere(() -> mine.tryLock(300, TimeUnit.MILLISECONDS)));
    // Outlive the TTL: the holder's lease is renewed, so the other process keeps waiting.
    assertFalse(elsewhere(() -> mine.tryLock(TTL.toMillis() * 2, TimeUnit.MILLISECONDS)));
    assertTrue(theirs.lease().isValid(), "renewed while held");
    theirs.unlock();
    assertThrows(IllegalMonitorStateException.class, theirs::lease);
    mine.lock();
    assertTrue(mine.lease().fencingToken() > token, "fencing tokens rise across processes");
    mine.unlock();
  }

  @Test
  void twoLocksOnOneNameFromOneRedLockAreOneHolderReentrantInItsThread(RedisCluster cluster)
      throws Exception {
    RedLock redlock = client(cluster);
    LeaseLock first = redlock.newLock("job", TTL);
    LeaseLock second = redlock.newLock("job", Duration.ofSeconds(5));
    first.lock();
    assertTrue(second.tryLock(), "the holding thread locks the same name again");
    second.lock();
    assertEquals(3, first.getHoldCount());
    assertTrue(second.isHeldByCurrentThread());
    assertSame(first.lease(), second.lease(), "one lease behind both");
    assertFalse(elsewhere(second::tryLock), "another thread waits, whichever object it uses");
    assertFalse(elsewhere(() -> first.tryLock(100, TimeUnit.MILLISECONDS)));
    second.unlock();
    first.unlock();
    assertTrue(cluster.node(0).admin().exists("job"), "held until the last unlock");
    second.unlock();
    assertFalse(first.isHeldByCurrentThread());
    assertFalse(cluster.node(0).admin().exists("job"), "released on the masters");
    assertThrows(IllegalMonitorStateException.class, second::unlock);
    assertTrue(
        elsewhere(
            () -> {
              boolean taken = second.tryLock();
              if (taken) {
                first.unlock(); // same lock, same thread: either object unlocks it
              }
              return taken;
            }));
    assertEquals(0, redlock.localHolds(), "nothing kept by name once no thread holds or waits");
  }

  @Test
  void aThreadWaitingOnOneObjectGetsTheLockWhenTheHolderUnlocksAnother(RedisCluster cluster)
      throws Exception {
    RedLock redlock = client(cluster);
    LeaseLock holder = redlock.newLock("job", TTL);
    holder.lock();
    CountDownLatch locked = new CountDownLatch(1);
    Thread waiter =
        start(
            "waiter",
            () -> {
              LeaseLock mine = redlock.newLock("job", TTL);
              mine.lock();
              locked.countDown();
              mine.unlock();
            });
    awaitBlocked(waiter);
    assertEquals(1, locked.getCount(), "waits in this process while the name is held");
    holder.unlock();
    assertTrue(locked.await(WAIT_SECONDS, TimeUnit.SECONDS));
    waiter.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
    assertEquals(0, redlock.localHolds());
  }

  @Test
  void whatIsKeptByNameIsBoundedByTheLocksHeldNotTheNamesUsed(RedisCluster cluster) {
    RedLock redlock = client(cluster);
    for (int i = 0; i < 1000; i++) {
      LeaseLock lock = redlock.newLock("job:" + i, TTL);
      assertTrue(lock.tryLock());
      lock.unlock();
      assertFalse(redlock.newLock("job", TTL).isHeldByCurrentThread());
    }
    LeaseLock held = redlock.newLock("job", TTL);
    held.lock();
    assertEquals(1, redlock.localHolds(), "one name held");
    held.unlock();
    assertEquals(0, redlock.localHolds(), "after 1,000 names locked and unlocked");
  }

  @Test
  void aLockLostWhileHeldIsSignalledAndItsUnlockThrowsAfterReleasing(RedisCluster cluster)
      throws Exception {
    LeaseLock lock = client(cluster).newLock("job", TTL);
    lock.lock();
    Lease lease = lock.lease();
    CountDownLatch lost = new CountDownLatch(1);
    lease.onLost().thenRun(lost::countDown);
    for (int i = 0; i < 3; i++) {
      cluster.node(i).admin().command("DEL", "job"); // the masters forget it (say, a restart)
    }
    assertTrue(lost.await(WAIT_SECONDS, TimeUnit.SECONDS), "the next renewal finds it gone");
    assertTrue(lease.isLost());
    assertFalse(lease.isValid());
    assertThrows(LeaseLostException.class, lock::tryLock, "a nested hold on a lost lock");
    assertEquals(1, lock.getHoldCount(), "the nested hold was not taken");
    LeaseLostException e = assertThrows(LeaseLostException.class, lock::unlock);
    assertTrue(e.getMessage().contains("was lost while held"), e.getMessage());
    assertFalse(e.getMessage().contains("expired"), "lost, not expired: " + e.getMessage());
    assertTrue(lease.isLost(), "a lost lease stays lost once released");
    assertEquals(0, lock.getHoldCount(), "the hold is gone all the same");
    assertTrue(elsewhere(() -> client(cluster).newLock("job", TTL).tryLock()));
  }

  @Test
  void clientsContendingThroughTheFacadeNeverOverlap(RedisCluster cluster) throws Exception {
    int threads = 6;
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
    ConcurrentLinkedQueue<long[]> windows = new ConcurrentLinkedQueue<>();
    AtomicInteger invalidAtUnlock = new AtomicInteger();
    int[] counter = {0}; // only the lock protects it
    List<Thread> workers = new ArrayList<>();
    for (int w = 0; w < threads; w++) {
      LeaseLock lock = client(cluster).newLock("inventory", TTL);
      Thread worker =
          start(
              "worker-" + w,
              () -> {
                while (System.nanoTime() - end < 0) {
                  lock.lock();
                  try {
                    long from = System.nanoTime();
                    int read = counter[0];
                    Thread.yield(); // widen the read-modify-write window
                    counter[0] = read + 1;
                    if (!lock.lease().isValid()) {
                      invalidAtUnlock.incrementAndGet();
                    }
                    windows.add(new long[] {from, System.nanoTime()});
                  } finally {
                    lock.unlock();
                  }
                }
              });
      workers.add(worker);
    }
    for (Thread worker : workers) {
      worker.join(TimeUnit.SECONDS.toMillis(30));
      assertFalse(worker.isAlive());
    }
    // A worker that threw (say, a lock lost while held, which unlock reports) would otherwise just
    // stop, and the others' holds would still pass every count below.
    assertNoThreadFailed();
    List<long[]> sorted = new ArrayList<>(windows);
    sorted.sort(Comparator.comparingLong(w -> w[0]));
    int overlaps = 0;
    for (int i = 1; i < sorted.size(); i++) {
      if (sorted.get(i)[0] - sorted.get(i - 1)[1] < 0) {
        overlaps++;
      }
    }
    System.out.printf(
        "LeaseLock: %d holds by %d clients, %d overlaps, counter %d%n",
        sorted.size(), threads, overlaps, counter[0]);
    assertTrue(sorted.size() > 30, "enough holds to mean something: " + sorted.size());
    assertEquals(0, overlaps, "holds overlapped");
    assertEquals(sorted.size(), counter[0], "lost updates");
    assertEquals(0, invalidAtUnlock.get());
  }

  /** Waits until {@code thread} is parked (waiting for the lock), or fails after a deadline. */
  private static void awaitBlocked(Thread thread) throws TimeoutException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
    while (thread.getState() != Thread.State.WAITING
        && thread.getState() != Thread.State.TIMED_WAITING) {
      if (System.nanoTime() - deadline > 0) {
        throw new TimeoutException(thread + " never blocked: " + thread.getState());
      }
      Thread.onSpinWait();
    }
  }
}
