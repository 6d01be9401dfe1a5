package dev.redlock.internal.lease;

import dev.redlock.internal.transport.BreakerState;
import dev.redlock.internal.transport.LogEpisodes;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the {@link Listener} (the API's adapter of the user's {@code RedLockListener}); a listener
 * that throws is logged, never propagated.
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
public final class Events {

  private static final Logger log = LoggerFactory.getLogger(Events.class);
  private static final Listener NONE = new Listener() {};
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** The most events waiting for the event thread. */
  static final int QUEUE = 10_000;

  private final Listener listener;
  private final ExecutorService thread;
  private final boolean injected; // the executor is a test's or a simulation's: it drives it
  private final AtomicLong dropped = new AtomicLong();
  // Each master whose breaker is not closed: read and written on the event thread only, one task at
  // a time; bounded by the masters.
  private final java.util.Set<String> breakersOpen = new java.util.HashSet<>();
  private volatile Thread current; // the event thread, the last one started

  /**
   * Tells {@code listener}; its event thread starts on first use.
   *
   * @param listener the listener, or {@link #none()}
   */
  public Events(Listener listener) {
    this.listener = listener;
    int number = THREADS.incrementAndGet();
    ThreadPoolExecutor own =
        new ThreadPoolExecutor(
            1,
            1,
            5,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(QUEUE),
            task -> {
              Thread t = new Thread(task, "redlock-events-" + number);
              t.setDaemon(true);
              current = t;
              return t;
            },
            (task, executor) -> {
              if (task instanceof Offer offer) {
                offer.refused = true; // the caller runs it itself
              } else {
                dropped(executor);
              }
            });
    own.allowCoreThreadTimeOut(true); // no thread at all until an event needs one
    this.thread = own;
    this.injected = false;
  }

  /**
   * Tells {@code listener} on {@code executor} instead of a thread of its own: a test's or a
   * simulation's virtual time ({@code Timing}). What it refuses (it throws {@link
   * RejectedExecutionException}) is handled as the event thread's full queue is: a future's
   * completion runs on the caller's thread, an event is counted and dropped.
   *
   * @param listener the listener, or {@link #none()}
   * @param executor runs the listener's calls and the async futures' completions, one at a time
   */
  public Events(Listener listener, ExecutorService executor) {
    this.listener = listener;
    this.thread = executor;
    this.injected = true;
  }

  /**
   * Returns the listener that hears nothing: with it, nothing is built to be told.
   *
   * @return the no-op listener
   */
  public static Listener none() {
    return NONE;
  }

  /** Whether anyone listens; callers skip building an event (and its lambda) when not. */
  boolean enabled() {
    return listener != NONE;
  }

  /**
   * Whether the listener hears {@link Listener#releaseCompleted}: a release's final answers are
   * gathered and handed to the event thread only if so.
   */
  boolean releasesCompletedHeard() {
    return listener != NONE && listener.hearsReleaseCompleted();
  }

