package dev.redlock.drill;

import dev.redlock.RedLock;
import dev.redlock.drill.DrillChecks.FencingOrder;
import dev.redlock.drill.DrillChecks.Grant;
import dev.redlock.drill.DrillChecks.Handovers;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillChecks.Window;
import dev.redlock.drill.DrillPlan.FaultOptions;
import dev.redlock.drill.DrillResult.Setup;
import dev.redlock.drill.FaultPlan.Fault;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.drill.Percentiles.Summary;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The second stage of the drill's pipeline (plan, run, result, reports): takes a {@link DrillPlan}
 * and gives a {@link DrillResult}. It opens the masters (local ones, or the plan's) and what makes
 * the faults, gives each worker its own RedLock, runs the preflight and the admission, runs the
 * workers (see {@link Drill} for what a worker does) and the fault schedule on one clock while
 * telling the {@link DrillProgress}, then totals and checks what the workers recorded. Everything
 * it opened is closed before it returns.
 */
final class DrillRunner {

  /** How long past the deadline the workers get to stop before the drill fails. */
  private static final Duration STOP_GRACE = Duration.ofSeconds(10);

  /** A master is "up" on the progress line if its vote counted within this window. */
  static final Duration UP_WINDOW = Duration.ofMillis(250);

  private final DrillPlan plan;
  private final DrillProgress progress;

  private DrillRunner(DrillPlan plan, DrillProgress progress) {
    this.plan = plan;
    this.progress = progress;
  }

  /**
   * Runs {@code plan}: starts local masters unless it names some, admits the masters when they are
   * the local ones or the plan says so, runs the workers and the fault plan, and shuts everything
   * down.
   *
   * @throws CannotRun if the faults cannot be set up (Toxiproxy does not answer, a master has no
   *     proxy)
   * @throws IllegalStateException if local masters cannot be started
   */
  static DrillResult run(DrillPlan plan, DrillProgress progress) throws CannotRun {
    return new DrillRunner(plan, progress).run();
  }

  private DrillResult run() throws CannotRun {
    try (Masters masters = Masters.open(plan.nodes(), false, progress.out());
        FaultTargets targets = targets(masters)) {
      String origin = masters.origin();
      if (masters.local()) {
        origin += ", started in " + masters.startTime().toMillis() + " ms";
      }
      boolean admit = masters.local() || plan.admitFreshNodes();
      return run(masters, targets, origin, admit);
    }
  }

  /** What makes the plan's faults: the local processes (and proxies), or the user's Toxiproxy. */
  private FaultTargets targets(Masters masters) throws CannotRun {
    FaultOptions faults = plan.faults();
    try {
      if (faults.toxiproxy().isPresent()) {
        return FaultTargets.remote(faults.toxiproxy().get(), masters.uris(), faults.proxies());
      }
      if (masters.local() && !faults.plan().isEmpty()) {
        return FaultTargets.local(masters.processes(), faults.plan().hasNetworkFaults());
      }
      return FaultTargets.none(masters.uris());
    } catch (IOException e) {
      throw new CannotRun(
          faults.toxiproxy().isPresent()
              ? "Toxiproxy at " + faults.toxiproxy().get() + " did not answer: " + e.getMessage()
              : "cannot start the fault proxy: " + e);
    } catch (IllegalArgumentException e) {
      throw new CannotRun("cannot fault the masters: " + e.getMessage());
    }
  }

  private DrillResult run(Masters masters, FaultTargets targets, String origin, boolean admit) {
    List<String> uris = targets.clientUris();
    Watch watch = new Watch();
    RoundLog.Live live = new RoundLog.Live(uris.size());
    List<RedLock> clients = new ArrayList<>();
    List<RoundLog> logs = new ArrayList<>();
    try {
      for (int i = 0; i < plan.workers(); i++) {
        RoundLog log = new RoundLog(uris.size(), watch, live);
        logs.add(log);
        clients.add(
            RedLock.builder().nodes(uris).nodeTimeout(plan.nodeTimeout()).listener(log).build());
      }
      Optional<Admission> admission =
          admit ? Optional.of(Admission.admit(clients)) : Optional.empty();
      // The deployment preflight, before the workers start: whether each master is fit for Redlock
      // and votes, and why not; after the admission, if the drill admits (brand-new local masters
      // do not vote before it, which would only say NO QUORUM).
      progress.preflight(clients.get(0).inspect());
      Setup setup =
          new Setup(
              origin,
              masters.uris(),
              uris,
              masterNames(masters),
              admission,
              targets.description(),
              targets.notes());
      progress.header(plan, setup);
      FaultSchedule schedule =
          new FaultSchedule(plan.faultPlan(), targets, plan.duration(), progress);
      // Ctrl-C: undo the faults on the user's proxies, which outlive the drill. Local masters die
      // with it (the testkit kills them), so nothing is healed, let alone restarted, for them.
      Optional<Thread> heal = Optional.empty();
      if (plan.faults().toxiproxy().isPresent() && !plan.faultPlan().isEmpty()) {
        heal = Optional.of(new Thread(schedule::stop, "drill-heal-on-exit"));
        Runtime.getRuntime().addShutdownHook(heal.get());
      }
      try {
        return workers(setup, clients, logs, live, watch, schedule);
      } finally {
        schedule.stop();
        heal.ifPresent(DrillRunner::removeHook);
      }
    } finally {
      for (RedLock client : clients) {
        client.close();
      }
    }
  }

  private static void removeHook(Thread hook) {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // The JVM is shutting down: the hook runs, and stop() is idempotent.
    }
  }

  /** The masters as {@code host:port}, without credentials, in configuration order. */
  private static List<String> masterNames(Masters masters) {
    List<String> names = new ArrayList<>();
    for (String uri : masters.uris()) {
      URI parsed = URI.create(uri);
      names.add(parsed.getHost() + ":" + (parsed.getPort() < 0 ? 6379 : parsed.getPort()));
    }
    return names;
  }

  /**
   * Runs one worker per RedLock until the time is up or the counter sold out, with the fault
   * schedule on the same clock, printing progress; then ends every fault still active and returns
   * the checked result with the recording.
   */
  private DrillResult workers(
      Setup setup,
      List<RedLock> clients,
      List<RoundLog> logs,
      RoundLog.Live live,
      Watch watch,
      FaultSchedule faults) {
    long start = System.nanoTime();
    long deadline = start + plan.duration().toNanos();
    DrillWorker.Counter counter = new DrillWorker.Counter(plan.inventory());
    CountDownLatch finished = new CountDownLatch(clients.size());
    List<DrillWorker> workers = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < clients.size(); i++) {
      DrillWorker worker =
          new DrillWorker(plan.ttl(), clients.get(i), counter, start, deadline, finished, live);
      workers.add(worker);
      Thread thread = new Thread(worker, "drill-worker-" + i);
      thread.setDaemon(true);
      threads.add(thread);
    }
    progress.running();
    faults.start(start);
    threads.forEach(Thread::start);

    long interval = progress.progressInterval().toNanos();
    long giveUp = deadline + STOP_GRACE.toNanos();
    boolean allStopped = false;
    Ticks ticks = new Ticks(live, start);
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
            progress.progress(ticks.next(next, plan.inventory() - left, left, faults.active()));
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
    progress.stopped();
    for (FaultWindow window : faults.windows()) {
      for (String error : window.errors()) {
        failures.add(
            "the fault '" + window.fault().summary() + "' did not run as planned: " + error);
      }
    }
    // A worker whose thread is still alive may still change its fields: only stopped ones count.
    List<Optional<DrillWorker>> stopped = new ArrayList<>();
    List<Summary> waits = new ArrayList<>();
    for (int i = 0; i < workers.size(); i++) {
      Optional<DrillWorker> worker =
          threads.get(i).isAlive() ? Optional.empty() : Optional.of(workers.get(i));
      stopped.add(worker);
      waits.add(
          worker.map(w -> w.waitLatency.summary()).orElse(Percentiles.summarize(new long[0])));
    }
    Result result = total(stopped, counter.value, elapsed, watch, failures);
    Timeline timeline = timeline(stopped, logs, start, elapsed, setup.masterNames(), faults);
    return new DrillResult(plan, setup, result, timeline, waits);
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

    DrillProgress.Progress next(long at, long sold, long left, List<Fault> active) {
      long acquisitions = live.acquisitions();
      long refused = live.refused();
      double seconds = Math.max(1e-9, (at - lastAt) / 1e9);
      long acquired = acquisitions - lastAcquisitions;
      long refusedNow = refused - lastRefused;
      lastAt = at;
      lastAcquisitions = acquisitions;
      lastRefused = refused;
      int up = live.votedSince(at - UP_WINDOW.toNanos());
      return new DrillProgress.Progress(
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

  /** The recording; {@code stopped} is empty for a worker that did not stop. */
  private static Timeline timeline(
      List<Optional<DrillWorker>> stopped,
      List<RoundLog> logs,
      long start,
      long elapsed,
      List<String> masters,
      FaultSchedule faults) {
    List<List<Window>> leases = new ArrayList<>();
    List<long[]> grantTimes = new ArrayList<>();
    List<long[]> grantLatencies = new ArrayList<>();
    List<RoundLog.Rounds> rounds = new ArrayList<>();
    for (int i = 0; i < stopped.size(); i++) {
      Optional<DrillWorker> w = stopped.get(i);
      List<Grant> grants = w.map(worker -> worker.grants).orElse(List.of());
      long[] times = new long[grants.size()];
      long[] latencies = new long[grants.size()];
      for (int g = 0; g < grants.size(); g++) {
        times[g] = grants.get(g).acquiredAt();
        latencies[g] = w.get().acquireLatency.get(g);
      }
      leases.add(w.map(worker -> worker.windows).orElse(List.of()));
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

  /**
   * Totals the tallies of the workers that stopped (empty for one that did not, already reported)
   * and has them checked.
   */
  private Result total(
      List<Optional<DrillWorker>> stopped,
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
    for (int i = 0; i < stopped.size(); i++) {
      if (stopped.get(i).isEmpty()) {
        continue;
      }
      DrillWorker w = stopped.get(i).get();
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
    long expected = plan.inventory() - decrements;
    boolean tolerate = plan.toleratesViolations();
    List<String> tolerated = List.of();
    if (tolerate) {
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
        plan.inventory(),
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
        tolerate,
        tolerated);
  }
}
