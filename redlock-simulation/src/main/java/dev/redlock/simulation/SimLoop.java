package dev.redlock.simulation;

import dev.redlock.internal.transport.AwaitedRound;
import dev.redlock.internal.transport.RoundLoop;

/**
 * Where a simulated client's caller waits for its round: it runs the simulation's events (the
 * masters' replies, every timer) on its own thread until the round is decided or the clock reaches
 * the round's deadline. So a blocking call of the public API runs on the simulation's one thread.
 */
final class SimLoop implements RoundLoop {

  private final Simulation sim;
  private final ClientClock clock;
  private final SimProcess process;

  SimLoop(Simulation sim, ClientClock clock, SimProcess process) {
    this.sim = sim;
    this.clock = clock;
    this.process = process;
  }

  /**
   * The lease layer's timers on the simulation's clock (their delays measured by the client's
   * {@code clock}), each a timer of its own; a blocked caller's pause between rounds run as the
   * simulation's events until its wake-up or its time, and past a pause of its process (at least
   * {@link SimTimers#HANDOFF_NANOS}: a park returns in microseconds, never in none); its randomness
   * from the seed.
   */
  static dev.redlock.internal.lease.Timing timing(
      Simulation sim, ClientClock clock, SimProcess process) {
    return new dev.redlock.internal.lease.Timing(
        (name, idleExits) -> new SimTimers(sim, clock, process),
        bound -> (long) (sim.random().nextDouble() * bound),
        (wake, nanos) -> {
          sim.runUntil(
              wake::isDone,
              clock.toSimulation(clock.read() + Math.max(SimTimers.HANDOFF_NANOS, nanos)));
          process.waitOutPause(sim);
        });
  }

  @Override
  public void await(AwaitedRound round, long deadlineNanos) {
    sim.runUntil(round::decided, clock.toSimulation(deadlineNanos));
    process.waitOutPause(sim);
  }

  @Override
  public void enterRound() {}

  @Override
  public void leaveRound() {}

  @Override
  public boolean close(long waitNanos) {
    return true;
  }
}
