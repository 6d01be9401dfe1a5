package dev.redlock.simulation;

import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The lease layer's timers ({@code Timing.Timers}) on the simulation's clock: each task is an event
 * of the {@link Simulation}, run on its one thread when the client's clock has moved its delay.
 * Every timer of a simulated RedLock is this one. Not thread-safe: the simulation's thread drives
 * it.
 */
final class SimTimers extends AbstractExecutorService implements ScheduledExecutorService {

  /**
   * The least time a task takes to start, on the client's clock: a real executor hands it to its
   * thread in microseconds, never in none. So a loop through a timer (a round, a pause of nothing,
   * the next round) moves the time on as it would on a real clock, and a wait's deadline comes.
   */
  static final long HANDOFF_NANOS = 1_000;

  private final Simulation sim;
  private final ClientClock clock;
  private final SimProcess process;
  private boolean shutdown;

  SimTimers(Simulation sim, ClientClock clock, SimProcess process) {
    this.sim = sim;
    this.clock = clock;
    this.process = process;
  }

  /** A task at a virtual time, repeated every {@code period} (0: once). */
  private final class Task<V> extends FutureTask<V> implements ScheduledFuture<V> {
    private long at;
    private final long period;

    Task(Callable<V> body, long delayNanos, long periodNanos) {
      super(body);
      this.at = sim.now() + clock.simulationNanos(Math.max(HANDOFF_NANOS, delayNanos));
      this.period = periodNanos;
      sim.after(at - sim.now(), process.event(sim, this::fire));
    }

    private void fire() {
      if (isDone() || shutdown) {
        return;
      }
      if (period == 0) {
        run();
      } else if (runAndReset()) {
        at = sim.now() + clock.simulationNanos(period);
        sim.after(at - sim.now(), process.event(sim, this::fire));
      }
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(at - sim.now(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed other) {
      return Long.compare(getDelay(TimeUnit.NANOSECONDS), other.getDelay(TimeUnit.NANOSECONDS));
    }
  }

  @Override
  public void execute(Runnable command) {
    schedule(command, 0, TimeUnit.NANOSECONDS);
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    return schedule(java.util.concurrent.Executors.callable(command), delay, unit);
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    checkOpen();
    return new Task<>(callable, unit.toNanos(delay), 0);
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(
      Runnable command, long initialDelay, long period, TimeUnit unit) {
    return scheduleWithFixedDelay(command, initialDelay, period, unit);
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(
      Runnable command, long initialDelay, long delay, TimeUnit unit) {
    checkOpen();
    if (delay <= 0) {
      throw new IllegalArgumentException("delay must be positive");
    }
    return new Task<>(
        java.util.concurrent.Executors.callable(command),
        unit.toNanos(initialDelay),
        unit.toNanos(delay));
  }

  private void checkOpen() {
    if (shutdown) {
      throw new java.util.concurrent.RejectedExecutionException("timer is shut down");
    }
  }

  @Override
  public void shutdown() {
    shutdown = true;
  }

  @Override
  public List<Runnable> shutdownNow() {
    shutdown = true;
    return List.of();
  }

  @Override
  public boolean isShutdown() {
    return shutdown;
  }

  @Override
  public boolean isTerminated() {
    return shutdown;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return shutdown;
  }
}
