package dev.redlock.simulation;

import static dev.redlock.simulation.SimHarness.MASTERS;
import static dev.redlock.simulation.SimHarness.NODE_TIMEOUT_NANOS;
import static dev.redlock.simulation.SimHarness.TTL;

import dev.redlock.RedLock;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The end of a run, for the bounded-state checker: every partition healed and every pause over,
 * then a quiet long enough for everything the library made of a resource to be gone.
 */
final class Quiet {

  private Quiet() {}

  /**
   * The end of a run: every partition healed, every pause over and every async wait ended, then
   * {@link #leftAfterQuiet} (keys live longer on a master whose clock stepped back by {@code
   * steppedBackMicros}; a slowed client's timers and waits last longer in true time).
   */
  static void quiet(
      Simulation sim,
      List<SimMaster> masters,
      List<SimPubSub> pubsubs,
      Checker check,
      long[][] healsAt,
      long pausedUntil,
      boolean slowed,
      long steppedBackMicros) {
    long healed = Math.max(pausedUntil, check.waitsEndBy);
    for (long[] row : healsAt) {
      for (long at : row) {
        healed = Math.max(healed, at);
      }
    }
    sim.runFor(Math.max(0, healed - sim.now()));
    long quiet = (long) (QUIET_NANOS * (slowed ? 2 : 1.01)) + steppedBackMicros * 1_000;
    leftAfterQuiet(sim, masters, pubsubs, check, quiet);
  }

  /** The keys every master keeps whatever the resources: the fence counter and the guard's. */
  static final Set<String> BOOKKEEPING =
      Set.of("redlock:fence", "redlock:dataset-born", "redlock:admitted");

  /**
   * How long after the last operation nothing of a resource may be left on a master: the lock's key
   * lives its TTL, a queue's keys until its last waiter goes stale (two retry delays and two node
   * timeouts after its last ask), a subscription until its last waiter leaves (at most a {@code
   * maxWait} and a round), all but the TTL since the waits began.
   */
  static final long QUIET_NANOS =
      TTL.toNanos()
          + 2 * RedLock.DEFAULT_RETRY_DELAY.toNanos()
          + 4 * NODE_TIMEOUT_NANOS
          + 300_000_000;

  /**
   * Bounded state: {@code quietNanos} after the last operation, with every partition healed, every
   * master keeps only {@link #BOOKKEEPING}, and no channel is subscribed.
   */
  private static void leftAfterQuiet(
      Simulation sim,
      List<SimMaster> masters,
      List<SimPubSub> pubsubs,
      Checker check,
      long quietNanos) {
    check.releasingAll();
    sim.runFor(quietNanos);
    for (int m = 0; m < MASTERS; m++) {
      java.util.SortedSet<String> left = masters.get(m).keyNames();
      left.removeAll(BOOKKEEPING);
      Map<String, Integer> channels = pubsubs.get(m).channels();
      if ((!left.isEmpty() || !channels.isEmpty()) && check.state == null) {
        check.state =
            String.format(
                "seed %d: %d ms after the last operation master %d keeps %s and subscriptions %s",
                check.seed, quietNanos / 1_000_000, m, left, channels);
      }
    }
  }
}
