package dev.redlock.micrometer;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import dev.redlock.RedLockListener;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * Micrometer meters for one {@link RedLock}, fed by its listener.
 *
 * <p>A RedLock has one listener, set on its builder before it is built, while the gauges need the
 * built RedLock; so this class builds the RedLock itself and the wiring is one path:
 *
 * <pre>{@code
 * RedLockMetrics metrics = RedLockMetrics.create();
 * RedLock redlock = metrics.build(RedLock.builder().nodes(uris)); // sets the listener, then builds
 * metrics.bindTo(registry); // before or after build; Spring Boot binds MeterBinder beans itself
 * }</pre>
 *
 * <h2>Meters</h2>
 *
 * <table>
 *   <caption>The meters and their tags</caption>
 *   <tr><th>Name</th><th>Type</th><th>Tags</th><th>What it measures</th></tr>
 *   <tr><td>{@code redlock.acquire}</td><td>timer</td><td>{@code result}: {@code acquired},
 *       {@code taken}, {@code unavailable}</td><td>Each acquire round and its elapsed time (an
 *       {@code acquire} with a wait records every round it ran).</td></tr>
 *   <tr><td>{@code redlock.extend}</td><td>timer</td><td>{@code result}: {@code extended},
 *       {@code not_extended}, {@code lost}</td><td>Each extend round, manual or automatic.</td></tr>
 *   <tr><td>{@code redlock.release}</td><td>timer</td><td></td><td>Each release round (also
 *       {@code releaseAfter}).</td></tr>
 *   <tr><td>{@code redlock.lease.lost}</td><td>counter</td><td></td><td>Leases lost: a majority
 *       refused an extend, or the lease ran out before a renewal got through.</td></tr>
 *   <tr><td>{@code redlock.node.outcomes}</td><td>counter</td><td>{@code node} ({@code
 *       host:port}), {@code operation} ({@code acquire}, {@code extend}, {@code release}), {@code
 *       outcome} (a {@link dev.redlock.NodeOutcome.Status}, lowercased)</td><td>What each master
 *       answered in each round (for a release, each master's final answer, told by {@link
 *       RedLockListener#releaseCompleted} once every master answered or was given up, since the
 *       round itself is decided by a majority); registered at a combination's first
 *       occurrence.</td></tr>
 *   <tr><td>{@code redlock.leases.held}</td><td>gauge</td><td></td><td>{@link
 *       RedLock#leasesHeld()}.</td></tr>
 *   <tr><td>{@code redlock.renewals.in.flight}</td><td>gauge</td><td></td><td>{@link
 *       RedLock#renewalsInFlight()}.</td></tr>
 *   <tr><td>{@code resilience4j.circuitbreaker.state}</td><td>gauge</td><td>{@code name} ({@code
 *       host:port}), {@code state}</td><td>1 for a master's current breaker state, 0 for the other
 *       five; the meters Resilience4j's {@code TaggedCircuitBreakerMetrics} publishes.</td></tr>
 * </table>
 *
 * <p>Every meter also carries the {@linkplain Builder#tags extra tags}, and the timers and the lost
 * counter carry a {@code resource} tag when {@linkplain Builder#resourceTag opted in}. Without it
 * the number of meters is bounded by the configuration (the masters), whatever the resources.
 *
 * <p><b>Circuit breakers.</b> The RedLock's breakers are internal, so Resilience4j's own binding
 * cannot see them; this class publishes the same state meters from the listener's {@link
 * RedLockListener#circuitChanged} events. Breakers exist only when enabled on the RedLock and are
 * seen only when they change, so the state meters appear at the first change of any breaker: from
 * then on, every master that has answered a round (or changed) has them, a master that never
 * changed reading {@code closed}. The {@code resilience4j.circuitbreaker.calls}, {@code
 * buffered.calls}, {@code failure.rate} and similar meters are not published.
 *
 * <p><b>Thread-safety.</b> Instances are thread-safe: {@link #build} and {@link #bindTo} may be
 * called from any threads in either order, each for one RedLock and one registry. Events are
 * recorded from the moment both are done (breaker states are followed from {@link #build} on).
 * Recording does no I/O, allocates nothing once an event's meters exist (unless resources are
 * tagged) and never throws into the RedLock: a meter that cannot be registered is logged at WARN
 * once (then at DEBUG) and the event left out.
 */
public final class RedLockMetrics implements MeterBinder {

  /** Tag keys that this class sets itself, refused as extra tags. */
  private static final Set<String> OWN_TAG_KEYS =
      Set.of(
          Meters.RESULT,
          Meters.RESOURCE,
          Meters.NODE,
          Meters.OPERATION,
          Meters.OUTCOME,
          Meters.NAME,
          Meters.STATE);

  private final Tags tags;
  private final Function<? super String, String> resourceTag; // null: no resource tag
  private final MetricsListener listener = new MetricsListener();
  private final ReentrantLock setup = new ReentrantLock();
  private RedLock redlock; // guarded by setup
  private MeterRegistry registry; // guarded by setup
  private Meters meters; // guarded by setup

  private RedLockMetrics(Builder builder) {
    this.tags = builder.tags;
    this.resourceTag = builder.resourceTag;
  }

  /**
   * Returns metrics with the defaults: no extra tags, no resource tag.
   *
   * @return new metrics, to {@link #build} a RedLock with and {@link #bindTo} a registry
   */
  public static RedLockMetrics create() {
    return builder().build();
  }

  /**
   * Returns a builder for metrics with extra tags or a resource tag.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Builds a RedLock whose events these metrics record: sets {@code redlockBuilder}'s listener
   * (replacing any set before; see {@link #build(RedLockBuilder, RedLockListener)} to keep one),
   * builds it, and follows its leases and renewals with the gauges.
   *
   * @param redlockBuilder the configured builder
   * @return the RedLock, as {@link RedLockBuilder#build()} returns it; the caller closes it
   * @throws NullPointerException if {@code redlockBuilder} is null
   * @throws IllegalStateException if these metrics already built a RedLock (use one instance per
   *     RedLock, with distinct {@linkplain Builder#tags extra tags})
   * @throws IllegalArgumentException as {@link RedLockBuilder#build()} does; these metrics can then
   *     build again
   */
  public RedLock build(RedLockBuilder redlockBuilder) {
    return build(redlockBuilder, MetricsListener.NONE);
  }

  /**
   * Builds a RedLock as {@link #build(RedLockBuilder)} does, whose listener records the metrics and
   * then passes each event on to {@code listener}. A RedLock has one listener; this is how to keep
   * your own next to the metrics. Exceptions thrown by {@code listener} are handled as the RedLock
   * handles a throwing listener (logged at WARN and ignored); the metrics are recorded before it is
   * called.
   *
   * @param redlockBuilder the configured builder
   * @param listener the listener to tell after the metrics are recorded
   * @return the RedLock, as {@link RedLockBuilder#build()} returns it; the caller closes it
   * @throws NullPointerException if an argument is null
   * @throws IllegalStateException if these metrics already built a RedLock
   * @throws IllegalArgumentException as {@link RedLockBuilder#build()} does; these metrics can then
   *     build again
   */
  public RedLock build(RedLockBuilder redlockBuilder, RedLockListener listener) {
    requireNonNull(redlockBuilder, "redlockBuilder");
    requireNonNull(listener, "listener");
    setup.lock();
    try {
      if (redlock != null) {
        throw new IllegalStateException(
            "these metrics already record " + redlock + "; create one RedLockMetrics per RedLock");
      }
      this.listener.forwardTo(listener);
      RedLock built = redlockBuilder.listener(this.listener).build();
      redlock = built;
      if (meters != null) {
        meters.redlockGauges(built);
      }
      return built;
    } finally {
      setup.unlock();
    }
  }

  /**
   * Registers the meters with {@code registry} and starts recording into it. May come before or
   * after {@link #build}; events before both are not recorded. Binding the same registry again does
   * nothing.
   *
   * @param registry the registry; to publish to several, bind a {@code CompositeMeterRegistry}
   * @throws NullPointerException if {@code registry} is null
   * @throws IllegalStateException if these metrics are already bound to another registry
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    requireNonNull(registry, "registry");
    setup.lock();
    try {
      if (this.registry == registry) {
        return;
      }
      if (this.registry != null) {
        throw new IllegalStateException(
            "these metrics are already bound to "
                + this.registry
                + "; bind a CompositeMeterRegistry to publish to several");
      }
      Meters bound = new Meters(registry, tags, resourceTag, listener::failed);
      if (redlock != null) {
        bound.redlockGauges(redlock);
      }
      this.registry = registry;
      this.meters = bound;
      listener.bind(bound);
    } finally {
      setup.unlock();
    }
  }

  /** The listener, for tests that drive events without masters. */
  RedLockListener listener() {
    return listener;
  }

  @Override
  public String toString() {
    return "RedLockMetrics{tags=" + tags + ", resourceTag=" + (resourceTag != null) + "}";
  }

  /** Configures {@link RedLockMetrics}. Not thread-safe; {@link #build()} copies what it needs. */
  public static final class Builder {

    private Tags tags = Tags.empty();
    private Function<? super String, String> resourceTag;

    private Builder() {}

    /**
     * Sets extra tags for every meter, for instance to tell apart the meters of two RedLocks in one
     * registry ({@code Tags.of("cluster", "orders")}). Replaces earlier extra tags. The breaker
     * state gauges carry them too: where Resilience4j's own binding publishes into the same
     * Prometheus registry, its breakers need the same tag keys.
     *
     * @param tags the tags; their keys must differ from the tags the meters have of their own
     *     ({@code result}, {@code resource}, {@code node}, {@code operation}, {@code outcome},
     *     {@code name}, {@code state})
     * @return this builder
     * @throws NullPointerException if {@code tags} or one of them is null
     * @throws IllegalArgumentException if a key is one of the meters' own
     */
    public Builder tags(Iterable<Tag> tags) {
      Tags checked = Tags.of(requireNonNull(tags, "tags"));
      for (Tag tag : checked) {
        if (OWN_TAG_KEYS.contains(tag.getKey())) {
          throw new IllegalArgumentException(
              "tag key " + tag.getKey() + " is set by RedLockMetrics itself");
        }
      }
      this.tags = checked;
      return this;
    }

    /**
     * Tags the timers and the lost-lease counter with {@code resource}, whose value is {@code
     * tagValue} applied to the resource name. Off by default: every distinct value makes new time
     * series (eight per value), so give a function with few results, such as the part of the name
     * before its first {@code ':'}, or {@link Function#identity()} only when the resources are a
     * small fixed set. The function is called on the RedLock's threads for every event and must be
     * quick; if it throws or returns null, the event is recorded under the value {@code "unmapped"}
     * and a WARN is logged (once).
     *
     * @param tagValue maps a resource name to its tag value
     * @return this builder
     * @throws NullPointerException if {@code tagValue} is null
     */
    public Builder resourceTag(Function<? super String, String> tagValue) {
      this.resourceTag = requireNonNull(tagValue, "tagValue");
      return this;
    }

    /**
     * Returns new metrics with these settings.
     *
     * @return new metrics, to {@link RedLockMetrics#build} a RedLock with and {@link
     *     RedLockMetrics#bindTo} a registry
     */
    public RedLockMetrics build() {
      return new RedLockMetrics(this);
    }
  }
}
