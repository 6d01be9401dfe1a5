package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The lease layer's timers: a daemon thread named for its work; a cancelled task leaves the queue
 * at once (a wait's timer is cancelled far more often than it fires, and a queue of cancelled
 * hour-long timers would grow with every wait); a timer most RedLocks never use keeps no thread
 * while idle, one always in use keeps its thread.
 */
class DaemonTimersTest {

  @Test
  void aTimersThreadIsADaemonNamedForItsWork() throws Exception {
    ScheduledThreadPoolExecutor timer = DaemonTimers.start("redlock-test-timer", true);
    try {
      CompletableFuture<Thread> ranOn = new CompletableFuture<>();
      timer.execute(() -> ranOn.complete(Thread.currentThread()));
      Thread thread = ranOn.get(5, TimeUnit.SECONDS);
      assertEquals("redlock-test-timer", thread.getName());
      assertTrue(thread.isDaemon(), "never keeps the JVM alive");
    } finally {
      timer.shutdownNow();
    }
  }

  @Test
  void aCancelledTaskLeavesTheQueueAtOnce() {
    ScheduledThreadPoolExecutor timer = DaemonTimers.start("redlock-test-timer", false);
    try {
      ScheduledFuture<?> wait = timer.schedule(() -> {}, 1, TimeUnit.HOURS);
      assertEquals(1, timer.getQueue().size());
      wait.cancel(false);
      assertEquals(0, timer.getQueue().size(), "cancelled: out of the queue");
    } finally {
      timer.shutdownNow();
    }
  }

  @Test
  void aTimerFewRedLocksUseKeepsNoThreadWhileIdleAndAnotherKeepsIts() {
    ScheduledThreadPoolExecutor rare = DaemonTimers.start("redlock-test-rare", true);
    ScheduledThreadPoolExecutor busy = DaemonTimers.start("redlock-test-busy", false);
    try {
      assertTrue(rare.allowsCoreThreadTimeOut(), "its thread exits when idle");
      assertEquals(5, rare.getKeepAliveTime(TimeUnit.SECONDS), "after 5 s without a task");
      assertFalse(busy.allowsCoreThreadTimeOut(), "its thread stays");
    } finally {
      rare.shutdownNow();
      busy.shutdownNow();
    }
  }
}
