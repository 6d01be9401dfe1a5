package dev.redlock.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLockListener;
import dev.redlock.RedLockListener.CircuitState;
import dev.redlock.RedLockListener.Denial;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The listener's events become the documented meters; driven directly, without masters. */
class RedLockMetricsTest {

  private static final String A = "10.0.0.1:6379";
  private static final String B = "10.0.0.2:6379";
  private static final String C = "10.0.0.3:6379";

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @Test
  void eachRoundIsTimedUnderItsResult() {
    RedLockListener events = bound(RedLockMetrics.create());

    events.acquired("r", granted(), Duration.ofMillis(3));
    events.denied("r", Denial.TAKEN, taken(), Duration.ofMillis(5));
    events.denied("r", Denial.TAKEN, taken(), Duration.ofMillis(5));
    events.denied("r", Denial.UNAVAILABLE, failed(), Duration.ofMillis(7));
    events.extended("r", granted(), Duration.ofMillis(11));
    events.notExtended("r", failed(), Duration.ofMillis(13));
    events.released("r", granted(), Duration.ofMillis(17));

    assertTimer("redlock.acquire", "result", "acquired", 1, 3);
    assertTimer("redlock.acquire", "result", "taken", 2, 10);
    assertTimer("redlock.acquire", "result", "unavailable", 1, 7);
    assertTimer("redlock.extend", "result", "extended", 1, 11);
    assertTimer("redlock.extend", "result", "not_extended", 1, 13);
    assertTimer("redlock.extend", "result", "lost", 0, 0);
    Timer release = registry.get("redlock.release").timer();
    assertEquals(1, release.count());
    assertEquals(17, release.totalTime(TimeUnit.MILLISECONDS), 0.001);
    assertEquals(0, registry.get("redlock.lease.lost").counter().count());
  }

  @Test
  void aLostLeaseIsCountedAndItsFailedExtendTimedButRunningOutIsNoRound() {
    RedLockListener events = bound(RedLockMetrics.create());

    events.lost("r", outcomes(Status.GONE, Status.GONE, Status.GRANTED), Duration.ofMillis(4));
    events.lost("r", List.of(), Duration.ZERO); // ran out before a renewal got through

    assertEquals(2, registry.get("redlock.lease.lost").counter().count());
    assertTimer("redlock.extend", "result", "lost", 1, 4);
    assertEquals(1, outcomeCount(A, "extend", "gone"));
    assertEquals(1, outcomeCount(B, "extend", "gone"));
    assertEquals(1, outcomeCount(C, "extend", "granted"));
  }

  @Test
  void eachMastersOutcomeIsCountedPerOperation() {
    RedLockListener events = bound(RedLockMetrics.create());

    events.acquired("r", outcomes(Status.GRANTED, Status.GRANTED, Status.TIMED_OUT), ms(1));
    events.denied(
        "r", Denial.UNAVAILABLE, outcomes(Status.FAILED, Status.PENDING, Status.TIMED_OUT), ms(1));
    events.extended("r", outcomes(Status.GRANTED, Status.GRANTED, Status.RESTARTED), ms(1));
    // The release round is decided by a majority (C still PENDING); each master's final answer
    // comes with releaseCompleted, and only that is counted.
    events.released("r", outcomes(Status.GRANTED, Status.GONE, Status.PENDING), ms(1));
    events.releaseCompleted("r", outcomes(Status.GRANTED, Status.GONE, Status.TAKEN), ms(2));

    assertEquals(1, outcomeCount(A, "acquire", "granted"));
    assertEquals(1, outcomeCount(A, "acquire", "failed"));
    assertEquals(1, outcomeCount(B, "acquire", "pending"));
    assertEquals(2, outcomeCount(C, "acquire", "timed_out"));
    assertEquals(1, outcomeCount(C, "extend", "restarted"));
    assertEquals(1, outcomeCount(B, "release", "gone"));
    assertEquals(1, outcomeCount(C, "release", "taken"));
    assertNull(
        registry
            .find("redlock.node.outcomes")
            .tags("node", C, "operation", "release", "outcome", "pending")
            .counter(),
        "the round's PENDING is not a master's answer");
    // Registered at first use only: no zero series for combinations never seen.
    assertNull(
        registry.find("redlock.node.outcomes").tags("node", A, "outcome", "restarted").counter());
    Set<String> keys =
        registry.get("redlock.node.outcomes").counters().stream()
            .flatMap(c -> c.getId().getTags().stream())
            .map(Tag::getKey)
            .collect(Collectors.toSet());
    assertEquals(Set.of("node", "operation", "outcome"), keys);
  }

