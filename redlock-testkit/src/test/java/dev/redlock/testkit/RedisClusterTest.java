package dev.redlock.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class RedisClusterTest {

  @Test
  void clusterOfThreeRunsThreeServersOnDistinctPorts() {
    try (RedisCluster cluster = RedisCluster.start(3)) {
      assertEquals(3, cluster.nodes().size());
      Set<Integer> ports =
          cluster.nodes().stream().map(RedisProcess::port).collect(Collectors.toSet());
      assertEquals(3, ports.size());
      Set<Long> pids = cluster.nodes().stream().map(RedisProcess::pid).collect(Collectors.toSet());
      assertEquals(3, pids.size());
      assertEquals(cluster.nodes().stream().map(RedisProcess::uri).toList(), cluster.uris());
      for (RedisProcess node : cluster.nodes()) {
        assertEquals("PONG", node.admin().command("PING"));
      }
    }
  }

  @Test
  void resetRestoresKilledAndPausedNodesAndEmptiesThem() {
    try (RedisCluster cluster = RedisCluster.start(3)) {
      for (RedisProcess node : cluster.nodes()) {
        node.admin().set("k", "v");
        node.admin().command("SCRIPT", "LOAD", "return 1");
      }
      List<String> uris = cluster.uris();
      cluster.node(0).kill();
      cluster.node(1).pause();
      cluster.node(2).stop();

      cluster.reset();

      assertEquals(uris, cluster.uris());
      for (RedisProcess node : cluster.nodes()) {
        assertTrue(node.isRunning());
        assertEquals(0, node.admin().dbSize());
        assertEquals(
            List.of(0L),
            node.admin().command("SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"));
      }
    }
  }

  @Test
  void closingTheClusterKillsEveryNode() {
    RedisCluster cluster = RedisCluster.start(2);
    List<Long> pids = cluster.nodes().stream().map(RedisProcess::pid).toList();

    cluster.close();

    for (long pid : pids) {
      assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
    }
  }

  @Test
  void clusterNeedsAtLeastOneNode() {
    assertThrows(IllegalArgumentException.class, () -> RedisCluster.start(0));
  }
}
