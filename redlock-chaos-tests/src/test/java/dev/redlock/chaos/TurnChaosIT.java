package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.testkit.RedisProcess;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Waiters in turn while the master they queue at fails: contenders, each with its own RedLock, hand
 * one lock around (wake-ups on, the default, so waiters queue at the resource's gate master) while
 * that gate is partitioned (its connections refused), then silent (what is sent to it held, never
 * answered), then healed, then killed and restarted empty (its queue, its keys and its fence
 * counters lost; the restart guard then keeps its vote out). The queue is a hint, never the lock:
 * no two leases overlap, every contender keeps getting the lock in every phase, and no wait runs
 * out. In the healthy phase the waiters are seen queued at the gate, so the phases after it test
 * the gate's failure and not a lock that never used it.
 */
class TurnChaosIT {

  private static final Logger log = LoggerFactory.getLogger(TurnChaosIT.class);

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final int PHASES = 5;

  @Test
  void waitersKeepGettingTheLockWhenTheirGateIsPartitionedOrRestartedEmpty(ChaosCluster cluster)
      throws Exception {
    List<RedLock> redlocks = HandAround.redlocks(cluster);
    try {
      NetworkChaos.warmUp(cluster, redlocks.get(0));
      String key = NetworkChaos.resource("turns");
      int gate = gateOf(cluster, redlocks, key);
      RedisProcess gateProcess = cluster.process(gate).orElse(null);
      Assumptions.assumeTrue(gateProcess != null, "killing a master needs the local backend");

      HandAround run = HandAround.start(redlocks, key);
      int longestQueue = 0; // 0: healthy, the queue at the gate sampled meanwhile
      long until = System.nanoTime() + HandAround.PHASE.toNanos();
      while (System.nanoTime() - until < 0) {
        longestQueue = Math.max(longestQueue, (int) queued(cluster, gate, key));
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
      }
      run.phase(1);
      cluster.proxy(gate).disable(); // 1: the gate partitioned while clients queue there
      HandAround.sleepPhase();
      cluster.heal();
      run.phase(2);
      // 2: the gate silent: what is sent to it is held, never answered, never refused
      cluster.proxy(gate).toxics().bandwidth("requests-held", ToxicDirection.UPSTREAM, 0);
      HandAround.sleepPhase();
      run.phase(3);
      cluster.heal(); // 3: healed
      HandAround.sleepPhase();
      run.phase(4);
      gateProcess.kill(); // 4: the gate killed, and restarted empty
      gateProcess.restart();
      HandAround.sleepPhase();
      assertTrue(run.stop(Duration.ofSeconds(30)), "every contender stopped");

      log.info(
          "turn chaos: gate {}, longest queue {}, {}", gate, longestQueue, run.summary(PHASES));
      assertTrue(longestQueue > 0, "no waiter was ever seen queued at the gate");
      run.assertEveryoneHeldTheLockInEveryPhase(PHASES);
    } finally {
      cluster.heal();
      redlocks.forEach(RedLock::close);
    }
  }

  /** The master where waiters on {@code key} queue: found by making one wait and looking. */
  private static int gateOf(ChaosCluster cluster, List<RedLock> redlocks, String key)
      throws InterruptedException {
    AtomicInteger found = new AtomicInteger(-1);
    HandAround.whileOneWaits(
        redlocks,
        key,
        () -> {
          for (int i = 0; i < cluster.size(); i++) {
            if (queued(cluster, i, key) > 0) {
              found.set(i);
              return true;
            }
          }
          return false;
        },
        () -> "a waiter queued at some master");
    return found.get();
  }

  private static long queued(ChaosCluster cluster, int node, String key) {
    return (Long) cluster.admin(node).command("ZCARD", "redlock:queue:" + key);
  }
}