  /** Tells the listener now, on this thread. */
  void emit(Consumer<Listener> event) {
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
  void emitLater(Consumer<Listener> event) {
    if (listener != NONE) {
      run(() -> emit(event));
    }
  }

  /**
   * From an I/O thread: a master's circuit breaker changed state. The log line and the listener, on
   * the event thread.
   *
   * @param node the master's {@code host:port}
   * @param state the new state
   */
  public void circuitChanged(String node, BreakerState state) {
    run(
        () -> {
          logCircuit(node, state);
          emit(l -> l.circuitChanged(node, state));
        });
  }

  /**
   * Logs a breaker's change once per episode: at INFO when it first leaves CLOSED and when it is
   * CLOSED again, each once in the process however many RedLocks share the master ({@link
   * LogEpisodes}); the OPEN and HALF_OPEN turns between (one a second while the master fails) at
   * DEBUG. On the event thread, which alone reads and writes {@link #breakersOpen}.
   */
  private void logCircuit(String node, BreakerState state) {
    String episode = node + " circuit breaker";
    if (state == BreakerState.CLOSED) {
      if (breakersOpen.remove(node) && LogEpisodes.end(episode, this)) {
        log.info("circuit breaker of {} is CLOSED again: the master answers", node);
      } else {
        log.debug("circuit breaker of {} is now {}", node, state);
      }
      return;
    }
    if (breakersOpen.add(node) && LogEpisodes.start(episode, this)) {
      log.info(
          "circuit breaker of {} is {}: the master failed too often, so rounds skip it while others"
              + " can make a quorum and probe it again after the breaker's wait; logged again"
              + " when it closes",
          node,
          state);
    } else {
      log.debug("circuit breaker of {} is now {}", node, state);
    }
  }

  /**
   * From an I/O thread: it met an unexpected error and recovered. Tells the listener on the event
   * thread.
   *
   * @param where what failed
   * @param error what was thrown
   */
  public void internalError(String where, Throwable error) {
    emitLater(l -> l.internalError(where, error));
  }

  /**
   * Runs {@code work} on the event thread, soon: what an I/O thread must not do itself (log at WARN
   * through appenders that may block, tell the listener). Never blocks the calling thread.
   *
   * @param work what to run
   */
  public void run(Runnable work) {
    try {
      thread.execute(work); // refused: the handler drops it (shut down: the RedLock is closed)
    } catch (RejectedExecutionException e) {
      dropped(thread); // an injected executor's refusal
    }
  }

  /**
   * Runs {@code work} on the event thread, soon, unless it cannot take it (shut down, or its queue
   * full): then returns false and runs nothing, and the caller runs it. For what must not be
   * dropped: the completion of a caller's future ({@link AsyncLeases}). Never blocks.
   *
   * @param work what to run
   * @return whether the event thread took it
   */
  boolean offer(Runnable work) {
    Offer offer = new Offer(work);
    try {
      thread.execute(offer); // refused (shut down, or the queue full): the handler marks it
    } catch (RejectedExecutionException e) {
      offer.refused = true; // an injected executor's refusal
    }
    return !offer.refused;
  }

  /** A task the caller runs itself if the event thread refuses it. */
  private static final class Offer implements Runnable {
    private final Runnable work;
    private boolean refused; // set by the rejection handler, on the offering thread

    Offer(Runnable work) {
      this.work = work;
    }

    @Override
    public void run() {
      work.run();
    }
  }

  private void dropped(ExecutorService executor) {
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
   * timeoutNanos} passed: for a close, and for tests, which assert on what the listener heard. On
   * the event thread itself (a close from a listener or a future's stage), or with an injected
   * executor (whose owner runs it, maybe on this very thread), returns at once.
   */
  void awaitTold(long timeoutNanos) {
    if (injected || onEventThread()) {
      return; // it cannot wait for itself: the events queued run after the one running now
    }
    java.util.concurrent.CountDownLatch told = new java.util.concurrent.CountDownLatch(1);
    run(told::countDown);
    try {
      told.await(timeoutNanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Whether the calling thread is the event thread: it cannot wait for itself. */
  private boolean onEventThread() {
    return Thread.currentThread() == current;
  }

  /**
   * Tells what is queued, waiting {@code waitNanos} at most, then stops the thread; then this
   * RedLock leaves its log episodes ({@link LogEpisodes}), after the queued events, so that none of
   * them opens an episode again (which the process-wide episodes would keep, and whose end would go
   * unlogged). On the event thread itself, returns at once: the queued events, and the episodes'
   * end, run after the one running now.
   */
  void close(long waitNanos) {
    if (onEventThread()) {
      // Closed from a listener or a future's stage. Queued before the shutdown, the end runs last.
      if (!offer(() -> LogEpisodes.endAll(this))) {
        LogEpisodes.endAll(this);
      }
      thread.shutdown();
      return;
    }
    thread.shutdown();
    try {
      if (!thread.awaitTermination(waitNanos, TimeUnit.NANOSECONDS)) {
        thread.shutdownNow();
        log.debug("the event thread did not finish in time; the rest is dropped");
      }
    } catch (InterruptedException e) {
      thread.shutdownNow();
      Thread.currentThread().interrupt();
    } finally {
      LogEpisodes.endAll(this);
    }
  }
}
