package dev.redlock.simulation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The simulation calls a spin a spin: waits that return, again and again, with no event run and the
 * time where it was, are code looping without waiting for anything (on a real clock it would burn a
 * CPU until its deadline; on the virtual one it never reaches it). Waits that move time or run an
 * event are never counted, however many.
 */
class SimulationSpinTest {

  @Test
  void waitsThatNeverLetTimeMoveAreASpin() {
    Simulation sim = new Simulation(1);
    IllegalStateException spin =
        assertThrows(
            IllegalStateException.class,
            () -> {
              for (int i = 0; i <= Simulation.SPIN_LIMIT; i++) {
                sim.runUntil(() -> true, sim.now() + 1_000_000); // already done: returns at once
              }
            });
    assertTrue(spin.getMessage().startsWith("a spin"), spin.getMessage());
  }

  @Test
  void waitsThatMoveTimeOrRunEventsAreNot() {
    Simulation sim = new Simulation(1);
    for (int i = 0; i < 3 * Simulation.SPIN_LIMIT; i++) {
      if (i % 2 == 0) {
        sim.runFor(1); // time moves
      } else {
        sim.after(0, () -> {});
        sim.runUntil(() -> false, sim.now()); // an event runs, time stands
      }
    }
  }

  @Test
  void eventsThatOnlyScheduleEventsAtOnceAreASpin() {
    Simulation sim = new Simulation(1);
    Runnable[] loop = new Runnable[1];
    loop[0] = () -> sim.after(0, loop[0]); // a loop through an executor, with no wait in it
    sim.after(0, loop[0]);
    IllegalStateException spin =
        assertThrows(IllegalStateException.class, () -> sim.runFor(1_000_000));
    assertTrue(spin.getMessage().startsWith("a spin"), spin.getMessage());
  }

  /**
   * A loop through a client's timer with no pause in it moves the virtual time, as it moves the
   * real one: each hand-off to the timer's thread takes {@link SimTimers#HANDOFF_NANOS}.
   */
  @Test
  void aLoopThroughATimerMovesTheTime() {
    Simulation sim = new Simulation(1);
    SimTimers timers = new SimTimers(sim, new ClientClock(sim), new SimProcess());
    int[] runs = {0};
    Runnable[] loop = new Runnable[1];
    loop[0] =
        () -> {
          runs[0]++;
          timers.execute(loop[0]);
        };
    timers.execute(loop[0]);
    sim.runFor(1_000_000);
    assertEquals(1_000_000 / SimTimers.HANDOFF_NANOS, runs[0]);
  }
}