  @Test
  void breakerStateMetersAppearAtTheFirstChangeForEveryMasterSeenAsResilience4jPublishesThem() {
    RedLockListener events = bound(RedLockMetrics.create());
    events.acquired("r", granted(), ms(1));
    assertTrue(registry.find("resilience4j.circuitbreaker.state").gauges().isEmpty());

    events.circuitChanged(A, CircuitState.OPEN);

    assertEquals(18, registry.find("resilience4j.circuitbreaker.state").gauges().size());
    assertBreaker(A, "open");
    assertBreaker(B, "closed");
    assertBreaker(C, "closed");

    events.circuitChanged(A, CircuitState.HALF_OPEN);
    assertBreaker(A, "half_open");
    events.circuitChanged(A, CircuitState.CLOSED);
    assertBreaker(A, "closed");

    String d = "10.0.0.4:6379"; // a master first seen after the change gets its meters at once
    events.releaseCompleted("r", List.of(new NodeOutcome(d, Status.GRANTED, ms(1), "")), ms(1));
    assertBreaker(d, "closed");
  }

  @Test
  void breakerChangesBeforeBindingShowOnceBound() {
    RedLockMetrics metrics = RedLockMetrics.create();
    RedLockListener events = metrics.listener();
    events.acquired("r", granted(), ms(1));
    events.circuitChanged(B, CircuitState.OPEN);
    assertTrue(registry.getMeters().isEmpty());

    metrics.bindTo(registry);

    assertBreaker(A, "closed");
    assertBreaker(B, "open");
    assertBreaker(C, "closed");
    // The rounds before binding were not recorded.
    assertEquals(0, registry.get("redlock.acquire").tag("result", "acquired").timer().count());
    assertNull(registry.find("redlock.node.outcomes").counter());
  }

  @Test
  void resourceNamesAreNotTagsByDefaultSoTheMeterCountStaysBounded() {
    RedLockListener events = bound(RedLockMetrics.create());
    cycle(events, "orders:0");
    int afterOne = registry.getMeters().size();

    for (int i = 1; i < 1_000; i++) {
      cycle(events, "orders:" + i);
    }

    assertEquals(afterOne, registry.getMeters().size());
    assertEquals(1_000, registry.get("redlock.acquire").tag("result", "acquired").timer().count());
    for (Meter meter : registry.getMeters()) {
      assertNull(meter.getId().getTag("resource"), meter.getId().toString());
    }
  }

  @Test
  void resourceTagsWhenOptedInCarryTheMappedValue() {
    RedLockListener events =
        bound(RedLockMetrics.builder().resourceTag(r -> r.split(":", 2)[0]).build());

    cycle(events, "orders:1");
    cycle(events, "orders:2");
    cycle(events, "invoices:1");

    assertEquals(
        2,
        registry
            .get("redlock.acquire")
            .tags("result", "acquired", "resource", "orders")
            .timer()
            .count());
    assertEquals(1, registry.get("redlock.release").tag("resource", "invoices").timer().count());
    assertEquals(2, registry.get("redlock.lease.lost").tag("resource", "orders").counter().count());
    // Eight meters per value; none without the tag; the per-master counters never carry it.
    assertEquals(
        8,
        registry.find("redlock.acquire").tag("resource", "orders").meters().size()
            + registry.find("redlock.extend").tag("resource", "orders").meters().size()
            + registry.find("redlock.release").tag("resource", "orders").meters().size()
            + registry.find("redlock.lease.lost").tag("resource", "orders").meters().size());
    assertEquals(
        2 * 8,
        registry.getMeters().stream().filter(m -> m.getId().getTag("resource") != null).count());
    for (Meter meter : registry.find("redlock.node.outcomes").meters()) {
      assertNull(meter.getId().getTag("resource"));
    }
  }

