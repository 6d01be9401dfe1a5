package dev.redlock.readme;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The README's API tour runs as written against real masters. */
class ReadmeExamplesIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @Test
  void theLeaseExamplesRunAsWritten(RedisCluster cluster) throws Exception {
    List<String> writes = new ArrayList<>();
    try (RedLock redlock = ApiTour.create(cluster.uris())) {
      redlock.admitFreshNodes();
      ApiTour.leases(redlock, (what, token) -> writes.add(what + " " + token), List.of("a", "b"));
    }
    assertEquals(3, writes.size(), "one write under acquire, two under withLock: " + writes);
  }

  @Test
  void theSetExampleRunsAsWritten(RedisCluster cluster) throws Exception {
    List<Long> tokens = new ArrayList<>();
    try (RedLock redlock = ApiTour.create(cluster.uris())) {
      redlock.admitFreshNodes();
      ApiTour.sets(redlock, (what, token) -> tokens.add(token));
      ApiTour.sets(redlock, (what, token) -> tokens.add(token));
      assertTrue(redlock.tryAcquire("cart:3", Duration.ofSeconds(1)).isPresent(), "released");
    }
    assertEquals(2, tokens.size());
    assertTrue(tokens.get(1) > tokens.get(0), "fencing tokens rise: " + tokens);
  }

  @Test
  void theAsyncExampleRunsAsWritten(RedisCluster cluster) throws Exception {
    List<String> done = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(1);
    try (RedLock redlock = ApiTour.create(cluster.uris())) {
      redlock.admitFreshNodes();
      ApiTour.async(redlock, pool, lease -> done.add(lease.resource() + " " + lease.isValid()))
          .get(10, java.util.concurrent.TimeUnit.SECONDS);
      assertEquals(List.of("orders:42 true"), done);
      dev.redlock.testkit.Poll.until(
          "released on every master",
          () -> cluster.nodes().stream().noneMatch(node -> node.admin().exists("orders:42")));
    } finally {
      pool.shutdown();
    }
  }

  @Test
  void theLockExampleRunsAsWritten(RedisCluster cluster) {
    List<Long> tokens = new ArrayList<>();
    try (RedLock redlock = ApiTour.create(cluster.uris())) {
      redlock.admitFreshNodes();
      ApiTour.lock(redlock, (what, token) -> tokens.add(token));
      ApiTour.lock(redlock, (what, token) -> tokens.add(token));
    }
    assertEquals(2, tokens.size());
    assertTrue(tokens.get(1) > tokens.get(0), "fencing tokens rise: " + tokens);
  }
}
