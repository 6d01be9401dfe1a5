package dev.redlock.drill;

import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLockListener;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the workers' RedLocks told their listener: rounds in which a master answered RESTARTED, and
 * masters whose circuit breaker opened. Thread-safe, and quick, as a listener must be.
 */
final class Watch implements RedLockListener {
  private final LongAdder restartedRounds = new LongAdder();
  private final Set<String> breakersOpened = new ConcurrentSkipListSet<>();

  @Override
  public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
    countRestarted(outcomes);
  }

  @Override
  public void denied(String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
    countRestarted(outcomes);
  }

  @Override
  public void circuitChanged(String node, CircuitState state) {
    if (state == CircuitState.OPEN) {
      breakersOpened.add(node);
    }
  }

  private void countRestarted(List<NodeOutcome> outcomes) {
    for (NodeOutcome outcome : outcomes) {
      if (outcome.status() == Status.RESTARTED) {
        restartedRounds.increment();
        return;
      }
    }
  }

  long restartedRounds() {
    return restartedRounds.sum();
  }

  List<String> breakersOpened() {
    return List.copyOf(breakersOpened);
  }
}
