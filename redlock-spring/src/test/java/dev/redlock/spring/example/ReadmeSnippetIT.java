package dev.redlock.spring.example;

import static dev.redlock.NodeOutcome.Status.GRANTED;
import static dev.redlock.NodeOutcome.Status.TAKEN;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

/** The README's Spring Integration snippet ({@link LeaderElectionConfig}) in a Spring context. */
class ReadmeSnippetIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  @Test
  void theReadmeConfigurationElectsALeaderAndReleasesItOnClose(RedisCluster cluster)
      throws InterruptedException {
    try (RedLock operator = RedLock.builder().nodes(cluster.uris()).build()) {
      // Once, for brand-new masters (see "Restart guard" in the README); retried, because on a
      // loaded machine one round can miss a master.
      awaitTrue(
          () ->
              operator.admitFreshNodes().stream()
                  .allMatch(o -> o.status() == GRANTED || o.status() == TAKEN),
          "masters admitted");
    }
    CountDownLatch granted = new CountDownLatch(1);
    AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
    context
        .getEnvironment()
        .getPropertySources()
        .addFirst(
            new MapPropertySource(
                "test", Map.of("redlock.nodes", String.join(",", cluster.uris()))));
    context.register(LeaderElectionConfig.class);
    context.addApplicationListener(
        event -> {
          if (event instanceof OnGrantedEvent) {
            granted.countDown();
          }
        });
    try {
      context.refresh();

      assertTrue(granted.await(10, TimeUnit.SECONDS), "no leader");
      assertTrue(context.getBean(LockRegistryLeaderInitiator.class).getContext().isLeader());
      awaitTrue(() -> holders(cluster, "my-app:leader").size() == 3, "held on every master");
    } finally {
      context.close();
    }
    // Released by the stopping leader before the RedLock closed (RedLockRegistry.destroy waits
    // for it), not left to expire: the next leader need not wait out the 10 s TTL.
    awaitTrue(() -> holders(cluster, "my-app:leader").isEmpty(), "released on every master");
  }

  private static List<Integer> holders(RedisCluster cluster, String resource) {
    return IntStream.range(0, cluster.nodes().size())
        .filter(i -> cluster.node(i).admin().exists(resource))
        .boxed()
        .toList();
  }

  private static void awaitTrue(BooleanSupplier condition, String what) {
    Poll.until(what, condition);
  }
}
