package dev.redlock.spring;

import static dev.redlock.spring.Masters.admitted;
import static dev.redlock.spring.Masters.awaitHolders;
import static dev.redlock.spring.Masters.awaitTrue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.LeaseLostException;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.integration.leader.Candidate;
import org.springframework.integration.leader.Context;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * {@link RedLockRegistry} against three real masters, one registry per simulated process. Failsafe
 * runs it on Spring Integration 7.x and again on 6.5, so it uses only what both lines have (the
 * locks as {@link Lock}s); {@link DistributedLockIT} covers what only 7.x has.
 */
class RedLockRegistryIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final String PREFIX = "it:";
  private static final Duration WAIT = Duration.ofSeconds(5);
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(200);

  private final List<RedLock> redlocks = new ArrayList<>();

  @AfterEach
  void closeRedLocks() {
    redlocks.forEach(RedLock::close);
  }

  /** A RedLock of its own, as a separate process would have; the masters are admitted. */
  private RedLock redlock(RedisCluster cluster) {
    // A node timeout that a loaded build machine does not miss by accident.
    RedLock redlock = RedLock.builder().nodes(cluster.uris()).nodeTimeout(NODE_TIMEOUT).build();
    redlocks.add(redlock);
    return admitted(redlock);
  }

  private RedLockRegistry registry(RedisCluster cluster) {
    return RedLockRegistry.builder(redlock(cluster)).keyPrefix(PREFIX).build();
  }

  /** Runs {@code attempt} on another thread, as another thread of the same process would. */
  private static boolean onAnotherThread(BooleanSupplier attempt) throws Exception {
    return CompletableFuture.supplyAsync(attempt::getAsBoolean).get(10, TimeUnit.SECONDS);
  }

  @Test
  void obtainReturnsOneLockPerKeyAndRefusesKeysThatAreNotStrings(RedisCluster cluster) {
    RedLockRegistry registry = registry(cluster);

    assertSame(registry.obtain("a"), registry.obtain("a"));
    assertNotSame(registry.obtain("a"), registry.obtain("b"));
    assertThrows(IllegalArgumentException.class, () -> registry.obtain(42));
    assertThrows(NullPointerException.class, () -> registry.obtain(null));
    RedLockRegistry unprefixed = RedLockRegistry.builder(redlocks.get(0)).build();
    assertThrows(IllegalArgumentException.class, () -> unprefixed.obtain(""), "empty resource");
  }

  @Test
  void aHeldLockExcludesAnotherProcessUntilItsLastUnlock(RedisCluster cluster) throws Exception {
    Lock mine = registry(cluster).obtain("orders");
    Lock theirs = registry(cluster).obtain("orders");

    mine.lock();
    assertTrue(mine.tryLock(), "reentrant");
    awaitHolders(cluster, PREFIX + "orders", List.of(0, 1, 2));
    assertFalse(theirs.tryLock());
    mine.unlock();
    assertFalse(theirs.tryLock(), "still held once");
    assertFalse(onAnotherThread(mine::tryLock), "another thread of this process waits too");
    mine.unlock();

    awaitHolders(cluster, PREFIX + "orders", List.of());
    assertTrue(theirs.tryLock(1, TimeUnit.SECONDS));
    theirs.unlock();
  }

  @Test
  void theBuilderRefusesAMarginThatRenewalsCannotKeepAbove(RedisCluster cluster) {
    RedLock redlock = redlock(cluster);
    Duration ttl = Duration.ofSeconds(3);

    assertThrows(
        IllegalArgumentException.class,
        () ->
            RedLockRegistry.builder(redlock).ttl(ttl).safetyMargin(Duration.ofSeconds(1)).build());
    assertThrows(
        IllegalArgumentException.class,
        () -> RedLockRegistry.builder(redlock).ttl(ttl).safetyMargin(Duration.ZERO).build());
    assertThrows(
        IllegalArgumentException.class,
        () -> RedLockRegistry.builder(redlock).ttl(Duration.ofMillis(10)).build(),
        "below the node timeout");
    assertThrows(
        IllegalArgumentException.class,
        () -> RedLockRegistry.builder(redlock).keyPrefix("redlock:").build(),
        "the library's own keys");
    assertThrows(
        IllegalArgumentException.class, () -> RedLockRegistry.builder(redlock).cacheCapacity(0));
  }

  @Test
  void renewLockExtendsTheCallingThreadsHoldOnAQuorumAndNeverShortensIt(RedisCluster cluster) {
    RedLockRegistry registry =
        RedLockRegistry.builder(redlock(cluster)).ttl(Duration.ofSeconds(2)).build();
    Lock lock = registry.obtain("renew");

    lock.lock();
    try {
      registry.renewLock("renew", Duration.ofSeconds(10));
      awaitTrue(
          WAIT,
          () -> IntStream.range(0, 3).allMatch(i -> cluster.node(i).admin().pttl("renew") > 8_000),
          () -> "not extended on every master");
      assertTrue(registry.lease("renew").remainingValidity().compareTo(Duration.ofSeconds(8)) > 0);

      registry.renewLock("renew"); // the registry's 2 s: shortens nothing
      assertTrue(cluster.node(0).admin().pttl("renew") > 7_000);
      assertTrue(registry.lease("renew").remainingValidity().compareTo(Duration.ofSeconds(7)) > 0);
    } finally {
      lock.unlock();
    }
  }

  @Test
  void renewLockAndLeaseNeedTheCallingThreadToHoldTheLock(RedisCluster cluster) throws Exception {
    RedLockRegistry registry = registry(cluster);
    Lock lock = registry.obtain("mine");

    assertThrows(IllegalMonitorStateException.class, () -> registry.renewLock("mine"));
    assertThrows(IllegalMonitorStateException.class, () -> registry.lease("never-obtained"));
    lock.lock();
    try {
      assertTrue(
          onAnotherThread(
              () -> {
                try {
                  registry.renewLock("mine");
                  return false;
                } catch (IllegalMonitorStateException expected) {
                  return true;
                }
              }));
    } finally {
      lock.unlock();
    }
    assertThrows(IllegalMonitorStateException.class, lock::unlock);
    assertThrows(UnsupportedOperationException.class, lock::newCondition);
  }

  @Test
  void leaseCarriesAFencingTokenThatRisesFromHoldToHold(RedisCluster cluster) {
    RedLockRegistry registry = registry(cluster);
    Lock lock = registry.obtain("fenced");

    lock.lock();
    long first = registry.lease("fenced").fencingToken();
    lock.unlock();
    lock.lock();
    long second = registry.lease("fenced").fencingToken();
    lock.unlock();

    assertTrue(second > first, first + " then " + second);
  }

  @Test
  void expireUnusedOlderThanForgetsOnlyLocksUnusedForThatLong(RedisCluster cluster) {
    RedLockRegistry registry = registry(cluster);
    Lock held = registry.obtain("held");
    Lock idle = registry.obtain("idle");
    held.lock();
    try {
      registry.expireUnusedOlderThan(0);

      assertSame(held, registry.obtain("held"));
      assertNotSame(idle, registry.obtain("idle"));
      Lock recent = registry.obtain("recent");
      registry.expireUnusedOlderThan(60_000);
      assertSame(recent, registry.obtain("recent"), "used less than a minute ago");
      assertThrows(IllegalArgumentException.class, () -> registry.expireUnusedOlderThan(-1));
    } finally {
      held.unlock();
    }
  }

  @Test
  void aLockInUseWhileItIsExpiredIsNeverDropped(RedisCluster cluster) throws Exception {
    RedLockRegistry registry = registry(cluster);
    Lock lock = registry.obtain("busy");
    CountDownLatch release = new CountDownLatch(1);
    Holder holder = Holder.start(lock, release);

    registry.expireUnusedOlderThan(0);
    assertSame(lock, registry.obtain("busy"), "held by another thread");

    release.countDown();
    holder.awaitEnd();
    registry.expireUnusedOlderThan(0);
    assertNotSame(lock, registry.obtain("busy"), "free now");
  }

  @Test
  void theCacheForgetsTheLeastRecentlyUsedUnheldLocksBeyondItsCapacity(RedisCluster cluster) {
    RedLockRegistry registry =
        RedLockRegistry.builder(redlock(cluster)).keyPrefix(PREFIX).cacheCapacity(2).build();
    Lock a = registry.obtain("a");
    a.lock();
    try {
      Lock b = registry.obtain("b");
      Lock c = registry.obtain("c"); // three: b is the eldest not held

      assertSame(a, registry.obtain("a"));
      assertSame(c, registry.obtain("c"));
      assertNotSame(b, registry.obtain("b"));
    } finally {
      a.unlock();
    }
  }

  @Test
  void aForgottenLockStillExcludesAndComesBackWhenLocked(RedisCluster cluster) throws Exception {
    RedLockRegistry registry = registry(cluster);
    Lock forgotten = registry.obtain("k");
    registry.expireUnusedOlderThan(0);

    forgotten.lock();
    try {
      assertSame(forgotten, registry.obtain("k"), "put back by its acquisition");
      assertFalse(onAnotherThread(() -> registry.obtain("k").tryLock()));
      registry.renewLock("k");
    } finally {
      forgotten.unlock();
    }
  }

  @Test
  void aLockBeingLostIsReportedToItsHolderBeforeItsLeaseRunsOut(RedisCluster cluster) {
    Duration margin = Duration.ofMillis(400);
    RedLockRegistry registry =
        RedLockRegistry.builder(redlock(cluster))
            .ttl(Duration.ofMillis(1500))
            .safetyMargin(margin)
            .build();
    Lock lock = registry.obtain("fading");
    lock.lock();
    cluster.node(0).pause();
    cluster.node(1).pause(); // renewals can no longer reach a majority

    IllegalStateException reported = null;
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (reported == null && System.nanoTime() - deadline < 0) {
      try {
        assertTrue(lock.tryLock());
        lock.unlock(); // the nested hold
      } catch (IllegalStateException e) {
        reported = e;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
    }
    Lease lease = registry.lease("fading");

    assertTrue(reported != null, "the holder was never told");
    assertTrue(reported instanceof LeaseLostException, "reported as a loss: " + reported);
    assertTrue(lease.isValid(), () -> "reported before the lease ran out: " + lease);
    assertTrue(lease.remainingValidity().compareTo(margin) <= 0, lease::toString);
    assertThrows(IllegalStateException.class, lock::lock, "still reported");
    assertThrows(IllegalStateException.class, () -> registry.renewLock("fading"));
    lock.unlock(); // within the lease: released, nothing lost
    assertThrows(IllegalMonitorStateException.class, () -> registry.lease("fading"));
  }

  @Test
  void theLastUnlockOfALostLockThrowsLeaseLostExceptionAndFreesIt(RedisCluster cluster)
      throws Exception {
    RedLockRegistry registry =
        RedLockRegistry.builder(redlock(cluster)).ttl(Duration.ofMillis(1000)).build();
    Lock lock = registry.obtain("lost");
    lock.lock();
    cluster.node(0).pause();
    cluster.node(1).pause();
    Lease lease = registry.lease("lost");
    awaitTrue(WAIT, () -> !lease.isValid(), () -> "the lease never ran out");

    assertThrows(LeaseLostException.class, () -> lock.tryLock(1, TimeUnit.SECONDS), "nested");
    assertThrows(LeaseLostException.class, lock::unlock, "the last unlock");

    cluster.node(0).resume();
    cluster.node(1).resume();
    assertTrue(onAnotherThread(() -> tryLockWithin(lock, WAIT)), "free again");
  }

  private static boolean tryLockWithin(Lock lock, Duration wait) {
    try {
      if (lock.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS)) {
        lock.unlock();
        return true;
      }
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  @Test
  void anInterruptedLockInterruptiblyHoldsNothing(RedisCluster cluster) throws Exception {
    RedLockRegistry registry = registry(cluster);
    Lock lock = registry.obtain("interrupted");

    Thread.currentThread().interrupt();
    assertThrows(InterruptedException.class, lock::lockInterruptibly);

    assertTrue(onAnotherThread(() -> tryLockWithin(lock, WAIT)));
    // The other thread's unlock returns once a majority answered; the others follow.
    Masters.awaitHolders(cluster, PREFIX + "interrupted", List.of());
  }

  @Test
  void destroyWaitsForTheHoldsOfThisProcessToEndButNoLongerThanItsBound(RedisCluster cluster)
      throws Exception {
    RedLockRegistry registry = registry(cluster);
    Lock lock = registry.obtain("shutdown");
    CountDownLatch unlock = new CountDownLatch(1);
    Holder holder = Holder.start(lock, unlock);

    CompletableFuture<Void> destroyed =
        CompletableFuture.runAsync(
            () -> {
              try {
                registry.destroy();
              } catch (InterruptedException e) {
                throw new CompletionException(e);
              }
            });
    assertThrows(
        TimeoutException.class,
        () -> destroyed.get(200, TimeUnit.MILLISECONDS),
        "returned while the lock was held");
    unlock.countDown();
    destroyed.get(1, TimeUnit.SECONDS); // as soon as the hold ended
    holder.awaitEnd();
    awaitHolders(cluster, PREFIX + "shutdown", List.of());

    lock.lock(); // a hold that does not end: destroy gives up after DESTROY_WAIT
    try {
      long start = System.nanoTime();
      registry.destroy();
      long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertTrue(
          waited >= RedLockRegistry.DESTROY_WAIT.toMillis()
              && waited < RedLockRegistry.DESTROY_WAIT.toMillis() + 1_000,
          "waited " + waited + " ms");
    } finally {
      lock.unlock();
    }
  }

  @Test
  void executeLockedAndALeaderInitiatorLogNothingAtWarnOrAbove(RedisCluster cluster)
      throws Exception {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      // Through the interface: on the registry's own (raw) type executeLocked loses its generics.
      LockRegistry<?> registry = registry(cluster);
      RedLockRegistry other = registry(cluster);
      String result =
          registry.executeLocked(
              "job",
              () -> {
                assertFalse(other.obtain("job").tryLock(), "held through the masters");
                return "done";
              });
      assertEquals("done", result);
      awaitHolders(cluster, PREFIX + "job", List.of());

      CountDownLatch granted = new CountDownLatch(1);
      CountDownLatch revoked = new CountDownLatch(1);
      LockRegistryLeaderInitiator initiator =
          new LockRegistryLeaderInitiator(
              registry,
              new Candidate() {
                @Override
                public String getRole() {
                  return "quiet-leader";
                }

                @Override
                public String getId() {
                  return "only";
                }

                @Override
                public void onGranted(Context ctx) {
                  granted.countDown();
                }

                @Override
                public void onRevoked(Context ctx) {
                  revoked.countDown();
                }
              });
      initiator.start();
      assertTrue(granted.await(10, TimeUnit.SECONDS), "leader");
      assertTrue(initiator.getContext().isLeader());
      awaitHolders(cluster, PREFIX + "quiet-leader", List.of(0, 1, 2));
      initiator.stop();
      assertTrue(revoked.await(10, TimeUnit.SECONDS), "revoked on stop");
      awaitHolders(cluster, PREFIX + "quiet-leader", List.of()); // released on stop
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertFalse(log.contains("WARN") || log.contains("ERROR"), log);
  }

  /**
   * Another thread of this process that locks a lock and holds it until a latch opens. Every wait
   * on it is bounded, and whatever ended it abnormally fails the test.
   */
  private static final class Holder {
    private final Thread thread;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    private Holder(Lock lock, CountDownLatch locked, CountDownLatch release) {
      thread =
          new Thread(
              () -> {
                lock.lock();
                try {
                  locked.countDown();
                  release.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                } finally {
                  lock.unlock();
                }
              },
              "holder");
      thread.setDaemon(true);
      thread.setUncaughtExceptionHandler((t, e) -> failure.set(e));
    }

    /** Starts a holder and waits (for {@link #WAIT} at most) until it holds {@code lock}. */
    static Holder start(Lock lock, CountDownLatch release) throws InterruptedException {
      CountDownLatch locked = new CountDownLatch(1);
      Holder holder = new Holder(lock, locked, release);
      holder.thread.start();
      assertTrue(
          locked.await(WAIT.toMillis(), TimeUnit.MILLISECONDS),
          () ->
              "the other thread did not lock within "
                  + WAIT
                  + " (failure: "
                  + holder.failure.get()
                  + ")");
      return holder;
    }

    /** Waits (for {@link #WAIT} at most) until the holder unlocked and ended, without failing. */
    void awaitEnd() throws InterruptedException {
      thread.join(WAIT.toMillis());
      assertFalse(thread.isAlive(), () -> "the other thread did not end within " + WAIT);
      assertNull(failure.get(), "the other thread failed");
    }
  }
}
