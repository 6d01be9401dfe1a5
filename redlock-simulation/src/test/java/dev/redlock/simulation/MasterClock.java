package dev.redlock.simulation;

/** A master's clock: microseconds since the epoch at a rate of the simulation's time. */
final class MasterClock {
  private final Simulation sim;
  private double rate = 1;
  private double offsetMicros = Simulation.EPOCH_MICROS; // its reading at simulation time 0

  MasterClock(Simulation sim) {
    this.sim = sim;
  }

  long micros() {
    return (long) (offsetMicros + rate * sim.now() / 1000.0);
  }

  /** Steps the clock by {@code micros} (back if negative). */
  void step(long micros) {
    offsetMicros += micros;
  }

  /** From now on, {@code newRate} times the simulation's rate, with no jump. */
  void rate(double newRate) {
    long now = micros();
    rate = newRate;
    offsetMicros = now - newRate * sim.now() / 1000.0;
  }
}
