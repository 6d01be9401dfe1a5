package dev.redlock.internal.lease;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Where the lease layer's timers come from, how a blocking wait pauses, and the randomness of its
 * pauses: the async waits' and the release follow-ups' timers, the renewals', the events' and async
 * futures' executor, the pause of a blocked caller between rounds, and the jitter of the waits' and
 * renewals' pauses. By default ({@link #REAL}) daemon threads ({@link DaemonTimers}), a parked
 * thread and {@link ThreadLocalRandom}; a test's or a simulation's virtual-time scheduler and
 * seeded randomness otherwise, with the clock ({@code Ticker}) the masters carry. Immutable.
 *
 * @param timers makes each timer
 * @param jitter the pauses' randomness
 * @param pauses how a blocked caller pauses between rounds
 */
public record Timing(Timers timers, Jitter jitter, Pauses pauses) {

  /**
   * The given timers and randomness, with a blocked caller parked on its thread ({@link
   * Pauses#PARK}).
   *
   * @param timers makes each timer
   * @param jitter the pauses' randomness
   */
  public Timing(Timers timers, Jitter jitter) {
    this(timers, jitter, Pauses.PARK);
  }

  /**
   * How a caller blocked in a wait pauses between rounds: its thread parked until a wake-up or the
   * time, or, in a simulation, the simulation's events run on its thread until then.
   */
  @FunctionalInterface
  public interface Pauses {
    /**
     * Returns when {@code wake} is done, or {@code nanos} have passed on the RedLock's clock, or
     * sooner (the caller checks both again).
     *
     * @param wake what cuts the pause short
     * @param nanos the longest pause
     * @throws InterruptedException if the thread was interrupted
     */
    void await(Future<?> wake, long nanos) throws InterruptedException;

    /** The calling thread parked. */
    Pauses PARK =
        (wake, nanos) -> {
          try {
            wake.get(nanos, TimeUnit.NANOSECONDS);
          } catch (TimeoutException | ExecutionException e) {
            // over: the caller sees which
          }
        };
  }

  /** Makes a timer: a scheduler whose tasks run one at a time, in the order they are due. */
  @FunctionalInterface
  public interface Timers {
    /**
     * A timer for one kind of task.
     *
     * @param name what its tasks are, e.g. {@code redlock-renewer} (the thread's name, if it has
     *     one)
     * @param idleExits whether a thread it has may stop while it has no task (for timers most
     *     RedLocks never use)
     * @return the timer; shut down by its user
     */
    ScheduledExecutorService start(String name, boolean idleExits);
  }

  /** Daemon threads and {@link ThreadLocalRandom}: what every RedLock runs on. */
  public static final Timing REAL =
      new Timing(DaemonTimers::start, bound -> ThreadLocalRandom.current().nextLong(bound));
}
