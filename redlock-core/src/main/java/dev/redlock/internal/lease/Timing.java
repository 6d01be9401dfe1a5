package dev.redlock.internal.lease;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Where the lease layer's timers come from, and the randomness of its pauses: the async waits' and
 * the release follow-ups' timers, the renewals', and the jitter of the waits' and renewals' pauses.
 * By default ({@link #REAL}) daemon threads ({@link DaemonTimers}) and {@link ThreadLocalRandom}; a
 * test's or a simulation's virtual-time scheduler and seeded randomness otherwise, with the clock
 * ({@code Ticker}) the masters carry. Immutable.
 *
 * @param timers makes each timer
 * @param jitter the pauses' randomness
 */
public record Timing(Timers timers, Jitter jitter) {

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
