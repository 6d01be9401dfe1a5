package dev.redlock.simulation;

/**
 * A simulated client's process: alive until it {@link #crash}es (as {@code kill -9}), after which
 * nothing of it runs (its timers do not fire, its messages are neither sent nor received) and its
 * connections are gone, as the operating system closes them. Not thread-safe: the simulation's one
 * thread drives it.
 */
public final class SimProcess {

  private boolean dead;

  /** Whether the process has crashed. */
  public boolean dead() {
    return dead;
  }

  /** The process dies: from now on nothing of it runs. */
  public void crash() {
    dead = true;
  }
}
