package dev.redlock.micrometer;

import static java.util.concurrent.TimeUnit.NANOSECONDS;

import dev.redlock.NodeOutcome;
import dev.redlock.RedLockListener;
import io.micrometer.core.instrument.Counter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listener {@link RedLockMetrics} gives the RedLock: turns each event into meter updates, then
 * passes it on to the user's listener, if any.
 *
 * <p>The common path allocates nothing: the meters of the fixed tag sets are registered at bind
 * time, each master's counters at their first use, and masters are found by name in a map (a {@code
 * String} caches its hash). Nothing here throws into the RedLock: a failure to register a meter is
 * logged once and the event left out.
 *
 * <p>Breaker state meters need to know that breakers exist, which only a {@code circuitChanged}
 * event tells. Every master is remembered from its first appearance (in an outcome or a change),
 * bound or not, so that the first change can register the state meters of all masters seen so far.
 * Registration is idempotent, so the races between binding, a master's first appearance and the
 * first change only ever register a meter twice, never miss one: each side writes (meters, the map,
 * {@code breakersSeen}) before it reads the other's.
 */
final class MetricsListener implements RedLockListener {

  private static final Logger log = LoggerFactory.getLogger(RedLockMetrics.class);

  static final RedLockListener NONE = new RedLockListener() {};

  private final ConcurrentHashMap<String, Master> masters = new ConcurrentHashMap<>();
  private final AtomicBoolean warned = new AtomicBoolean();
  private volatile Meters meters; // null until bound
  private volatile RedLockListener next = NONE;
  private volatile boolean breakersSeen;

  void forwardTo(RedLockListener listener) {
    this.next = listener;
  }

  void bind(Meters bound) {
    this.meters = bound;
    if (breakersSeen) {
      for (Master master : masters.values()) {
        bound.breakerGauges(master);
      }
    }
  }

  @Override
  public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
    try {
      Meters m = count(Meters.Operation.ACQUIRE, outcomes);
      if (m != null) {
        m.events(resource).acquired.record(elapsed.toNanos(), NANOSECONDS);
      }
    } catch (RuntimeException e) {
      failed(e);
    }
    next.acquired(resource, outcomes, elapsed);
  }

  @Override
  public void denied(String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
    try {
      Meters m = count(Meters.Operation.ACQUIRE, outcomes);
      if (m != null) {
        EventMeters e = m.events(resource);
        (reason == Denial.TAKEN ? e.taken : e.unavailable).record(elapsed.toNanos(), NANOSECONDS);
      }
    } catch (RuntimeException e) {
      failed(e);
    }
    next.denied(resource, reason, outcomes, elapsed);
  }

  @Override
  public void extended(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
    try {
      Meters m = count(Meters.Operation.EXTEND, outcomes);
      if (m != null) {
        m.events(resource).extended.record(elapsed.toNanos(), NANOSECONDS);
      }
    } catch (RuntimeException e) {
      failed(e);
    }
    next.extended(resource, outcomes, elapsed);
  }

  @Override
  public void notExtended(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
    try {
      Meters m = count(Meters.Operation.EXTEND, outcomes);
      if (m != null) {
        m.events(resource).notExtended.record(elapsed.toNanos(), NANOSECONDS);
      }
    } catch (RuntimeException e) {
      failed(e);
    }
    next.notExtended(resource, outcomes, elapsed);
  }

  @Override
  public void lost(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
    try {
      Meters m = count(Meters.Operation.EXTEND, outcomes);
      if (m != null) {
        EventMeters e = m.events(resource);
        e.lost.increment();
        if (!outcomes.isEmpty()) { // lost by an extend round, not by running out before one
          e.extendLost.record(elapsed.toNanos(), NANOSECONDS);
        }
      }
    } catch (RuntimeException e) {
      failed(e);
    }
    next.lost(resource, outcomes, elapsed);
  }

  @Override
  public void released(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
    try {
      Meters m = meters;
      if (m != null) {
        m.events(resource).released.record(elapsed.toNanos(), NANOSECONDS);
      }
    } catch (RuntimeException e) {
      failed(e);
    }
    next.released(resource, outcomes, elapsed);
  }

  /**
   * Counts each master's final answer to a release: the round is decided by a majority, so the
   * others' answers come here, after {@link #released}.
   */
  @Override
  public void releaseCompleted(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
    try {
      count(Meters.Operation.RELEASE, outcomes);
    } catch (RuntimeException e) {
      failed(e);
    }
    next.releaseCompleted(resource, outcomes, elapsed);
  }

  @Override
  public void internalError(String where, Throwable error) {
    next.internalError(where, error);
  }

  @Override
  public void circuitChanged(String node, CircuitState state) {
    try {
      Master master = master(node);
      master.breaker = state;
      if (!breakersSeen) {
        breakersSeen = true;
        Meters m = meters;
        if (m != null) {
          for (Master each : masters.values()) {
            m.breakerGauges(each);
          }
        }
      }
    } catch (RuntimeException e) {
      failed(e);
    }
    next.circuitChanged(node, state);
  }

  /** Counts each master's outcome; returns the meters, or null while unbound. */
  private Meters count(Meters.Operation operation, List<NodeOutcome> outcomes) {
    Meters m = meters;
    for (int i = 0, n = outcomes.size(); i < n; i++) { // no iterator
      NodeOutcome outcome = outcomes.get(i);
      Master master = master(outcome.node());
      if (m != null) {
        master.counter(m, operation, outcome.status()).increment();
      }
    }
    return m;
  }

  private Master master(String node) {
    Master master = masters.get(node);
    return master != null ? master : firstSight(node);
  }

  private Master firstSight(String node) {
    Master master = masters.computeIfAbsent(node, Master::new);
    if (breakersSeen) {
      Meters m = meters;
      if (m != null) {
        m.breakerGauges(master);
      }
    }
    return master;
  }

  /** A failure to record: WARN the first time, DEBUG after, never thrown. */
  void failed(RuntimeException e) {
    if (warned.compareAndSet(false, true)) {
      log.warn("RedLockMetrics could not record an event (further failures at DEBUG)", e);
    } else {
      log.debug("RedLockMetrics could not record an event", e);
    }
  }

  @Override
  public String toString() {
    RedLockListener forward = next;
    return forward == NONE ? "RedLockMetrics" : "RedLockMetrics, then " + forward;
  }

  /** One master: its breaker's last reported state and its outcome counters. */
  static final class Master {
    private static final int STATUSES = NodeOutcome.Status.values().length;

    final String name;
    volatile CircuitState breaker = CircuitState.CLOSED; // breakers start closed
    // [operation][status], registered at first use; a race registers the same counter twice.
    private final AtomicReferenceArray<Counter> counters =
        new AtomicReferenceArray<>(Meters.Operation.values().length * STATUSES);

    Master(String name) {
      this.name = name;
    }

    Counter counter(Meters m, Meters.Operation operation, NodeOutcome.Status status) {
      int i = operation.ordinal() * STATUSES + status.ordinal();
      Counter counter = counters.get(i);
      if (counter == null) {
        counter = m.outcomes(name, operation, status);
        counters.set(i, counter);
      }
      return counter;
    }
  }
}
