package dev.redlock.simulation;

/**
 * A simulated client's process: alive until it {@link #crash}es (as {@code kill -9}), after which
 * nothing of it runs (its timers do not fire, its messages are neither sent nor received) and its
 * connections are gone, as the operating system closes them. It can also be paused (a GC's stop of
 * the world, a {@code SIGSTOP}): then its events (timers, replies and notices read) wait for the
 * pause's end, in the order they came, and a caller blocked in it goes on only after it. Not
 * thread-safe: the simulation's one thread drives it.
 */
public final class SimProcess {

  private boolean dead;
  private long pausedUntil; // on the simulation's clock

  /** Whether the process has crashed. */
  public boolean dead() {
    return dead;
  }

  /** The process dies: from now on nothing of it runs. */
  public void crash() {
    dead = true;
  }

  /**
   * Pauses the process until {@code until} (the simulation's time): none of its events runs before.
   *
   * @param until the pause's end
   */
  public void pauseUntil(long until) {
    pausedUntil = Math.max(pausedUntil, until);
  }

  /**
   * Whether the process is paused at {@code now}.
   *
   * @param now the simulation's time
   * @return whether a pause lasts past {@code now}
   */
  public boolean pausedAt(long now) {
    return now < pausedUntil;
  }

  /**
   * {@code task} as an event of this process: run when it fires, unless the process crashed (then
   * never) or is paused (then at the pause's end, after the events that waited before it).
   *
   * @param sim the simulation
   * @param task what the process does
   * @return the event
   */
  public Runnable event(Simulation sim, Runnable task) {
    return new Runnable() {
      @Override
      public void run() {
        if (dead) {
          return;
        }
        if (sim.now() < pausedUntil) {
          sim.after(pausedUntil - sim.now(), this);
          return;
        }
        task.run();
      }
    };
  }

  /** A caller of this process whose wait ended: it goes on only once a pause is over. */
  void waitOutPause(Simulation sim) {
    if (!dead && sim.now() < pausedUntil) {
      sim.runFor(pausedUntil - sim.now());
    }
  }
}
