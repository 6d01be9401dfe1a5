package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import java.time.Duration;
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

  @Test
  void waitersKeepGettingTheLockThroughAPartitionAndLostNotices(ChaosCluster cluster)
      throws Exception {
    List<RedLock> redlocks = HandAround.redlocks(cluster);
    try {
      NetworkChaos.warmUp(cluster, redlocks.get(0));
      String key = NetworkChaos.resource("wake-ups");
      HandAround run = HandAround.start(redlocks, key);

      HandAround.sleepPhase(); // 0: healthy
      run.phase(1);
      cluster.proxy(0).disable(); // 1: a master partitioned while clients wait
      HandAround.sleepPhase();
      cluster.heal();
      run.phase(2);
      long until =
          System.nanoTime() + HandAround.PHASE.toNanos(); // 2: connections dropped again and again
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

      log.info("wake-ups chaos: {}, {} drops", run.summary(3), drops);
      run.assertEveryoneHeldTheLockInEveryPhase(3);

      // The subscriber connections the faults broke are back: a new wait is subscribed again on the
      // masters whose notices it hears (the resource's gate and the next master by name).
      HandAround.whileOneWaits(
          redlocks,
          key,
          () -> {
            int subscribed = 0;
            for (int i = 0; i < cluster.size(); i++) {
              List<?> numsub =
                  (List<?>) cluster.admin(i).command("PUBSUB", "NUMSUB", "redlock:wake:" + key);
              if ((Long) numsub.get(1) == 1) {
                subscribed++;
              }
            }
            // The gate and the next master; every master while the gate's breaker, tripped by
            // the drops, is not yet closed (the resource then has no gate).
            return subscribed >= 2;
          },
          () -> "the waiter subscribed again on the gate and the next master");
    } finally {
      cluster.heal();
      redlocks.forEach(RedLock::close);
    }
  }
}
