package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLockException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wake-ups on (the default) while contenders, each with its own RedLock, hand one lock around, and
 * the masters' connections (the subscriber connections with the others) fail: a master partitioned
 * while clients wait, then connections dropped again and again (every notice published while a
 * subscriber reconnects is lost). No two leases overlap, every contender keeps getting the lock in
 * every phase, and no wait is longer than the retry timer and the reconnects explain.
 */
class WakeUpsChaosIT {

  private static final Logger log = LoggerFactory.getLogger(WakeUpsChaosIT.class);

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final int CONTENDERS = 4;
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  private static final Duration TTL = Duration.ofSeconds(3);
  private static final Duration RETRY_DELAY = Duration.ofMillis(200);
  private static final Duration PHASE = Duration.ofSeconds(3);

  /** The longest wait allowed: the longest timer pause, a reconnect, a few rounds, and slack. */
  private static final Duration LONGEST_WAIT = Duration.ofSeconds(3);

  record Hold(int contender, long from, long validUntil, int phase) {}

  @Test
  void waitersKeepGettingTheLockThroughAPartitionAndLostNotices(ChaosCluster cluster)
      throws Exception {
    List<RedLock> redlocks = new ArrayList<>();
    try {
      for (int i = 0; i < CONTENDERS; i++) {
        redlocks.add(
            NetworkChaos.admitted(
                RedLock.builder()
                    .nodes(cluster.uris())
                    .nodeTimeout(NODE_TIMEOUT)
                    .retryDelay(RETRY_DELAY)
                    .build()));
      }
      NetworkChaos.warmUp(cluster, redlocks.get(0));
      String key = NetworkChaos.resource("wake-ups");
      ConcurrentLinkedQueue<Hold> holds = new ConcurrentLinkedQueue<>();
      AtomicLong longestWait = new AtomicLong();
      AtomicLong failures = new AtomicLong();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicInteger phase = new AtomicInteger(); // read by the contenders, set below
      CountDownLatch done = new CountDownLatch(CONTENDERS);
      List<Thread> threads = new ArrayList<>();
      for (int c = 0; c < CONTENDERS; c++) {
        int me = c;
        RedLock redlock = redlocks.get(c);
        Thread thread =
            new Thread(
                () -> {
                  try {
                    while (!stop.get()) {
                      long asked = System.nanoTime();
                      Lease lease;
                      try {
                        lease = redlock.acquire(key, TTL, Duration.ofSeconds(10));
                      } catch (RedLockException e) {
                        failures.incrementAndGet();
                        continue;
                      }
                      long from = System.nanoTime();
                      longestWait.accumulateAndGet(from - asked, Math::max);
                      long validUntil = from + lease.remainingValidity().toNanos();
                      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                      holds.add(
                          new Hold(me, from, Math.min(System.nanoTime(), validUntil), phase.get()));
                      lease.close();
                    }
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  } finally {
                    done.countDown();
                  }
                },
                "wake-contender-" + c);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
      }

      sleepPhase(); // 0: healthy
      phase.set(1);
      cluster.proxy(0).disable(); // 1: a master partitioned while clients wait
      sleepPhase();
      cluster.heal();
      phase.set(2);
      long until = System.nanoTime() + PHASE.toNanos(); // 2: connections dropped again and again
      int drops = 0;
      while (System.nanoTime() - until < 0) {
        int victim = 1 + drops % 4;
        cluster.proxy(victim).disable();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        cluster.proxy(victim).enable();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(250));
        drops++;
      }
      cluster.heal();
      stop.set(true);
      assertTrue(done.await(30, TimeUnit.SECONDS), "every contender stopped");

      List<Hold> sorted = new ArrayList<>(holds);
      sorted.sort(Comparator.comparingLong(Hold::from));
      int overlaps = 0;
      for (int i = 1; i < sorted.size(); i++) {
        if (sorted.get(i).from() - sorted.get(i - 1).validUntil() < 0) {
          overlaps++;
        }
      }
      int[][] grants = new int[3][CONTENDERS];
      for (Hold hold : sorted) {
        grants[hold.phase()][hold.contender()]++;
      }
      log.info(
          "wake-ups chaos: {} holds, grants per phase and contender {}, longest wait {} ms,"
              + " {} failed waits, {} drops",
          sorted.size(),
          Arrays.deepToString(grants),
          longestWait.get() / 1_000_000,
          failures.get(),
          drops);
      assertEquals(0, overlaps, "overlapping leases");
      for (int p = 0; p < 3; p++) {
        for (int c = 0; c < CONTENDERS; c++) {
          assertTrue(
              grants[p][c] > 0,
              "contender " + c + " got nothing in phase " + p + ": " + Arrays.deepToString(grants));
        }
      }
      assertEquals(0, failures.get(), "waits that ran out");
      assertTrue(
          longestWait.get() < LONGEST_WAIT.toNanos(),
          "longest wait " + longestWait.get() / 1_000_000 + " ms");

      // The subscriber connections the faults broke are back: a new wait is subscribed again on the
      // masters whose notices it hears (the resource's gate and the next master by name).
      try (Lease held = redlocks.get(0).acquire(key, TTL, Duration.ofSeconds(10))) {
        Thread waiter =
            new Thread(
                () -> {
                  try {
                    redlocks.get(1).acquire(key, TTL, Duration.ofSeconds(30)).close();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                },
                "wake-waiter");
        waiter.setDaemon(true);
        waiter.start();
        NetworkChaos.awaitTrue(
            Duration.ofSeconds(5),
            () -> {
              int subscribed = 0;
              for (int i = 0; i < cluster.size(); i++) {
                List<?> numsub =
                    (List<?>) cluster.admin(i).command("PUBSUB", "NUMSUB", "redlock:wake:" + key);
                if ((Long) numsub.get(1) == 1) {
                  subscribed++;
                }
              }
              return subscribed == 2;
            },
            () -> "the waiter subscribed again on the gate and the next master");
        held.close();
        waiter.join(TimeUnit.SECONDS.toMillis(30));
        assertTrue(!waiter.isAlive(), "the waiter got the lock");
      }
    } finally {
      cluster.heal();
      redlocks.forEach(RedLock::close);
    }
  }

  private static void sleepPhase() {
    long until = System.nanoTime() + PHASE.toNanos();
    for (long left = PHASE.toNanos(); left > 0; left = until - System.nanoTime()) {
      LockSupport.parkNanos(left); // the workload runs meanwhile; this is the phase's length
    }
  }
}
