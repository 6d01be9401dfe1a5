package dev.redlock.internal.lease;

import dev.redlock.internal.transport.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.Executors;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Timers on virtual time, for {@link Timing}: a task runs only when the test moves the clock to its
 * time ({@link #advance}), on the test's thread, in the order the tasks are due (ties in the order
 * they were scheduled); {@link #execute} runs at the next {@link #advance} or {@link #runDue}. No
 * thread, no real time. Every timer {@link #timers} makes is this one. Not thread-safe: one thread
 * drives it.
 */
final class VirtualTimers extends AbstractExecutorService implements ScheduledExecutorService {

  private final FakeTicker ticker;
  private final PriorityQueue<Task<?>> due = new PriorityQueue<>();
  private long sequence;
  private boolean shutdown;

  VirtualTimers(FakeTicker ticker) {
    this.ticker = ticker;
  }

  /** Makes every timer this one (whatever its name). */
  Timing.Timers timers() {
    return (name, idleExits) -> this;
  }

  /** Runs the tasks due now, and those they schedule for now. */
  void runDue() {
    while (!due.isEmpty() && due.peek().at - ticker.read() <= 0) {
      due.poll().run();
    }
  }

  /**
   * Moves the clock forward by {@code time}, running each task when its time comes (the clock set
   * to that time), then the ones due at the end.
   */
  void advance(Duration time) {
    long end = ticker.read() + time.toNanos();
    runDue();
    while (!due.isEmpty() && due.peek().at - end <= 0) {
      long next = due.peek().at;
      if (next - ticker.read() > 0) {
        ticker.advance(Duration.ofNanos(next - ticker.read()));
      }
      runDue();
    }
    if (end - ticker.read() > 0) {
      ticker.advance(Duration.ofNanos(end - ticker.read()));
    }
    runDue();
  }

  /** How many tasks wait. */
  int pending() {
    return due.size();
  }

  private <V> Task<V> add(Callable<V> callable, long delayNanos) {
    if (shutdown) {
      throw new RejectedExecutionException("shut down");
    }
    Task<V> task = new Task<>(callable, ticker.read() + Math.max(0, delayNanos), sequence++);
    due.add(task);
    return task;
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    return add(Executors.callable(command), unit.toNanos(delay));
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    return add(callable, unit.toNanos(delay));
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(
      Runnable command, long initialDelay, long period, TimeUnit unit) {
    throw new UnsupportedOperationException("the lease layer schedules one task at a time");
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(
      Runnable command, long initialDelay, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException("the lease layer schedules one task at a time");
  }

  @Override
  public void execute(Runnable command) {
    add(Executors.callable(command), 0);
  }

  @Override
  public void shutdown() {
    shutdown = true;
  }

  @Override
  public List<Runnable> shutdownNow() {
    shutdown = true;
    List<Runnable> left = new ArrayList<>(due);
    due.clear();
    return left;
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
    return true;
  }

  /** A task and when it is due. */
  private final class Task<V> extends FutureTask<V> implements ScheduledFuture<V> {
    final long at;
    final long order;

    Task(Callable<V> callable, long at, long order) {
      super(callable);
      this.at = at;
      this.order = order;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      due.remove(this); // as the real timers' remove-on-cancel policy
      return super.cancel(mayInterruptIfRunning);
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(at - ticker.read(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed other) {
      Task<?> that = (Task<?>) other;
      int byTime = Long.compare(at - that.at, 0);
      return byTime != 0 ? byTime : Long.compare(order, that.order);
    }
  }
}
