package dev.redlock.simulation;

import dev.redlock.internal.transport.Ticker;

/**
 * A simulated client's monotonic clock: the simulation's time at a rate of its own (1 unless a
 * fault changes it), with no jump when the rate changes, and forward jumps when a fault makes one.
 * Its readings are what the client measures its leases' validity, its rounds' deadlines and its
 * timers with. Not thread-safe.
 */
public final class ClientClock implements Ticker {

  private final Simulation sim;
  private double rate = 1;
  private double offset; // its reading at simulation time 0
  private long excused; // how far it moved in jumps and in its process's pauses

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

  /**
   * Jumps forward by {@code nanos} (a suspended VM resumed, a hypervisor's catch-up): deadlines
   * measured with it come sooner, and its leases end sooner for it.
   */
  void jump(long nanos) {
    offset += nanos;
    excused += nanos;
  }

  /**
   * Its process was paused for {@code simulationNanos} of the simulation's time: its waits may last
   * that much longer.
   */
  void paused(long simulationNanos) {
    excused += (long) (rate * simulationNanos);
  }

  /**
   * Its reading less every jump and every pause of its process: what a wait's length is judged by,
   * as neither is the library's to shorten.
   */
  long waitReading() {
    return read() - excused;
  }

  /**
   * The simulation's time when this clock will read {@code reading}, at its present rate.
   *
   * @param reading a reading of this clock
   * @return the simulation's time, in nanoseconds
   */
  public long toSimulation(long reading) {
    return (long) Math.ceil((reading - offset) / rate);
  }

  /** How long on the simulation's clock this clock takes to move {@code nanos}. */
  long simulationNanos(long nanos) {
    return (long) Math.ceil(nanos / rate);
  }
}
