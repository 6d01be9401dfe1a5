package dev.redlock.benchmark;

import dev.redlock.RedLockListener;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Records every circuit-breaker transition a RedLock reports, with the time it was reported, for
 * the sections that show when the breakers moved (heal, isolation). Thread-safe, and quick, as a
 * listener must be.
 */
final class BreakerLog implements RedLockListener {

  /**
   * A master's circuit-breaker transition.
   *
   * @param node the master, {@code host:port}
   * @param state the state it went to
   * @param at when it was reported, on {@link System#nanoTime()}
   */
  record Transition(String node, CircuitState state, long at) {}

  private final List<Transition> transitions = Collections.synchronizedList(new ArrayList<>());

  @Override
  public void circuitChanged(String node, CircuitState state) {
    transitions.add(new Transition(node, state, System.nanoTime()));
  }

  /**
   * How many transitions to OPEN were reported before {@code moment} ({@link System#nanoTime()}).
   */
  long openedBefore(long moment) {
    synchronized (transitions) {
      return transitions.stream()
          .filter(t -> t.state() == CircuitState.OPEN && t.at() - moment < 0)
          .count();
    }
  }

  /** The transitions reported since {@code moment} ({@link System#nanoTime()}), in order. */
  List<Transition> since(long moment) {
    synchronized (transitions) {
      return transitions.stream().filter(t -> t.at() - moment >= 0).toList();
    }
  }
}
