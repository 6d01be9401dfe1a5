package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Inspection.Check;
import dev.redlock.Inspection.Verdict;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The preflight against real redis-server masters configured to fail each rule. */
class PreflightIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static Check check(Inspection inspection, int master, String name) {
    return inspection.masters().get(master).checks().stream()
        .filter(c -> c.name().equals(name))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void freshStandaloneMastersPassOnceAdmitted(RedisCluster cluster) {
    try (RedLock redlock = RedLocks.redlock(cluster, 3)) {
      Inspection inspection = redlock.inspect();
      System.out.print(inspection);
      for (int i = 0; i < 3; i++) {
        assertEquals(Verdict.PASS, check(inspection, i, "reachable").verdict());
        assertTrue(check(inspection, i, "reachable").detail().startsWith("Redis "));
        assertEquals(Verdict.PASS, check(inspection, i, "role").verdict());
        assertEquals(Verdict.PASS, check(inspection, i, "cluster").verdict());
        assertEquals(Verdict.PASS, check(inspection, i, "eviction").verdict());
        assertEquals(Verdict.PASS, check(inspection, i, "clock").verdict());
        assertEquals(Verdict.PASS, check(inspection, i, "uptime").verdict(), "admitted");
        assertEquals(Verdict.PASS, check(inspection, i, "admission").verdict());
      }
    }
  }

  @Test
  void aReplicaFailsItsMasterWarnsAndAnEvictingMasterFails(RedisCluster cluster) {
    try (RedisProcess replica = RedisProcess.start();
        RedisProcess evicting = RedisProcess.start()) {
      replica
          .admin()
          .command("REPLICAOF", cluster.node(0).host(), Integer.toString(cluster.node(0).port()));
      evicting.admin().command("CONFIG", "SET", "maxmemory", "10mb");
      evicting.admin().command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
      RedLocks.eventually(
          "the replica is connected",
          () ->
              String.valueOf(cluster.node(0).admin().command("INFO", "replication"))
                  .contains("connected_slaves:1"));
      try (RedLock redlock =
          RedLock.builder()
              .nodes(List.of(cluster.uris().get(0), replica.uri(), evicting.uri()))
              .build()) {
        Inspection inspection = redlock.inspect();
        assertEquals(Verdict.WARN, check(inspection, 0, "role").verdict(), inspection::toString);
        assertEquals(Verdict.FAIL, check(inspection, 1, "role").verdict());
        assertEquals(Verdict.FAIL, check(inspection, 2, "eviction").verdict());
        assertTrue(check(inspection, 2, "eviction").detail().contains("allkeys-lru"));
        assertEquals(Verdict.FAIL, inspection.verdict());
      } finally {
        replica.admin().command("REPLICAOF", "NO", "ONE");
      }
    }
  }

  @Test
  void clusterModeFails() throws IOException {
    Path dir = Files.createTempDirectory("redlock-cluster-node");
    try (RedisProcess node =
        RedisProcess.builder()
            .arguments(
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                dir.resolve("nodes.conf").toString())
            .start()) {
      try (RedLock redlock = RedLock.builder().node(node.uri()).build()) {
        Inspection inspection = redlock.inspect();
        assertEquals(Verdict.FAIL, check(inspection, 0, "cluster").verdict());
      }
    }
  }

  @Test
  void aUserWhoseAclForbidsConfigAndInfoGetsUnknownNotACrash(RedisCluster cluster) {
    RedisProcess node = cluster.node(0);
    node.admin()
        .command("ACL", "SETUSER", "locker", "on", ">secret", "~*", "+@all", "-config", "-info");
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .node("redis://locker:secret@" + node.host() + ":" + node.port())
                .build())) {
      Inspection inspection = redlock.inspect();
      assertEquals(Verdict.PASS, check(inspection, 0, "reachable").verdict(), inspection::toString);
      for (String name : List.of("role", "cluster", "eviction", "persistence", "uptime")) {
        assertEquals(Verdict.UNKNOWN, check(inspection, 0, name).verdict(), name);
        assertTrue(check(inspection, 0, name).detail().contains("NOPERM"), name);
      }
      assertEquals(Verdict.PASS, check(inspection, 0, "clock").verdict());
      // Without INFO the restart guard cannot see this master's restarts: it does not vote...
      QuorumUnavailableException refused =
          assertThrows(
              QuorumUnavailableException.class,
              () -> redlock.tryAcquire("job", Duration.ofSeconds(5)));
      assertTrue(refused.outcomes().get(0).detail().contains("INFO refused"), refused::getMessage);
    }
    // ... and with the guard off it still locks.
    try (RedLock unguarded =
        RedLock.builder()
            .node("redis://locker:secret@" + node.host() + ":" + node.port())
            .restartGuard(false)
            .build()) {
      assertTrue(unguarded.tryAcquire("job", Duration.ofSeconds(5)).isPresent(), "still locks");
    } finally {
      node.admin().command("ACL", "DELUSER", "locker");
    }
  }

  @Test
  void anUnreachableMasterFailsReachableWithinItsBound(RedisCluster cluster) throws IOException {
    int closedPort;
    try (java.net.ServerSocket probe =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      closedPort = probe.getLocalPort();
    }
    try (RedLock redlock =
        RedLock.builder()
            .nodes(List.of(cluster.uris().get(0), "redis://127.0.0.1:" + closedPort))
            .build()) {
      long start = System.nanoTime();
      Inspection inspection = redlock.inspect();
      long tookMillis = (System.nanoTime() - start) / 1_000_000;
      assertEquals(Verdict.FAIL, check(inspection, 1, "reachable").verdict());
      assertTrue(tookMillis < 2000, "bounded: " + tookMillis + " ms");
    }
  }
}
