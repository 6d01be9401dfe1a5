package dev.redlock.internal.lease;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The lease layer's timers: one daemon thread each, named for what it does, whose cancelled tasks
 * leave its queue at once (a wait's timer is cancelled far more often than it fires), and whose
 * delayed tasks do not run once it is shut down. {@link Timing#REAL}'s timers.
 */
final class DaemonTimers {

  private DaemonTimers() {}

  /**
   * A timer whose thread is {@code name}.
   *
   * @param name the thread's name
   * @param idleExits whether the thread is made only at the first task and stops after 5 s without
   *     any (for timers most RedLocks never use)
   * @return the timer
   */
  static ScheduledThreadPoolExecutor start(String name, boolean idleExits) {
    ScheduledThreadPoolExecutor timer =
        new ScheduledThreadPoolExecutor(
            1,
            task -> {
              Thread thread = new Thread(task, name);
              thread.setDaemon(true);
              return thread;
            });
    timer.setRemoveOnCancelPolicy(true);
    timer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    if (idleExits) {
      timer.setKeepAliveTime(5, TimeUnit.SECONDS);
      timer.allowCoreThreadTimeOut(true);
    }
    return timer;
  }
}