  @Test
  void aResourceTagFunctionThatFailsRecordsUnderUnmappedAndWarnsOnce() {
    RedLockListener events =
        bound(
            RedLockMetrics.builder()
                .resourceTag(
                    r -> {
                      if (r.equals("null")) {
                        return null;
                      }
                      throw new IllegalStateException("no tag for " + r);
                    })
                .build());

    String log =
        stderrOf(
            () -> {
              events.acquired("boom", granted(), ms(1));
              events.acquired("null", granted(), ms(1));
            });

    assertEquals(
        2,
        registry
            .get("redlock.acquire")
            .tags("result", "acquired", "resource", "unmapped")
            .timer()
            .count());
    assertEquals(1, log.split("WARN", -1).length - 1, log);
    assertTrue(log.contains("no tag for boom"), log);
  }

  @Test
  void extraTagsGoOnEveryMeterAndCannotReplaceTheMetersOwn() {
    RedLockListener events =
        bound(RedLockMetrics.builder().tags(Tags.of("cluster", "orders")).build());
    cycle(events, "r");
    events.circuitChanged(A, CircuitState.OPEN);

    for (Meter meter : registry.getMeters()) {
      assertEquals("orders", meter.getId().getTag("cluster"), meter.getId().toString());
    }
    for (String own :
        List.of("result", "resource", "node", "operation", "outcome", "name", "state")) {
      assertThrows(
          IllegalArgumentException.class,
          () -> RedLockMetrics.builder().tags(Tags.of(own, "x")),
          own);
    }
  }

  @Test
  void bindingTheSameRegistryTwiceIsHarmlessAndAnotherIsRefused() {
    RedLockMetrics metrics = RedLockMetrics.create();
    metrics.bindTo(registry);
    int meters = registry.getMeters().size();

    metrics.bindTo(registry);
    metrics.listener().acquired("r", granted(), ms(1));

    assertEquals(1, registry.get("redlock.acquire").tag("result", "acquired").timer().count());
    assertTrue(registry.getMeters().size() > meters, "the per-master counters came with the round");
    MeterRegistry other = new SimpleMeterRegistry();
    IllegalStateException refused =
        assertThrows(IllegalStateException.class, () -> metrics.bindTo(other));
    assertTrue(refused.getMessage().contains("CompositeMeterRegistry"), refused.getMessage());
    assertTrue(other.getMeters().isEmpty());
  }

  @Test
  void argumentsAreChecked() {
    RedLockMetrics metrics = RedLockMetrics.create();
    assertThrows(NullPointerException.class, () -> metrics.bindTo(null));
    assertThrows(NullPointerException.class, () -> metrics.build(null));
    assertThrows(NullPointerException.class, () -> RedLockMetrics.builder().tags(null));
    assertThrows(NullPointerException.class, () -> RedLockMetrics.builder().resourceTag(null));
  }

  @Test
  void aMeterThatCannotBeRegisteredIsLeftOutWithOneWarningAndNothingThrown() {
    // Some registries refuse a meter (Prometheus's: same name, other tag keys); a filter stands in.
    registry
        .config()
        .meterFilter(
            new MeterFilter() {
              @Override
              public Meter.Id map(Meter.Id id) {
                if (id.getName().equals("redlock.node.outcomes")) {
                  throw new IllegalArgumentException("refused " + id.getName());
                }
                return id;
              }
            });
    RedLockListener events = bound(RedLockMetrics.create());

    String log =
        stderrOf(
            () -> {
              events.acquired("r", granted(), ms(1));
              events.acquired("r", granted(), ms(1));
            });

    assertEquals(1, log.split("WARN", -1).length - 1, log);
    assertTrue(log.contains("refused redlock.node.outcomes"), log);
    assertNull(registry.find("redlock.node.outcomes").counter());
  }

