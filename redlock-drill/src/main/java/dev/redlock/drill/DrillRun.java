package dev.redlock.drill;

import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.drill.Drill.Config;
import dev.redlock.drill.DrillChecks.FencingOrder;
import dev.redlock.drill.DrillChecks.Grant;
import dev.redlock.drill.DrillChecks.Handovers;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillChecks.Window;
import dev.redlock.drill.FaultPlan.Fault;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The drill's workload: admitting the masters, the worker threads (see {@link Drill} for what a
 * worker does), waiting for them with a progress line, and totalling what they recorded.
 */
final class DrillRun {

  /** How long past the deadline the workers get to stop before the drill fails. */
  private static final Duration STOP_GRACE = Duration.ofSeconds(10);

  /** A master is "up" on the progress line if its vote counted within this window. */
  static final Duration UP_WINDOW = Duration.ofMillis(250);

  /** How often the admission is retried for masters that did not answer it, 100 ms apart. */
  private static final int ADMIT_RETRIES = 5;

  private DrillRun() {}

  /**
   * Calls {@link RedLock#admitFreshNodes()} on every worker's RedLock, then retries a few times on
   * the first while some master has answered none of the calls (a connection still being opened).
   */
  static Admission admit(List<RedLock> clients) {
    Map<String, Status> best = new LinkedHashMap<>();
    Map<String, String> details = new LinkedHashMap<>();
    for (RedLock client : clients) {
      keepBest(client.admitFreshNodes(), best, details);
    }
    for (int retry = 0; retry < ADMIT_RETRIES && !Admission.allAnswered(best); retry++) {
      try {
        TimeUnit.MILLISECONDS.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      keepBest(clients.get(0).admitFreshNodes(), best, details);
    }
    return new Admission(clients.size(), best, details);
  }

  /** Keeps, per master, the best answer so far: GRANTED (admitted now), TAKEN, or a failure. */
  private static void keepBest(
      List<NodeOutcome> outcomes, Map<String, Status> best, Map<String, String> details) {
    for (NodeOutcome outcome : outcomes) {
      Status previous = best.get(outcome.node());
      Status status = outcome.status();
      if (previous == null
          || status == Status.GRANTED
          || (status == Status.TAKEN && previous != Status.GRANTED)) {
        best.put(outcome.node(), status);
        details.put(outcome.node(), outcome.detail());
      }
    }
  }

  /**
   * The workers' side of a run: their RedLocks, their round logs (each RedLock's listener), the
   * live counts the progress line reads and the shared watch.
   */
  record Crew(List<RedLock> clients, List<RoundLog> logs, RoundLog.Live live, Watch watch) {
    Crew {
      clients = List.copyOf(clients);
      logs = List.copyOf(logs);
      if (logs.size() != clients.size()) {
        throw new IllegalArgumentException("one round log per RedLock expected");
      }
    }
  }

  /**
   * What a run gives: the checked result and everything recorded over time.
   *
   * @param result the figures and the verdict
   * @param timeline the recording, for the HTML report
   */
  record Outcome(Result result, Timeline timeline) {}

  /**
   * Runs one worker per RedLock of {@code crew} until the time is up or the counter sold out, with
   * {@code faults} on the same clock, printing progress through {@code report}; then ends every
   * fault still active and returns the checked result with the recording.
   *
   * @param masters the masters' names for the recording, {@code host:port}
   * @param tolerateViolations whether overlaps, lost updates and falling tokens are reported
   *     without failing the drill (the plan broke the quorum assumption with --allow-breaking)
   */
  static Outcome workers(
      Config config,
      Crew crew,
      FaultSchedule faults,
      List<String> masters,
      boolean tolerateViolations,
      DrillReport report) {
    List<RedLock> clients = crew.clients();
    long start = System.nanoTime();
    long deadline = start + config.duration().toNanos();
    DrillWorker.Counter counter = new DrillWorker.Counter(config.inventory());
    CountDownLatch finished = new CountDownLatch(clients.size());
    List<DrillWorker> workers = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < clients.size(); i++) {
      DrillWorker worker =
          new DrillWorker(config, clients.get(i), counter, start, deadline, finished, crew.live());
      workers.add(worker);
      Thread thread = new Thread(worker, "drill-worker-" + i);
      thread.setDaemon(true);
      threads.add(thread);
    }
    report.running(workers.size(), config.duration());
    faults.start(start);
    threads.forEach(Thread::start);

    long interval = report.progressInterval(config.duration()).toNanos();
    long giveUp = deadline + STOP_GRACE.toNanos();
    boolean allStopped = false;
    Ticks ticks = new Ticks(crew.live(), start);
    try {
      long next = start + interval;
      while (true) {
        long now = System.nanoTime();
        if (now - giveUp >= 0) {
          break;
        }
        long until = next - giveUp < 0 ? next : giveUp;
        if (finished.await(until - now, TimeUnit.NANOSECONDS)) {
          allStopped = true;
          break;
        }
        if (System.nanoTime() - next >= 0) {
          if (next - deadline < 0) {
            long left = counter.value;
            report.progress(ticks.next(next, config.inventory() - left, left, faults.active()));
          }
          next += interval;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (!allStopped) {
      threads.forEach(Thread::interrupt);
    }
    List<String> failures = new ArrayList<>();
    for (int i = 0; i < threads.size(); i++) {
      if (!join(threads.get(i), Duration.ofSeconds(2))) {
        failures.add("worker " + i + " did not stop within " + STOP_GRACE.toSeconds() + " s");
      }
    }
    long elapsed = System.nanoTime() - start;
    faults.stop();
    report.stopped();
    for (FaultWindow window : faults.windows()) {
      for (String error : window.errors()) {
        failures.add(
            "the fault '" + window.fault().summary() + "' did not run as planned: " + error);
      }
    }
    Result result =
        total(
            config,
            workers,
            threads,
            counter.value,
            elapsed,
            crew.watch(),
            failures,
            tolerateViolations);
    Timeline timeline = timeline(workers, threads, crew.logs(), start, elapsed, masters, faults);
    return new Outcome(result, timeline);
  }

  /** The progress line's figures between one tick and the next. */
  private static final class Ticks {
    private final RoundLog.Live live;
    private final long start;
    private long lastAt;
    private long lastAcquisitions;
    private long lastRefused;

    Ticks(RoundLog.Live live, long start) {
      this.live = live;
      this.start = start;
      this.lastAt = start;
    }

    DrillReport.Progress next(long at, long sold, long left, List<Fault> active) {
      long acquisitions = live.acquisitions();
      long refused = live.refused();
      double seconds = Math.max(1e-9, (at - lastAt) / 1e9);
      long acquired = acquisitions - lastAcquisitions;
      long refusedNow = refused - lastRefused;
      lastAt = at;
      lastAcquisitions = acquisitions;
      lastRefused = refused;
      int up = live.votedSince(at - UP_WINDOW.toNanos());
      return new DrillReport.Progress(
          Duration.ofNanos(at - start),
          acquired / seconds,
          acquired == 0
              ? (refusedNow == 0 ? 0.0 : Double.POSITIVE_INFINITY)
              : (double) refusedNow / acquired,
          up,
          live.masters(),
          sold,
          left,
          active);
    }
  }

  private static Timeline timeline(
      List<DrillWorker> workers,
      List<Thread> threads,
      List<RoundLog> logs,
      long start,
      long elapsed,
      List<String> masters,
      FaultSchedule faults) {
    List<List<Window>> leases = new ArrayList<>();
    List<long[]> grantTimes = new ArrayList<>();
    List<long[]> grantLatencies = new ArrayList<>();
    List<RoundLog.Rounds> rounds = new ArrayList<>();
    for (int i = 0; i < workers.size(); i++) {
      DrillWorker w = workers.get(i);
      boolean stopped = !threads.get(i).isAlive(); // else its lists may still change
      List<Grant> grants = stopped ? w.grants : List.of();
      long[] times = new long[grants.size()];
      long[] latencies = new long[grants.size()];
      for (int g = 0; g < grants.size(); g++) {
        times[g] = grants.get(g).acquiredAt();
        latencies[g] = w.acquireLatency.get(g);
      }
      leases.add(stopped ? w.windows : List.of());
      grantTimes.add(times);
      grantLatencies.add(latencies);
      rounds.add(logs.get(i).rounds(start));
    }
    return new Timeline(
        elapsed,
        masters,
        leases,
        grantTimes,
        grantLatencies,
        rounds,
        faults.windows(),
        faults.plan().breakingIntervals(masters.size(), Duration.ofNanos(elapsed)));
  }

  private static boolean join(Thread thread, Duration timeout) {
    try {
      thread.join(timeout.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !thread.isAlive();
  }

  /** Totals the workers' tallies (each read after its thread was joined) and has them checked. */
  private static Result total(
      Config config,
      List<DrillWorker> workers,
      List<Thread> threads,
      long finalInventory,
      long elapsedNanos,
      Watch watch,
      List<String> stopFailures,
      boolean tolerateViolations) {
    long acquisitions = 0;
    long decrements = 0;
    long failed = 0;
    long unavailable = 0;
    long longWaits = 0;
    long expired = 0;
    boolean soldOut = false;
    List<Long> perWorker = new ArrayList<>();
    List<Window> windows = new ArrayList<>();
    List<Grant> grants = new ArrayList<>();
    Samples acquire = new Samples();
    Samples wait = new Samples();
    List<String> failures = new ArrayList<>(stopFailures);
    for (int i = 0; i < workers.size(); i++) {
      if (threads.get(i).isAlive()) {
        continue; // its fields may still change; already reported as not stopped
      }
      DrillWorker w = workers.get(i);
      acquisitions += w.acquisitions;
      decrements += w.decrements;
      failed += w.failedRounds;
      unavailable += w.unavailableRounds;
      longWaits += w.longWaits;
      expired += w.expiredBeforeWrite;
      soldOut |= w.counter.soldOut;
      perWorker.add(w.acquisitions);
      windows.addAll(w.windows);
      grants.addAll(w.grants);
      acquire.addAll(w.acquireLatency);
      wait.addAll(w.waitLatency);
      if (w.failure != null) {
        failures.add("worker " + i + " failed: " + w.failure);
      }
    }
    Handovers handovers = DrillChecks.handovers(windows);
    FencingOrder fencing = DrillChecks.fencingOrder(grants);
    long restarted = watch.restartedRounds();
    long expected = config.inventory() - decrements;
    List<String> tolerated = List.of();
    if (tolerateViolations) {
      failures.addAll(DrillChecks.availability(acquisitions, unavailable, restarted));
      tolerated = DrillChecks.violations(finalInventory, expected, handovers, fencing);
    } else {
      failures.addAll(
          DrillChecks.failures(
              acquisitions, unavailable, restarted, finalInventory, expected, handovers, fencing));
    }
    return new Result(
        acquisitions,
        decrements,
        failed,
        unavailable,
        longWaits,
        expired,
        List.copyOf(perWorker),
        config.inventory(),
        finalInventory,
        soldOut,
        windows.size(),
        handovers.overlaps(),
        handovers.closestNanos(),
        acquire.summary(),
        wait.summary(),
        elapsedNanos,
        fencing,
        restarted,
        watch.breakersOpened(),
        List.copyOf(failures),
        tolerateViolations,
        tolerated);
  }

  /**
   * The masters' answers to the admission: per master, the best answer of every call.
   *
   * @param calls on how many RedLocks {@link RedLock#admitFreshNodes()} was called
   * @param statuses per master: GRANTED (admitted by a call), TAKEN (already trusted) or why no
   *     call reached it
   * @param details per master, the error of a failure; otherwise empty
   */
  record Admission(int calls, Map<String, Status> statuses, Map<String, String> details) {

    Admission {
      statuses = Collections.unmodifiableMap(new LinkedHashMap<>(statuses));
      details = Map.copyOf(details);
    }

    static boolean allAnswered(Map<String, Status> statuses) {
      return statuses.values().stream().allMatch(Admission::answered);
    }

    /** Whether the master trusts its dataset now: admitted by a call, or already. */
    static boolean answered(Status status) {
      return status == Status.GRANTED || status == Status.TAKEN;
    }
  }

  /**
   * What the workers' RedLocks told their listener: rounds in which a master answered RESTARTED,
   * and masters whose circuit breaker opened. Thread-safe, and quick, as a listener must be.
   */
  static final class Watch implements RedLockListener {
    private final LongAdder restartedRounds = new LongAdder();
    private final Set<String> breakersOpened = new ConcurrentSkipListSet<>();

    @Override
    public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
      countRestarted(outcomes);
    }

    @Override
    public void denied(
        String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
      countRestarted(outcomes);
    }

    @Override
    public void circuitChanged(String node, CircuitState state) {
      if (state == CircuitState.OPEN) {
        breakersOpened.add(node);
      }
    }

    private void countRestarted(List<NodeOutcome> outcomes) {
      for (NodeOutcome outcome : outcomes) {
        if (outcome.status() == Status.RESTARTED) {
          restartedRounds.increment();
          return;
        }
      }
    }

    long restartedRounds() {
      return restartedRounds.sum();
    }

    List<String> breakersOpened() {
      return List.copyOf(breakersOpened);
    }
  }
}
