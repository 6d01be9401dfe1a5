package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
      HandAround run = HandAround.start(redlocks, key, TTL);

      HandAround.sleep(PHASE); // 0: healthy
      run.phase(1);
      cluster.proxy(0).disable(); // 1: a master partitioned while clients wait
      HandAround.sleep(PHASE);
      cluster.heal();
      run.phase(2);
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
      assertTrue(run.stop(Duration.ofSeconds(30)), "every contender stopped");

      int[][] grants = run.grants(3);
      log.info(
          "wake-ups chaos: {} holds, grants per phase and contender {}, longest wait {} ms,"
              + " {} failed waits, {} drops",
          run.holds(),
          Arrays.deepToString(grants),
          run.longestWaitNanos() / 1_000_000,
          run.failures(),
          drops);
      assertEquals(0, run.overlaps(), "overlapping leases");
      for (int p = 0; p < 3; p++) {
        for (int c = 0; c < CONTENDERS; c++) {
          assertTrue(
              grants[p][c] > 0,
              "contender " + c + " got nothing in phase " + p + ": " + Arrays.deepToString(grants));
        }
      }
      assertEquals(0, run.failures(), "waits that ran out");
      assertTrue(
          run.longestWaitNanos() < LONGEST_WAIT.toNanos(),
          "longest wait " + run.longestWaitNanos() / 1_000_000 + " ms");

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
}
