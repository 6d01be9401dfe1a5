package dev.redlock;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the user's {@link RedLockListener}; a listener that throws is logged, never propagated.
 *
 * <p>Two ways to tell. {@link #emit} calls the listener on the calling thread: for what a caller's
 * round or the renewal thread decided (acquired, denied, extended, lost, released), as the
 * listener's contract says. {@link #emitLater} hands the call to this RedLock's event thread
 * ({@code redlock-events-N}, started on first use, stopped after a few idle seconds and by {@link
 * #close}): for what an I/O thread learns (a circuit breaker's change, an internal error, a late
 * answer to a release, a preflight verdict's log line). An I/O thread may be the one that reads
 * every plaintext master's replies, or a caller leading the selector for everyone: a listener that
 * blocks there, or calls back into the RedLock ({@code inspect()}), would stall every master. The
 * event thread's queue is bounded ({@value #QUEUE}): a listener slower than the events is told of
 * as many as fit, and the others are counted and dropped, never queued without bound.
 */
final class Events implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Events.class);
  private static final RedLockListener NONE = new RedLockListener() {};
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** The most events waiting for the event thread. */
  static final int QUEUE = 10_000;

  private final RedLockListener listener;
  private final ThreadPoolExecutor thread;
  private final AtomicLong dropped = new AtomicLong();

  Events(RedLockListener listener) {
    this.listener = listener;
    int number = THREADS.incrementAndGet();
    this.thread =
        new ThreadPoolExecutor(
            1,
            1,
            5,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(QUEUE),
            task -> {
              Thread t = new Thread(task, "redlock-events-" + number);
              t.setDaemon(true);
              return t;
            },
            (task, executor) -> dropped(executor));
    thread.allowCoreThreadTimeOut(true); // no thread at all until an event needs one
  }

  /** No listener: nothing to tell. */
  static RedLockListener none() {
    return NONE;
  }

  /** Whether anyone listens; callers skip building an event (and its lambda) when not. */
  boolean enabled() {
    return listener != NONE;
  }

  /** Tells the listener now, on this thread. */
  void emit(Consumer<RedLockListener> event) {
    if (listener == NONE) {
      return;
    }
    try {
      event.accept(listener);
    } catch (RuntimeException | LinkageError | AssertionError e) {
      log.warn("RedLockListener {} threw; ignored", listener, e);
    }
  }

  /** Tells the listener on the event thread, soon; never blocks the calling thread. */
  void emitLater(Consumer<RedLockListener> event) {
    if (listener != NONE) {
      run(() -> emit(event));
    }
  }

  /**
   * Runs {@code work} on the event thread, soon: what an I/O thread must not do itself (log at WARN
   * through appenders that may block, tell the listener). Never blocks the calling thread.
   */
  void run(Runnable work) {
    try {
      thread.execute(work);
    } catch (RejectedExecutionException closed) {
      // shut down: the RedLock is closed, and nothing is told any more
    }
  }

  private void dropped(ThreadPoolExecutor executor) {
    if (executor.isShutdown()) {
      return;
    }
    long count = dropped.incrementAndGet();
    if (count == 1 || Long.bitCount(count) == 1) { // the 1st, 2nd, 4th, 8th... drop
      log.warn(
          "RedLockListener {} is slower than the events: {} dropped so far (at most {} wait)",
          listener,
          count,
          QUEUE);
    }
  }

  /**
   * Waits until every event handed to the event thread before this call has been told, or {@code
   * timeoutNanos} passed: for tests, which assert on what the listener heard.
   */
  void awaitTold(long timeoutNanos) {
    java.util.concurrent.CountDownLatch told = new java.util.concurrent.CountDownLatch(1);
    run(told::countDown);
    try {
      told.await(timeoutNanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** How many events were dropped because the queue was full. */
  long dropped() {
    return dropped.get();
  }

  /** Tells what is queued, waiting until {@code deadlineNanos} at most, then stops the thread. */
  void close(long waitNanos) {
    thread.shutdown();
    try {
      if (!thread.awaitTermination(waitNanos, TimeUnit.NANOSECONDS)) {
        thread.shutdownNow();
        log.debug("the event thread did not finish in time; the rest is dropped");
      }
    } catch (InterruptedException e) {
      thread.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    close(TimeUnit.SECONDS.toNanos(1));
  }
}
