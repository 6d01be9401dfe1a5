package dev.redlock.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisClusterExtensionTest {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(2);

  @Test
  @Order(1)
  void extensionResolvesTheClusterAsAParameter(RedisCluster cluster) {
    assertSame(redis.cluster(), cluster);
    assertEquals(2, cluster.nodes().size());
  }

  @Test
  @Order(2)
  void aTestLeavesDataAndAKilledNodeBehind(RedisCluster cluster) {
    cluster.node(0).admin().set("left", "behind");
    cluster.node(1).admin().set("left", "behind");
    cluster.node(1).kill();
  }

  @Test
  @Order(3)
  void nextTestFindsEveryNodeRunningAndEmpty(RedisCluster cluster) {
    for (RedisProcess node : cluster.nodes()) {
      assertEquals(0, node.admin().dbSize());
    }
  }

  @Nested
  class NestedTests {
    @Test
    void nestedClassSharesTheEnclosingCluster(RedisCluster cluster) {
      assertSame(redis.cluster(), cluster);
      assertEquals(0, cluster.node(1).admin().dbSize());
    }
  }
}