  @Test
  void recordingAnEventAllocatesNothingOnceItsMetersExist() {
    java.lang.management.ThreadMXBean threads =
        java.lang.management.ManagementFactory.getThreadMXBean();
    assumeTrue(
        threads instanceof com.sun.management.ThreadMXBean
            && ((com.sun.management.ThreadMXBean) threads).isThreadAllocatedMemorySupported(),
        "this JVM does not measure a thread's allocations");
    com.sun.management.ThreadMXBean allocations = (com.sun.management.ThreadMXBean) threads;
    RedLockListener events = bound(RedLockMetrics.create());
    List<NodeOutcome> outcomes = granted();
    Duration elapsed = ms(1);
    for (int i = 0; i < 20_000; i++) { // registers the meters; lets the JIT settle
      events.acquired("r", outcomes, elapsed);
      events.extended("r", outcomes, elapsed);
      events.released("r", outcomes, elapsed);
      events.releaseCompleted("r", outcomes, elapsed);
    }
    long thread = Thread.currentThread().getId();

    long before = allocations.getThreadAllocatedBytes(thread);
    for (int i = 0; i < 10_000; i++) {
      events.acquired("r", outcomes, elapsed);
      events.extended("r", outcomes, elapsed);
      events.released("r", outcomes, elapsed);
      events.releaseCompleted("r", outcomes, elapsed);
    }
    long allocated = allocations.getThreadAllocatedBytes(thread) - before;

    // 40,000 events: even 8 bytes each would be 320 KB; the measurement itself costs a few.
    assertTrue(allocated < 4_096, allocated + " bytes allocated for 40,000 events");
    assertEquals(30_000, registry.get("redlock.acquire").tag("result", "acquired").timer().count());
  }

  @Test
  void theListenerSaysWhoItIs() {
    RedLockMetrics metrics = RedLockMetrics.create();
    assertEquals("RedLockMetrics", metrics.listener().toString());
    assertSame(metrics.listener(), metrics.listener());
  }

  // --- helpers ---

  private RedLockListener bound(RedLockMetrics metrics) {
    metrics.bindTo(registry);
    return metrics.listener();
  }

  /** One acquire, extend, loss and release of {@code resource}, as a RedLock reports them. */
  private static void cycle(RedLockListener events, String resource) {
    events.acquired(resource, granted(), ms(1));
    events.extended(resource, granted(), ms(1));
    events.lost(resource, List.of(), Duration.ZERO);
    events.released(resource, granted(), ms(1));
  }

  private void assertTimer(String name, String key, String value, long count, double totalMillis) {
    Timer timer = registry.get(name).tag(key, value).timer();
    assertEquals(count, timer.count(), name + " " + value);
    assertEquals(totalMillis, timer.totalTime(TimeUnit.MILLISECONDS), 0.001, name + " " + value);
  }

  private double outcomeCount(String node, String operation, String outcome) {
    return registry
        .get("redlock.node.outcomes")
        .tags("node", node, "operation", operation, "outcome", outcome)
        .counter()
        .count();
  }

  /** The master's breaker reads 1 in {@code current} and 0 in each of the other five states. */
  private void assertBreaker(String node, String current) {
    List<String> states =
        List.of("closed", "open", "half_open", "disabled", "metrics_only", "forced_open");
    for (String state : states) {
      double value =
          registry
              .get("resilience4j.circuitbreaker.state")
              .tags("name", node, "state", state)
              .gauge()
              .value();
      assertEquals(state.equals(current) ? 1 : 0, value, node + " " + state);
    }
  }

  private static List<NodeOutcome> granted() {
    return outcomes(Status.GRANTED, Status.GRANTED, Status.GRANTED);
  }

  private static List<NodeOutcome> taken() {
    return outcomes(Status.TAKEN, Status.TAKEN, Status.GRANTED);
  }

  private static List<NodeOutcome> failed() {
    return outcomes(Status.FAILED, Status.TIMED_OUT, Status.GRANTED);
  }

  private static List<NodeOutcome> outcomes(Status a, Status b, Status c) {
    List<NodeOutcome> list = new ArrayList<>();
    list.add(new NodeOutcome(A, a, ms(1), a == Status.FAILED ? "connection refused" : ""));
    list.add(new NodeOutcome(B, b, ms(1), b == Status.FAILED ? "connection refused" : ""));
    list.add(new NodeOutcome(C, c, ms(1), c == Status.FAILED ? "connection refused" : ""));
    return List.copyOf(list);
  }

  private static Duration ms(long millis) {
    return Duration.ofMillis(millis);
  }

  /** What slf4j-simple wrote to System.err while {@code body} ran. */
  static String stderrOf(Runnable body) {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      body.run();
    } finally {
      System.setErr(original);
    }
    return captured.toString(StandardCharsets.UTF_8);
  }
}
