package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
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
  void noscriptAcquireIsAFailedVoteAndNeverRunsAfterItsOwnRelease(RedisCluster cluster)
      throws IOException {
    try (RedLock redlock = RedLockIT.redlock(cluster, 5)) {
      for (int i = 0; i < 3; i++) {
        cluster.node(i).admin().command("SET", "job", "another-client", "PX", "10000");
      }
      // Masters 3 and 4 lost their scripts but the release, which a later release reloaded.
      for (int i = 3; i < 5; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        admin.scriptFlush();
        admin.command("SCRIPT", "LOAD", script("release.lua"));
      }
      // Paused, they read the acquire and the release queued behind it only after the round.
      cluster.node(3).pause();
      cluster.node(4).pause();
      assertTrue(redlock.tryAcquire("job", RedLockIT.TTL).isEmpty(), "held by another client");
      cluster.node(3).resume();
      cluster.node(4).resume();
      // A barrier: its answers come after those of everything queued before it on each master.
      List<NodeOutcome> barrier = redlock.admitFreshNodes();
      for (int i = 3; i < 5; i++) {
        assertNotEquals(Status.TIMED_OUT, barrier.get(i).status(), "the barrier was answered");
        assertFalse(
            cluster.node(i).admin().exists("job"),
            "the NOSCRIPT acquire was not re-sent behind its release on master " + i);
      }
      assertEquals(
          "another-client", cluster.node(0).admin().get("job"), "the holder was untouched");
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
