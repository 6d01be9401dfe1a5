package dev.redlock.micrometer;

import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener.CircuitState;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;

/** The meters of one registry: names, tags and registration, in one place. */
final class Meters {

  static final String ACQUIRE = "redlock.acquire";
  static final String EXTEND = "redlock.extend";
  static final String RELEASE = "redlock.release";
  static final String LEASE_LOST = "redlock.lease.lost";
  static final String NODE_OUTCOMES = "redlock.node.outcomes";
  static final String LEASES_HELD = "redlock.leases.held";
  static final String RENEWALS_IN_FLIGHT = "redlock.renewals.in.flight";

  /** Resilience4j's {@code CircuitBreakerMetricNames.DEFAULT_CIRCUIT_BREAKER_STATE}. */
  static final String BREAKER_STATE = "resilience4j.circuitbreaker.state";

  static final String RESULT = "result";
  static final String RESOURCE = "resource";
  static final String NODE = "node";
  static final String OPERATION = "operation";
  static final String OUTCOME = "outcome";

  /** Resilience4j's {@code TagNames.NAME}: the breaker's name, here the master's host:port. */
  static final String NAME = "name";

  /** The tag Resilience4j gives each state gauge. */
  static final String STATE = "state";

  /** The resource tag's value when the user's function threw or returned null. */
  static final String UNMAPPED = "unmapped";

  /**
   * Resilience4j's {@code CircuitBreaker.State} values, lowercased, in its order: it publishes one
   * gauge per value. The RedLock reports only the first three; the others always read 0.
   */
  private static final String[] BREAKER_STATES = {
    "disabled", "metrics_only", "closed", "open", "forced_open", "half_open"
  };

  private static final CircuitState[] REPORTED = {
    null, null, CircuitState.CLOSED, CircuitState.OPEN, null, CircuitState.HALF_OPEN
  };

  private static final String[] OUTCOMES = new String[NodeOutcome.Status.values().length];

  static {
    for (NodeOutcome.Status status : NodeOutcome.Status.values()) {
      OUTCOMES[status.ordinal()] = status.name().toLowerCase(Locale.ROOT);
    }
  }

  /** The three kinds of round, as the {@code operation} tag. */
  enum Operation {
    ACQUIRE,
    EXTEND,
    RELEASE;

    final String tag = name().toLowerCase(Locale.ROOT);
  }

  private final MeterRegistry registry;
  private final Tags tags;
  private final Function<? super String, String> resourceTag; // null: no resource tag
  private final Consumer<RuntimeException> failures;
  private final EventMeters untagged; // null when resources are tagged
  private final ConcurrentHashMap<String, EventMeters> byResource = new ConcurrentHashMap<>();

  /** Registers the meters that need no event: the timers and counter without a resource tag. */
  Meters(
      MeterRegistry registry,
      Tags tags,
      Function<? super String, String> resourceTag,
      Consumer<RuntimeException> failures) {
    this.registry = registry;
    this.tags = tags;
    this.resourceTag = resourceTag;
    this.failures = failures;
    this.untagged = resourceTag == null ? new EventMeters(registry, tags) : null;
  }

  /**
   * The timers and lost counter for {@code resource}: the same ones unless resources are tagged.
   */
  EventMeters events(String resource) {
    if (resourceTag == null) {
      return untagged;
    }
    String value = resourceTagValue(resource);
    EventMeters meters = byResource.get(value);
    return meters != null
        ? meters
        : byResource.computeIfAbsent(value, v -> new EventMeters(registry, tags.and(RESOURCE, v)));
  }

  private String resourceTagValue(String resource) {
    try {
      String value = resourceTag.apply(resource);
      if (value != null) {
        return value;
      }
      failures.accept(new NullPointerException("the resource tag function returned null"));
    } catch (RuntimeException e) {
      failures.accept(e);
    }
    return UNMAPPED;
  }

  /** Registers (or finds) one master's counter of one outcome in one kind of round. */
  Counter outcomes(String node, Operation operation, NodeOutcome.Status status) {
    return Counter.builder(NODE_OUTCOMES)
        .description("What each master answered in each round")
        .tag(NODE, node)
        .tag(OPERATION, operation.tag)
        .tag(OUTCOME, OUTCOMES[status.ordinal()])
        .tags(tags)
        .register(registry);
  }

  /** The gauges read from the RedLock itself; held weakly, as Micrometer does by default. */
  void redlockGauges(RedLock redlock) {
    Gauge.builder(LEASES_HELD, redlock, RedLock::leasesHeld)
        .description("Leases granted and neither released nor lost")
        .tags(tags)
        .register(registry);
    Gauge.builder(RENEWALS_IN_FLIGHT, redlock, RedLock::renewalsInFlight)
        .description("Automatic renewal rounds sent and not yet decided")
        .tags(tags)
        .register(registry);
  }

  /**
   * Registers (or finds) one master's breaker state gauges, as Resilience4j's {@code
   * TaggedCircuitBreakerMetrics} does: one per state, 1 for the current one.
   */
  void breakerGauges(MetricsListener.Master master) {
    for (int i = 0; i < BREAKER_STATES.length; i++) {
      CircuitState state = REPORTED[i];
      Gauge.builder(BREAKER_STATE, master, m -> m.breaker == state ? 1 : 0)
          .description("The states of the circuit breaker")
          .tag(NAME, master.name)
          .tag(STATE, BREAKER_STATES[i])
          .tags(tags)
          .register(registry);
    }
  }
}
