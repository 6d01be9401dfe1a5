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
   * Runs one worker per RedLock in {@code clients} until the time is up or the counter sold out,
   * printing progress through {@code report}, and returns the checked result.
   */
  static Result workers(Config config, List<RedLock> clients, Watch watch, DrillReport report) {
    long start = System.nanoTime();
    long deadline = start + config.duration().toNanos();
    DrillWorker.Counter counter = new DrillWorker.Counter(config.inventory());
    CountDownLatch finished = new CountDownLatch(clients.size());
    List<DrillWorker> workers = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < clients.size(); i++) {
      DrillWorker worker =
          new DrillWorker(config, clients.get(i), counter, start, deadline, finished);
      workers.add(worker);
      Thread thread = new Thread(worker, "drill-worker-" + i);
      thread.setDaemon(true);
      threads.add(thread);
    }
    report.running(workers.size(), config.duration());
    threads.forEach(Thread::start);

    // A progress line about ten times per run, at least a second apart.
    long interval = Math.max(TimeUnit.SECONDS.toNanos(1), config.duration().toNanos() / 10);
    long giveUp = deadline + STOP_GRACE.toNanos();
    boolean allStopped = false;
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
            report.progress(Duration.ofNanos(next - start), config.inventory() - left, left);
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
    return total(config, workers, threads, counter.value, elapsed, watch, failures);
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
      List<String> stopFailures) {
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
    failures.addAll(
        DrillChecks.failures(
            acquisitions, unavailable, restarted, finalInventory, expected, handovers, fencing));
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
        List.copyOf(failures));
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
