package dev.redlock.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.LeaseLock;
import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The meters follow a RedLock on three real masters, one or two of them down or paused. */
class RedLockMetricsIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final Duration TTL = Duration.ofSeconds(10);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @Test
  void acquireDenialExtendAndReleaseAreTimedAndNothingIsLoggedAtWarn(RedisCluster cluster) {
    RedLockMetrics metrics = RedLockMetrics.create();
    String log =
        RedLockMetricsTest.stderrOf(
            () -> {
              try (RedLock redlock = redlock(metrics, cluster)) {
                metrics.bindTo(registry);
                try (Lease lease = redlock.tryAcquire("orders:1", TTL).orElseThrow()) {
                  assertTrue(redlock.tryAcquire("orders:1", TTL).isEmpty(), "held");
                  assertTrue(lease.extend(TTL));
                }
              }
            });

    assertFalse(log.contains("WARN") || log.contains("ERROR"), log);
    assertEquals(1, timerCount("redlock.acquire", "result", "acquired"));
    assertEquals(1, timerCount("redlock.acquire", "result", "taken"));
    assertEquals(0, timerCount("redlock.acquire", "result", "unavailable"));
    assertEquals(1, timerCount("redlock.extend", "result", "extended"));
    assertEquals(1, registry.get("redlock.release").timer().count());
    assertTrue(registry.get("redlock.release").timer().totalTime(TimeUnit.NANOSECONDS) > 0);
    assertEquals(0, registry.get("redlock.lease.lost").counter().count());
    for (int i = 0; i < 3; i++) { // every master has an outcome in every round
      String node = node(cluster, i);
      assertEquals(2, total(node, "acquire"), node);
      assertEquals(1, total(node, "extend"), node);
      assertEquals(1, total(node, "release"), node);
    }
    assertTrue(sum("acquire", "granted") >= 2, "a quorum granted the lease");
    assertTrue(sum("acquire", "taken") >= 2, "a quorum said it was held");
    assertTrue(sum("extend", "granted") >= 2, "a quorum extended it");
    assertTrue(sum("release", "granted") >= 2, "a quorum released it");
    assertEquals(0, registry.get("redlock.leases.held").gauge().value());
  }

  @Test
  void aLeaseLostToAMajorityIsCountedWithTheMastersThatSaidGone(RedisCluster cluster) {
    RedLockMetrics metrics = RedLockMetrics.create();
    metrics.bindTo(registry);
    try (RedLock redlock = redlock(metrics, cluster)) {
      Lease lease = redlock.tryAcquire("orders:2", TTL).orElseThrow();
      cluster.node(0).admin().command("DEL", "orders:2");
      cluster.node(1).admin().command("DEL", "orders:2");

      assertFalse(lease.extend(TTL));

      assertTrue(lease.onLost().toCompletableFuture().isDone());
      assertEquals(1, registry.get("redlock.lease.lost").counter().count());
      assertEquals(1, timerCount("redlock.extend", "result", "lost"));
      assertEquals(0, timerCount("redlock.extend", "result", "extended"));
      assertEquals(1, outcomes(node(cluster, 0), "extend", "gone"));
      assertEquals(1, outcomes(node(cluster, 1), "extend", "gone"));
      assertEquals(0, registry.get("redlock.leases.held").gauge().value());
    }
  }

  @Test
  void aMasterDownShowsInItsOutcomesAndItsBreakerStateUntilItIsBack(RedisCluster cluster) {
    Queue<String> changes = new ConcurrentLinkedQueue<>();
    RedLockListener recording =
        new RedLockListener() {
          @Override
          public void circuitChanged(String node, CircuitState state) {
            changes.add(node + "=" + state);
          }
        };
    RedLockMetrics metrics = RedLockMetrics.create();
    metrics.bindTo(registry);
    String down = node(cluster, 0);
    try (RedLock redlock =
        admitted(
            metrics.build(
                RedLock.builder()
                    .nodes(cluster.uris())
                    .nodeTimeout(Duration.ofMillis(200))
                    .circuitBreakerWait(Duration.ofMillis(300)),
                recording))) {
      cluster.node(0).stop();

      // The gauge and the forwarded listener are both told on the event thread, the gauge first:
      // wait for both, as a reader seeing the gauge may be a moment ahead of the listener.
      eventually(
          "the breaker of " + down + " opens, and the forwarded listener hears it",
          () -> {
            acquireAndRelease(redlock, "orders:3");
            return breaker(down, "open") == 1 && changes.contains(down + "=OPEN");
          });

      double unanswered =
          outcomes(down, "acquire", "failed") + outcomes(down, "acquire", "timed_out");
      assertTrue(unanswered >= 1, "the failures that opened the breaker");
      assertEquals(0, outcomes(down, "acquire", "granted"));
      assertEquals(
          timerCount("redlock.acquire", "result", "acquired"),
          unanswered + outcomes(down, "acquire", "pending"),
          "every round has the down master's outcome");
      assertEquals(0, timerCount("redlock.acquire", "result", "unavailable"), "2 of 3 still grant");
      assertEquals(0, breaker(down, "closed"));
      assertEquals(1, breaker(node(cluster, 1), "closed"), "the healthy masters read closed");
      assertEquals(1, breaker(node(cluster, 2), "closed"));

      cluster.node(0).restart();
      eventually(
          "the breaker of " + down + " closes after a probe, and the forwarded listener hears it",
          () -> {
            acquireAndRelease(redlock, "orders:3");
            return breaker(down, "closed") == 1 && changes.contains(down + "=CLOSED");
          });

      assertEquals(0, breaker(down, "open"));
      assertEquals(0, breaker(down, "half_open"));
      assertTrue(changes.contains(down + "=HALF_OPEN"), String.valueOf(changes));
      assertTrue(changes.contains(down + "=CLOSED"), String.valueOf(changes));
    }
  }

  @Test
  void aMajorityDownIsCountedAsUnavailable(RedisCluster cluster) {
    RedLockMetrics metrics = RedLockMetrics.create();
    metrics.bindTo(registry);
    try (RedLock redlock = redlock(metrics, cluster)) {
      cluster.node(1).stop();
      cluster.node(2).stop();

      assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("orders:4", TTL));

      assertEquals(1, timerCount("redlock.acquire", "result", "unavailable"));
      assertEquals(0, timerCount("redlock.acquire", "result", "taken"));
      for (int i = 1; i <= 2; i++) {
        String node = node(cluster, i);
        assertEquals(
            1, outcomes(node, "acquire", "failed") + outcomes(node, "acquire", "timed_out"), node);
      }
    }
  }

  @Test
  void theGaugesFollowLeasesHeldAndRenewalsInFlight(RedisCluster cluster) throws Exception {
    RedLockMetrics metrics = RedLockMetrics.create();
    metrics.bindTo(registry); // before build: the gauges are registered when the RedLock exists
    assertNull(registry.find("redlock.leases.held").gauge());
    try (RedLock redlock =
        admitted(
            metrics.build(
                RedLock.builder().nodes(cluster.uris()).nodeTimeout(Duration.ofMillis(300))))) {
      LeaseLock lock = redlock.newLock("orders:5", TTL);
      lock.lock();
      assertEquals(1, gauge("redlock.leases.held"));
      Lease other = redlock.tryAcquire("orders:6", TTL).orElseThrow();
      assertEquals(2, gauge("redlock.leases.held"));
      other.close();
      assertEquals(1, gauge("redlock.leases.held"));
      lock.unlock();
      assertEquals(0, gauge("redlock.leases.held"));

      Duration ttl = Duration.ofSeconds(3); // the first renewal is due with a third of it left
      redlock.withLock(
          "orders:7",
          ttl,
          Duration.ofSeconds(1),
          lease -> {
            assertEquals(1, gauge("redlock.leases.held"));
            assertEquals(0, gauge("redlock.renewals.in.flight"));
            try {
              cluster.node(1).pause(); // a majority hangs: renewal rounds wait the node timeout
              cluster.node(2).pause();
              eventually("a renewal is in flight", () -> gauge("redlock.renewals.in.flight") == 1);
              eventually(
                  "a renewal times out",
                  () -> timerCount("redlock.extend", "result", "not_extended") >= 1);
            } finally {
              cluster.node(1).resume();
              cluster.node(2).resume();
            }
            eventually(
                "a renewal gets through",
                () -> timerCount("redlock.extend", "result", "extended") >= 1);
            eventually("no renewal in flight", () -> gauge("redlock.renewals.in.flight") == 0);
            lease.ensureValid();
          });

      assertTrue(timerCount("redlock.extend", "result", "not_extended") >= 1);
      assertTrue(outcomes(node(cluster, 1), "extend", "timed_out") >= 1);
      assertEquals(0, gauge("redlock.leases.held"));
      assertEquals(0, registry.get("redlock.lease.lost").counter().count());
    }
  }

  @Test
  void resourceNamesAreNotTagsByDefaultAndTheMeterCountStaysBounded(RedisCluster cluster) {
    RedLockMetrics metrics = RedLockMetrics.create();
    try (RedLock redlock = redlock(metrics, cluster)) {
      metrics.bindTo(registry);
      for (int i = 0; i < 200; i++) {
        acquireAndRelease(redlock, "orders:" + i);
      }

      // Per-master counters appear at a combination's first occurrence (a PENDING here, a
      // TIMED_OUT there), but never more than the configuration allows: the 8 round meters, 2
      // gauges and 3 masters x 3 operations x 7 outcomes.
      int bound = 8 + 2 + 3 * 3 * NodeOutcome.Status.values().length;
      assertTrue(
          registry.getMeters().size() <= bound,
          "no meter per resource: " + registry.getMeters().size());
      assertEquals(200, timerCount("redlock.acquire", "result", "acquired"));
      for (Meter meter : registry.getMeters()) {
        assertNull(meter.getId().getTag("resource"), meter.getId().toString());
      }
    }
  }

  @Test
  void resourceTagsAppearWhenOptedIn(RedisCluster cluster) {
    RedLockMetrics metrics = RedLockMetrics.builder().resourceTag(r -> r.split(":", 2)[0]).build();
    try (RedLock redlock = redlock(metrics, cluster)) {
      metrics.bindTo(registry);
      acquireAndRelease(redlock, "orders:1");
      acquireAndRelease(redlock, "orders:2");
      acquireAndRelease(redlock, "invoices:1");

      assertEquals(
          2,
          registry
              .get("redlock.acquire")
              .tags("result", "acquired", "resource", "orders")
              .timer()
              .count());
      assertEquals(1, registry.get("redlock.release").tag("resource", "invoices").timer().count());
      assertNull(registry.find("redlock.acquire").tag("resource", "orders:1").timer());
    }
  }

  @Test
  void oneMetricsRecordsOneRedLock(RedisCluster cluster) {
    RedLockMetrics metrics = RedLockMetrics.create();
    try (RedLock redlock = redlock(metrics, cluster)) {
      IllegalStateException refused =
          assertThrows(
              IllegalStateException.class,
              () -> metrics.build(RedLock.builder().nodes(cluster.uris())));
      assertTrue(
          refused.getMessage().contains("one RedLockMetrics per RedLock"), refused.getMessage());
      assertTrue(redlock.tryAcquire("orders:9", TTL).isPresent(), "the first one still works");
    }
  }

  @Test
  void aForwardedListenerThatThrowsCostsNoMeasurement(RedisCluster cluster) {
    RedLockListener throwing =
        new RedLockListener() {
          @Override
          public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
            throw new IllegalStateException("the user's listener failed");
          }
        };
    RedLockMetrics metrics = RedLockMetrics.create();
    metrics.bindTo(registry);
    String log =
        RedLockMetricsTest.stderrOf(
            () -> {
              try (RedLock redlock =
                  admitted(metrics.build(RedLock.builder().nodes(cluster.uris()), throwing))) {
                assertTrue(redlock.tryAcquire("orders:8", TTL).isPresent());
              }
            });

    assertEquals(1, timerCount("redlock.acquire", "result", "acquired"));
    assertTrue(log.contains("the user's listener failed"), "the core logged it: " + log);
  }

  // --- helpers ---

  private static RedLock redlock(RedLockMetrics metrics, RedisCluster cluster) {
    return admitted(
        metrics.build(RedLock.builder().nodes(cluster.uris()).nodeTimeout(Duration.ofMillis(200))));
  }

  private static RedLock admitted(RedLock redlock) {
    redlock.admitFreshNodes(); // the masters are brand new (see the core README's restart guard)
    return redlock;
  }

  private static void acquireAndRelease(RedLock redlock, String resource) {
    Optional<Lease> lease = redlock.tryAcquire(resource, TTL);
    lease.ifPresent(Lease::close);
  }

  private static String node(RedisCluster cluster, int i) {
    return cluster.node(i).host() + ":" + cluster.node(i).port();
  }

  private long timerCount(String name, String key, String value) {
    return registry.get(name).tag(key, value).timer().count();
  }

  private double outcomes(String node, String operation, String outcome) {
    Counter counter =
        registry
            .find("redlock.node.outcomes")
            .tags("node", node, "operation", operation, "outcome", outcome)
            .counter();
    return counter == null ? 0 : counter.count();
  }

  /** One master's outcomes of all kinds in one operation. */
  private double total(String node, String operation) {
    return registry
        .find("redlock.node.outcomes")
        .tags("node", node, "operation", operation)
        .counters()
        .stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  /** All masters' count of one outcome in one operation. */
  private double sum(String operation, String outcome) {
    return registry
        .find("redlock.node.outcomes")
        .tags("operation", operation, "outcome", outcome)
        .counters()
        .stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  private double gauge(String name) {
    return registry.get(name).gauge().value();
  }

  private double breaker(String node, String state) {
    return registry
        .find("resilience4j.circuitbreaker.state")
        .tags("name", node, "state", state)
        .gauges()
        .stream()
        .mapToDouble(g -> g.value())
        .sum();
  }

  /** Polls until the condition holds, or fails after ten seconds. */
  private static void eventually(String what, BooleanSupplier condition) {
    Poll.until(Duration.ofSeconds(10), condition, () -> what);
  }
}
