package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.internal.transport.TransportHooks;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Releases that finish, on real masters: a release a master missed is sent again once it is back,
 * an acquire lost in flight is followed by a second release, and the listener hears every master's
 * final answer. The masters keep every write ({@code appendfsync always}), so a restarted master
 * comes back with the lock key a missed release would leave there until its TTL.
 */
class ReleaseFinishesIT {

  @RegisterExtension
  static final RedisClusterExtension redis =
      RedisClusterExtension.withNodes(5, i -> RedisProcess.builder().persistence(true));

  /** Far longer than any wait here: a key still there was left behind, not yet expired. */
  private static final Duration TTL = Duration.ofSeconds(30);

  private final BlockingQueue<List<NodeOutcome>> completed = new LinkedBlockingQueue<>();

  private RedLock redlock(RedisCluster cluster) {
    return RedLocks.admitted(
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(Duration.ofMillis(100))
            .listener(
                new RedLockListener() {
                  @Override
                  public void releaseCompleted(
                      String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                    completed.add(outcomes);
                  }
                })
            .build());
  }

  private List<NodeOutcome> nextCompleted() throws InterruptedException {
    List<NodeOutcome> outcomes = completed.poll(10, TimeUnit.SECONDS);
    assertTrue(outcomes != null, "releaseCompleted within 10 s");
    return outcomes;
  }

  @Test
  void aReleaseAMasterMissedWhileDownReachesItOnceItIsBack(RedisCluster cluster) throws Exception {
    try (RedLock redlock = redlock(cluster)) {
      Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
      RedisAdmin master4 = cluster.node(4).admin();
      Poll.until("the key on master 4", () -> master4.exists("job"));
      cluster.node(4).kill();
      lease.release(); // decided by masters 0 to 3; master 4 cannot be reached
      cluster.node(4).restart(); // replays its append-only file: the key is back
      Poll.until(
          Duration.ofSeconds(5),
          () -> !master4.exists("job"),
          () -> "the release sent again to master 4 once it was back");
      List<NodeOutcome> outcomes = nextCompleted();
      assertEquals(Status.GRANTED, outcomes.get(4).status(), outcomes::toString);
      assertTrue(outcomes.get(4).detail().contains("times"), outcomes.get(4).detail());
    }
  }

  @Test
  void anAcquireLostInFlightIsFollowedByASecondReleaseAndLeavesNoKey(RedisCluster cluster)
      throws Exception {
    try (RedLock redlock = redlock(cluster)) {
      RedisAdmin master4 = cluster.node(4).admin();
      master4.command("CONFIG", "RESETSTAT");
      cluster.node(4).pause(); // its SET will sit unread in its socket
      Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
      // The time is the fault: the connection whose oldest command waits longer than the stall
      // limit is dropped by the next command, with the SET still unread in the paused master.
      LockSupport.parkNanos(
          TransportHooks.stallNanos(Duration.ofMillis(100).toNanos())
              + TimeUnit.MILLISECONDS.toNanos(200));
      lease.release(); // drops master 4's stalled link; the release goes out on a new one
      cluster.node(4).resume();
      List<NodeOutcome> outcomes = nextCompleted();
      // The follow-up release's own answer: it deleted the key the lost SET left (GRANTED), or the
      // SET ran before the first release and there was nothing left (GONE). Anything else (FAILED,
      // TIMED_OUT, PENDING) means the listener was told something other than the final answer.
      assertTrue(
          Set.of(Status.GRANTED, Status.GONE).contains(outcomes.get(4).status()),
          outcomes::toString);
      assertTrue(outcomes.get(4).detail().contains("lost acquire"), outcomes::toString);
      assertEquals(
          "2",
          evalshaCalls(master4),
          "the release, and one more once it was answered, whatever order the master ran the"
              + " lost SET and the first release in");
      assertTrue(!master4.exists("job"), "no orphan key on master 4");
    }
  }

  private static String evalshaCalls(RedisAdmin admin) {
    String stats = String.valueOf(admin.command("INFO", "commandstats"));
    for (String line : stats.split("\r?\n")) {
      if (line.startsWith("cmdstat_evalsha:calls=")) {
        return line.substring("cmdstat_evalsha:calls=".length(), line.indexOf(','));
      }
    }
    return "0";
  }
}
