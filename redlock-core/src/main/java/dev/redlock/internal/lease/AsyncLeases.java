package dev.redlock.internal.lease;

import dev.redlock.internal.transport.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The API's asynchronous operations: acquisitions that wait without a thread, and extends and
 * releases that return at once.
 *
 * <p><b>No thread per waiter.</b> A round is sent (each client only queues or writes it) and its
 * decision arrives on this RedLock's async timer thread ({@code redlock-async-N}, one, started on
 * first use and stopped after a few idle seconds or at close); the pause before the next round is a
 * task on the same timer ({@link #pause}). A thousand waiters are a thousand small objects and
 * scheduled tasks, not a thousand threads. The timer thread never blocks, and runs no caller's
 * stage: only the listener's round events, as the renewal thread does.
 *
 * <p><b>One wait engine.</b> What to do after each round is decided by the acquisition's {@link
 * Wait}, the engine the blocking path ({@link Coordinator#retry}) drives too: the hand-off pause,
 * queuing at the gate at once, the split back-off, the retry delay and the deadline are its rules.
 * This class only carries its steps out: a round sent now, or a pause on the timer that a notice
 * (completing on the notice link's thread) ends early, the next round then sent from the timer. The
 * wait is closed however the acquisition ends: granted, timed out, failed, cancelled or closed.
 *
 * <p><b>Where the caller's future completes.</b> On the RedLock's event thread ({@link
 * Events#offer}), as the listener's I/O-learned events are told: never on an I/O thread, never
 * under a lock of the library, and never on the timer (a dependent stage that blocks would stall
 * every waiter's retries). When the event thread is shut down or its queue is full, on the thread
 * that decided (the timer, or the caller's own thread), so a future is never left incomplete.
 *
 * <p><b>Cancellation.</b> A caller's future that completes before the library completed it
 * (cancelled, or completed by the caller, e.g. {@code orTimeout}) stops the acquisition: no further
 * round is sent, the pending pause is cancelled, and a lease granted by a round in flight at that
 * moment (or whose completion loses the race with the cancel) is released at once on every master,
 * without blocking anyone.
 *
 * <p><b>Close.</b> {@link #close} completes every pending acquisition exceptionally with {@code
 * IllegalStateException}, waits (bounded) for the rounds in flight so that whatever they granted is
 * released while the connections are still open, then stops the timer.
 */
final class AsyncLeases {

  private static final Logger log = LoggerFactory.getLogger(AsyncLeases.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** One acquisition round, sent now; its attempt completes on {@code timer}. */
  @FunctionalInterface
  interface Round {
    /**
     * Sends one acquisition round.
     *
     * @param timer the thread its decision is completed on
     * @return how the round ended
     */
    CompletableFuture<Attempt> send(ScheduledExecutorService timer);
  }

  private final Leases leases;
  private final Events events;
  private final Ticker ticker;
  private final ScheduledExecutorService timer;
  private final ReentrantLock lock = new ReentrantLock();
  private final Timing.Pauses pauses; // how the close waits for the rounds in flight
  private final CompletableFuture<Void> drained =
      new CompletableFuture<>(); // closed, none in flight
  private final Set<Acquisition<?>> pending = new HashSet<>(); // guarded by lock
  private int inFlight; // guarded by lock: rounds sent and not yet decided
  private boolean closed; // guarded by lock

  AsyncLeases(Leases leases, Events events, Ticker ticker, Timing timing) {
    this.leases = leases;
    this.events = events;
    this.ticker = ticker;
    this.pauses = timing.pauses();
    int number = THREADS.incrementAndGet();
    // No thread until the first async call.
    this.timer = timing.timers().start("redlock-async-" + number, true);
  }

  /**
   * Acquires without blocking: rounds until one grants, or once only if {@code waitNanos} is 0, or
   * until {@code waitNanos} has passed; then {@code result} turns the last attempt into the
   * caller's value (or throws the caller's exception). Checks that this is open.
   *
   * @param <T> the caller's result
   * @param resource the resource, as the caller named it
   * @param wait the acquisition's wait engine, which decides each next step
   * @param round sends one round
   * @param result the caller's value of the last attempt; may throw the caller's exception
   * @return the caller's future; cancelling it stops the acquisition and releases what it got
   * @throws IllegalStateException if closed
   */
  <T> CompletableFuture<T> acquire(
      String resource, Wait wait, Round round, Function<Attempt, T> result) {
    Acquisition<T> acquisition = new Acquisition<>(resource, wait, round, result);
    lock.lock();
    try {
      checkOpenLocked();
      pending.add(acquisition);
    } finally {
      lock.unlock();
    }
    acquisition.future.whenComplete((value, error) -> acquisition.stop());
    acquisition.carryOut(wait.start());
    return acquisition.future;
  }

  /**
   * Extends {@code lease} as {@link Leases#extend} does, without blocking. After close, the
   * blocking extend answers (it fails fast: the connections are closed).
   *
   * @param lease the lease
   * @param ttl the new time to live
   * @return true if extended; false if not
   * @throws NullPointerException if {@code ttl} is null
   * @throws IllegalArgumentException if {@code ttl} is out of range
   */
  CompletableFuture<Boolean> extend(Grant lease, Duration ttl) {
    long ttlMillis = leases.arguments().ttlMillis(ttl);
    if (!lease.isValid()) {
      return CompletableFuture.completedFuture(false);
    }
    if (!enter()) {
      return CompletableFuture.completedFuture(lease.extend(ttl));
    }
    CompletableFuture<Boolean> future = new CompletableFuture<>();
    try {
      leases
          .extendAsync(lease, ttlMillis, timer)
          .whenComplete(
              (extension, error) -> {
                leave();
                deliver(
                    () -> {
                      if (error != null) {
                        future.completeExceptionally(QuorumRound.cause(error));
                      } else {
                        future.complete(extension == Leases.Extension.EXTENDED);
                      }
                    });
              });
    } catch (RuntimeException e) {
      leave();
      throw e;
    }
    return future;
  }

  /**
   * Releases {@code lease} as {@link Leases#release} does, without blocking: the future completes
   * once a majority answered, or at the node timeout. Never completes exceptionally.
   *
   * @param lease the lease
   * @return completed when the release round is decided
   */
  CompletableFuture<Void> release(Grant lease) {
    if (!enter()) {
      lease.release();
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> future = new CompletableFuture<>();
    try {
      leases
          .releaseAsync(lease, timer)
          .whenComplete(
              (ignored, error) -> {
                leave();
                if (error != null) {
                  log.debug("release of {} failed", Arguments.quote(lease.resource()), error);
                }
                deliver(() -> future.complete(null));
              });
    } catch (RuntimeException e) {
      leave();
      log.debug("release of {} failed", Arguments.quote(lease.resource()), e);
      deliver(() -> future.complete(null));
    }
    return future;
  }

  /**
   * The pause before an asynchronous waiter's next round, which a wake-up (a release seen on the
   * masters) can complete early. It completes on the timer after {@code delayNanos}; cancelling it
   * cancels the timer task. Completes exceptionally if the timer is shut down.
   *
   * @param delayNanos how long to wait at most
   * @return completed when it is time to try again
   */
  CompletableFuture<Void> pause(long delayNanos) {
    CompletableFuture<Void> pause = new CompletableFuture<>();
    try {
      ScheduledFuture<?> task =
          timer.schedule(() -> pause.complete(null), delayNanos, TimeUnit.NANOSECONDS);
      pause.whenComplete((ignored, error) -> task.cancel(false));
    } catch (RejectedExecutionException closing) {
      pause.completeExceptionally(closing);
    }
    return pause;
  }

  /** How many acquisitions are pending: for tests and metrics. */
  int pending() {
    lock.lock();
    try {
      return pending.size();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Fails every pending acquisition with {@code IllegalStateException}, waits until the rounds in
   * flight are decided (their grants then released) or {@code graceNanos} passed, and stops the
   * timer. Idempotent.
   *
   * @param graceNanos how long to wait at most
   */
  void close(long graceNanos) {
    List<Acquisition<?>> failing;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      failing = new ArrayList<>(pending);
      if (inFlight == 0) {
        drained.complete(null);
      }
    } finally {
      lock.unlock();
    }
    IllegalStateException closedWhileWaiting =
        new IllegalStateException("RedLock is closed (while the acquisition was pending)");
    for (Acquisition<?> acquisition : failing) {
      acquisition.future.completeExceptionally(closedWhileWaiting); // on this (the caller's) thread
    }
    long deadline = ticker.read() + graceNanos;
    boolean interrupted = false;
    // As a blocked caller pauses (parked; in a simulation, its events run until then).
    while (!drained.isDone()) {
      long left = deadline - ticker.read();
      if (left <= 0) {
        if (log.isDebugEnabled()) {
          log.debug("{} async rounds still undecided at close", undecided());
        }
        break;
      }
      try {
        pauses.await(drained, left);
      } catch (InterruptedException e) {
        interrupted = true; // restored below; the close still waits until its deadline
      }
    }
    // A grant decided just before the close may be on its way to a caller whose future the close
    // failed: the event thread then discards it, and must do so while the connections are open.
    events.awaitTold(Math.max(0, deadline - ticker.read()));
    timer.shutdownNow();
    try {
      if (!timer.awaitTermination(Math.max(0, deadline - ticker.read()), TimeUnit.NANOSECONDS)) {
        log.debug("the async timer thread did not stop in time");
      }
    } catch (InterruptedException e) {
      interrupted = true;
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private int undecided() {
    lock.lock();
    try {
      return inFlight;
    } finally {
      lock.unlock();
    }
  }

  private void checkOpenLocked() {
    if (closed) {
      throw new IllegalStateException("RedLock is closed");
    }
  }

  /** Counts a round in flight; false if closed (nothing counted). */
  private boolean enter() {
    lock.lock();
    try {
      if (closed) {
        return false;
      }
      inFlight++;
      return true;
    } finally {
      lock.unlock();
    }
  }

  private void leave() {
    lock.lock();
    try {
      if (--inFlight == 0 && closed) {
        drained.complete(null); // the close waits for it (its callbacks run on no thread: none)
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Completes a caller's future where user code may run: on the event thread, or, when it cannot
   * take it (shut down, queue full), here: the timer or the caller's thread, never an I/O thread.
   */
  private void deliver(Runnable completion) {
    if (!events.offer(completion)) {
      completion.run();
    }
  }

  /** One acquisition in progress: its rounds, its pauses, and the caller's future. */
  private final class Acquisition<T> {
    private final String resource;
    private final Wait wait;
    private final Round round;
    private final Function<Attempt, T> result;
    private final CompletableFuture<T> future = new CompletableFuture<>();
    private volatile boolean stopped; // the caller's future is complete: no more rounds
    private volatile CompletableFuture<Void> pause; // the current pause, if any

    Acquisition(String resource, Wait wait, Round round, Function<Attempt, T> result) {
      this.resource = resource;
      this.wait = wait;
      this.round = round;
      this.result = result;
    }

    /** Carries out the wait engine's step: a round now, a pause, or the end. */
    void carryOut(Wait.Step step) {
      if (step instanceof Wait.Pause p) {
        pauseThenNext(p.nanos(), p.wake());
      } else if (step instanceof Wait.Finish finish) {
        Attempt last = finish.attempt();
        Grant grant = last.grant();
        if (grant != null) {
          if (stopped) {
            leases.discard(grant); // cancelled (or closed) while the round was in flight
            return;
          }
          T value = result.apply(last);
          finish(
              () -> {
                if (!future.complete(value)) {
                  leases.discard(grant); // cancelled just before the lease could be handed over
                }
              });
          return;
        }
        finish(
            () -> {
              try {
                future.complete(result.apply(last));
              } catch (RuntimeException e) {
                future.completeExceptionally(e);
              }
            });
      } else {
        next();
      }
    }

    /** Sends the next round, unless stopped or closed; its decision comes on the timer. */
    void next() {
      if (stopped || !enter()) {
        return; // a close has failed (or will fail) the future
      }
      CompletableFuture<Attempt> attempt;
      try {
        wait.beforeRound();
        attempt = round.send(timer);
      } catch (RuntimeException | Error e) {
        leave();
        finish(() -> future.completeExceptionally(e));
        return;
      }
      attempt.whenComplete(
          (decided, error) -> {
            try {
              decided(decided, error);
            } finally {
              leave(); // after a grant to discard was released, so a close sends it first
            }
          });
    }

    /** On the timer's thread: the round's attempt. */
    private void decided(Attempt attempt, Throwable error) {
      if (error != null) {
        finish(() -> future.completeExceptionally(QuorumRound.cause(error)));
        return;
      }
      Wait.Step step = wait.decided(attempt);
      if (stopped && !(step instanceof Wait.Finish)) {
        return;
      }
      carryOut(step);
    }

    /**
     * Sends the next round after {@code wait} nanoseconds, or as soon as {@code woken} (if not
     * null) completes: a notice of a release.
     */
    void pauseThenNext(long wait, CompletableFuture<Void> woken) {
      CompletableFuture<Void> next = pause(wait);
      pause = next;
      if (stopped) {
        next.cancel(false); // stop() ran while the pause was being set
        return;
      }
      if (woken != null) {
        woken.thenRun(() -> next.complete(null)); // on the notice link's thread: short
      }
      next.whenCompleteAsync(
          (ignored, pauseError) -> {
            if (pauseError == null) {
              next();
            }
          },
          timer);
    }

    /**
     * The acquisition is no longer pending; then completes the caller's future (see {@link
     * #deliver}).
     */
    private void finish(Runnable completion) {
      // No longer pending before the caller's future completes: a caller woken by it counts no
      // pending acquisition (the stage that stops it runs after the caller wakes, not before).
      lock.lock();
      try {
        pending.remove(this);
      } finally {
        lock.unlock();
      }
      deliver(completion);
    }

    /** The caller's future completed (by us, a cancel, a timeout, or a close): stop rounds. */
    void stop() {
      stopped = true;
      CompletableFuture<Void> waiting = pause;
      if (waiting != null) {
        waiting.cancel(false);
      }
      wait.close(); // leaves the wake-up group and the gate's queue (idempotent)
      lock.lock();
      try {
        pending.remove(this);
      } finally {
        lock.unlock();
      }
      if (future.isCancelled() && log.isDebugEnabled()) {
        log.debug("acquisition of {} cancelled", Arguments.quote(resource));
      }
    }
  }
}
