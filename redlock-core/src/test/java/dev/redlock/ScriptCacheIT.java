package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A master that loses its script cache ({@code SCRIPT FLUSH}, a restart) must not break the rule
 * that no command overtakes an earlier one of the same lease on the same master.
 */
class ScriptCacheIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @Test
  void anAcquireRunsNoScriptSoAFlushedCacheCostsItNoVote(RedisCluster cluster) {
    try (RedLock redlock = RedLockIT.redlock(cluster, 5)) {
      for (int i = 0; i < 5; i++) {
        cluster.node(i).admin().scriptFlush();
      }
      Lease lease = redlock.tryAcquire("job", RedLockIT.TTL).orElseThrow();
      for (int i = 0; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        RedLockIT.eventually("the key on master " + i, () -> admin.exists("job"));
      }
      lease.close();
    }
  }

  @Test
  void noscriptExtendIsAFailedVoteAndIsNotSentAgain(RedisCluster cluster) {
    try (RedLock redlock = RedLockIT.redlock(cluster, 5)) {
      Lease lease = redlock.tryAcquire("job", RedLockIT.TTL).orElseThrow();
      for (int i = 0; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        RedLockIT.eventually("the key on master " + i, () -> admin.exists("job"));
      }
      // Masters 3 and 4 lost their scripts.
      cluster.node(3).admin().scriptFlush();
      cluster.node(4).admin().scriptFlush();
      assertTrue(lease.extend(Duration.ofSeconds(30)), "extended by masters 0 to 2");
      // A barrier: its answers come after those of everything queued before it on each master.
      List<NodeOutcome> barrier = redlock.admitFreshNodes();
      for (int i = 0; i < 5; i++) {
        assertNotEquals(Status.TIMED_OUT, barrier.get(i).status(), "the barrier was answered");
        long pttl = cluster.node(i).admin().pttl("job");
        if (i < 3) {
          assertTrue(pttl > RedLockIT.TTL.toMillis(), "extended on master " + i + ": " + pttl);
        } else {
          assertTrue(
              pttl <= RedLockIT.TTL.toMillis(),
              "the NOSCRIPT extend was a failed vote, not sent again, on master "
                  + i
                  + ": "
                  + pttl);
        }
      }
      // The scripts were reloaded at once: the next extend reaches every master.
      assertTrue(lease.extend(Duration.ofSeconds(40)));
      redlock.admitFreshNodes();
      for (int i = 0; i < 5; i++) {
        long pttl = cluster.node(i).admin().pttl("job");
        assertTrue(
            pttl > Duration.ofSeconds(30).toMillis(), "extended on master " + i + ": " + pttl);
      }
      lease.close();
    }
  }

  @Test
  void scriptFlushesBetweenRoundsLeaveNoLockBehind(RedisCluster cluster) {
    Random random = new Random(42);
    int granted = 0;
    try (RedLock redlock = RedLockIT.redlock(cluster, 5)) {
      for (int round = 0; round < 60; round++) {
        if (round % 3 == 0) {
          for (int i = 0; i < 5; i++) {
            if (random.nextBoolean()) {
              cluster.node(i).admin().scriptFlush();
            }
          }
        }
        Optional<Lease> lease;
        try {
          lease = redlock.tryAcquire("job-" + round, RedLockIT.TTL);
        } catch (QuorumUnavailableException e) {
          continue; // a majority had just lost its scripts: a failed vote each, reloaded now
        }
        if (lease.isPresent()) {
          granted++;
          lease.get().extend(RedLockIT.TTL);
          lease.get().close();
        }
      }
      assertTrue(granted >= 30, "most rounds were granted: " + granted);
      RedLockIT.eventually(
          "no lock key is left on any master",
          () -> {
            for (int i = 0; i < 5; i++) {
              if (!RedLockIT.userKeys(cluster, i).isEmpty()) {
                return false;
              }
            }
            return true;
          });
    }
  }

  static String script(String name) throws IOException {
    try (InputStream in = LuaScript.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
