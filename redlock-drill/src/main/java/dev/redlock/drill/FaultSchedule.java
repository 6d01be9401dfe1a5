package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.FaultPlan.Fault;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs a {@link FaultPlan} against an {@link Injector} ({@link FaultTargets}) on its own thread
 * ({@code drill-faults}), on the drill's clock: each fault begins at its time after the start of
 * the workers and ends after its length; whatever is still active when the workers stop is ended by
 * {@link #stop()}. Every begin and end is recorded as a {@link FaultWindow} on the same monotonic
 * clock as the leases, and told to the {@link Events} (the progress output).
 *
 * <p>A fault that cannot be made (Toxiproxy refuses, a signal fails) is recorded with its error and
 * the drill fails: it did not test what the plan asked for.
 *
 * <p>{@link #start}, {@link #stop()} and {@link #windows()} are called by the drill's thread;
 * {@link #active()} by any thread.
 */
final class FaultSchedule {

  /** What makes and undoes faults on masters (numbered from 1); {@link FaultTargets} in a drill. */
  interface Injector {
    /** Begins a fault of {@code kind} on {@code master}. */
    void apply(FaultPlan.Kind kind, int master, Duration latency) throws Exception;

    /** Ends a fault of {@code kind} on {@code master}. */
    void undo(FaultPlan.Kind kind, int master) throws Exception;
  }

  /**
   * Hears the schedule's begins and ends, on the schedule's thread, once the fault is made or
   * undone; times in nanoseconds since the start.
   */
  interface Events {
    /** A fault was made (or could not be) from {@code began} to {@code applied}. */
    void began(Fault fault, long began, long applied, List<String> errors);

    /** A fault was undone (or could not be) from {@code healing} to {@code ended}. */
    void ended(Fault fault, long healing, long ended, List<String> errors);
  }

  /**
   * One fault as it ran, in nanoseconds since the start of the workers. Making and undoing a fault
   * takes time (a signal and a wait for the process state, a Toxiproxy API call per master), so
   * each has two instants: the fault may be in effect from {@code began} to {@code ended}, and is
   * surely in effect from {@code applied} to {@code healing}.
   *
   * @param fault the plan's line
   * @param began just before the fault was made
   * @param applied just after it was made on every master
   * @param healing just before it was undone
   * @param ended just after it was undone
   * @param errors what failed, if anything
   */
  record FaultWindow(
      Fault fault, long began, long applied, long healing, long ended, List<String> errors) {
    FaultWindow {
      requireNonNull(fault, "fault");
      errors = List.copyOf(errors);
    }
  }

  private final FaultPlan plan;
  private final Injector targets;
  private final Duration runLength;
  private final Events events;
  private final List<Fault> active = new CopyOnWriteArrayList<>();
  private final List<FaultWindow> windows = new ArrayList<>(); // guarded by this
  private final List<Pending> begun = new ArrayList<>(); // schedule thread, then stop()
  private final Object stopLock = new Object();
  private volatile boolean stopRequested;
  private volatile Thread thread;
  private long start;

  FaultSchedule(FaultPlan plan, Injector targets, Duration runLength, Events events) {
    this.plan = requireNonNull(plan, "plan");
    this.targets = requireNonNull(targets, "targets");
    this.runLength = requireNonNull(runLength, "runLength");
    this.events = requireNonNull(events, "events");
  }

  /**
   * Starts the schedule's thread; {@code start} is the workers' start, on {@link System#nanoTime}.
   */
  void start(long start) {
    if (thread != null) {
      throw new IllegalStateException("already started");
    }
    this.start = start;
    if (plan.isEmpty()) {
      return;
    }
    thread = new Thread(this::run, "drill-faults");
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * Stops the schedule and ends every fault still active (a partition is healed, a paused master
   * resumed, a killed one restarted), then returns. Idempotent.
   */
  void stop() {
    synchronized (stopLock) {
      stopNow();
    }
  }

  private void stopNow() {
    stopRequested = true;
    if (thread != null) {
      // Not an interrupt: a fault being made or undone (a signal, a restart, an API call) is
      // finished first, and then the thread sees the request instead of parking again.
      LockSupport.unpark(thread);
      boolean interrupted = false;
      while (thread.isAlive()) {
        try {
          thread.join();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    List<Pending> left;
    synchronized (this) {
      left = List.copyOf(begun);
    }
    for (Pending pending : left) {
      end(pending);
    }
  }

  /** The plan this schedule runs. */
  FaultPlan plan() {
    return plan;
  }

  /** The faults active now, in order of time. */
  List<Fault> active() {
    return List.copyOf(active);
  }

  /** Every fault that ran, in order of its begin; complete after {@link #stop()}. */
  synchronized List<FaultWindow> windows() {
    List<FaultWindow> sorted = new ArrayList<>(windows);
    sorted.sort(Comparator.comparingLong(FaultWindow::began));
    return sorted;
  }

  /** A fault that began and has not ended. */
  private record Pending(Fault fault, long began, long applied, List<String> errors) {}

  private void run() {
    List<Pending> waiting = new ArrayList<>();
    List<Fault> toBegin = new ArrayList<>(plan.faults());
    while (!stopRequested) {
      // The next event: the earliest end, or the next begin; ends first at equal times.
      Pending nextEnd =
          waiting.stream().min(Comparator.comparing(p -> p.fault().end(runLength))).orElse(null);
      Fault nextBegin = toBegin.isEmpty() ? null : toBegin.get(0);
      boolean isEnd =
          nextEnd != null
              && !nextEnd.fault().open()
              && (nextBegin == null
                  || nextEnd.fault().end(runLength).compareTo(nextBegin.at()) <= 0);
      if (!isEnd && nextBegin == null) {
        return; // only open-ended faults remain: stop() ends them
      }
      Duration when = isEnd ? nextEnd.fault().end(runLength) : nextBegin.at();
      if (isEnd && when.compareTo(runLength) >= 0) {
        return; // ends with the run: stop() ends it
      }
      if (!parkUntil(start + when.toNanos())) {
        return;
      }
      if (isEnd) {
        waiting.remove(nextEnd);
        synchronized (this) {
          begun.remove(nextEnd);
        }
        end(nextEnd);
      } else {
        toBegin.remove(0);
        Pending pending = begin(nextBegin);
        waiting.add(pending);
        synchronized (this) {
          begun.add(pending);
        }
      }
    }
  }

  /** Parks until {@code deadline} (nanoTime); false if a stop was requested first. */
  private boolean parkUntil(long deadline) {
    while (true) {
      if (stopRequested) {
        return false;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return true;
      }
      LockSupport.parkNanos(left);
    }
  }

  private Pending begin(Fault fault) {
    long began = System.nanoTime() - start;
    active.add(fault); // on the progress line while it is being made, too
    List<String> errors = new ArrayList<>();
    for (int master : fault.masters()) {
      try {
        targets.apply(fault.kind(), master, fault.latency());
      } catch (Exception e) {
        errors.add("master " + master + ": " + e);
      }
    }
    long applied = System.nanoTime() - start;
    events.began(fault, began, applied, errors);
    return new Pending(fault, began, applied, errors);
  }

  private void end(Pending pending) {
    Fault fault = pending.fault();
    List<String> errors = new ArrayList<>(pending.errors());
    List<String> undoErrors = new ArrayList<>();
    long healing = System.nanoTime() - start;
    for (int master : fault.masters()) {
      try {
        targets.undo(fault.kind(), master);
      } catch (Exception e) {
        undoErrors.add("master " + master + " (undo): " + e);
      }
    }
    long ended = System.nanoTime() - start;
    active.remove(fault);
    errors.addAll(undoErrors);
    synchronized (this) {
      begun.remove(pending);
      windows.add(
          new FaultWindow(fault, pending.began(), pending.applied(), healing, ended, errors));
    }
    events.ended(fault, healing, ended, undoErrors);
  }
}
