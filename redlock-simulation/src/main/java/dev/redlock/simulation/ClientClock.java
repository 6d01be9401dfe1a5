package dev.redlock.simulation;

import dev.redlock.internal.transport.Ticker;

/**
 * A simulated client's monotonic clock: the simulation's time at a rate of its own (1 unless a
 * fault changes it), with no jump when the rate changes. Its readings are what the client measures
 * its leases' validity, its rounds' deadlines and its timers with. Not thread-safe.
 */
final class ClientClock implements Ticker {

  private final Simulation sim;
  private double rate = 1;
  private double offset; // its reading at simulation time 0

  ClientClock(Simulation sim) {
    this.sim = sim;
  }

  @Override
  public long read() {
    return (long) (offset + rate * sim.now());
  }

  /** From now on, {@code newRate} times the simulation's rate. */
  void rate(double newRate) {
    long now = read();
    rate = newRate;
    offset = now - newRate * sim.now();
  }

  /** The simulation's time when this clock will read {@code reading}, at its present rate. */
  long toSimulation(long reading) {
    return (long) Math.ceil((reading - offset) / rate);
  }

  /** How long on the simulation's clock this clock takes to move {@code nanos}. */
  long simulationNanos(long nanos) {
    return (long) Math.ceil(nanos / rate);
  }
}
