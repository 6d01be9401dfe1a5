package dev.redlock.simulation;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * A campaign of the simulation: each fault family within the library's assumptions alone, then the
 * calm ones together (whose runs are judged for progress), then all of them together, then each
 * assumption broken on purpose, over many seeds, with a table per family of what ran and what the
 * checkers found (mutual exclusion on the simulation's true time; fencing tokens rising in grant
 * order; every wait over by its {@code maxWait} plus {@link SimHarness#OVERRUN_BOUND_NANOS}). CI
 * runs a fixed budget of it ({@code SimulationBudgetTest}); the long one is a program that prints
 * figures, not a test:
 *
 * <pre>
 * ./mvnw -q -pl redlock-simulation -am -Pcampaign package -DskipTests -Dcampaign.args="SEEDS STEPS FAULT_EVERY"
 * </pre>
 *
 * <p>Exits 1 if any run within the assumptions broke a property, naming its seed. Its seeds run on
 * {@link #threads()} threads, each seed on one; the table is printed in order.
 */
final class SimulationCampaign {

  /** The families that break an assumption on purpose: their violations are expected. */
  static final EnumSet<Fault> BROKEN =
      EnumSet.of(
          Fault.CLOCK_TOO_FAST,
          Fault.CLIENT_CLOCK_TOO_SLOW,
          Fault.ADMIT_TOO_SOON,
          Fault.CLIENT_PAUSE,
          Fault.MASTER_CLOCK_JUMP);

  /**
   * What a campaign ran and found.
   *
   * @param tries acquisitions tried within the assumptions
   * @param contended those tried while another client held a valid lease or waited
   * @param nearFault those tried within a second of a fault
   * @param failures runs within the assumptions that broke a property
   * @param brokenViolations per family of {@link #BROKEN}, in its order: runs with a violation
   * @param brokenFencing runs of the {@link #BROKEN} families whose fencing tokens went back
   * @param cpuSeconds the CPU time of the threads that ran the seeds within the assumptions
   * @param seconds the wall time of it all
   */
  record Totals(
      long tries,
      long contended,
      long nearFault,
      int failures,
      List<Integer> brokenViolations,
      int brokenFencing,
      double cpuSeconds,
      double seconds) {}

  private SimulationCampaign() {}

  /**
   * Runs the campaign.
   *
   * @param args seeds per family (default 100), steps per seed (default 1,000), a fault one step in
   *     how many (default 10), and optionally the one family to run (fault names, comma-separated)
   */
  public static void main(String[] args) throws Exception {
    int seeds = args.length > 0 ? Integer.parseInt(args[0]) : 100;
    int steps = args.length > 1 ? Integer.parseInt(args[1]) : 1_000;
    int faultEvery = args.length > 2 ? Integer.parseInt(args[2]) : 10;
    Totals totals;
    if (args.length > 3) { // one family, named: e.g. ISOLATED_WAITER or PARTITION,SCRIPT_FLUSH
      EnumSet<Fault> family = EnumSet.noneOf(Fault.class);
      for (String name : args[3].split(",")) {
        family.add(Fault.valueOf(name.trim()));
      }
      totals = run(List.of(family), seeds, steps, faultEvery, System.out);
    } else {
      totals = run(seeds, steps, faultEvery, System.out);
    }
    System.exit(totals.failures() > 0 ? 1 : 0);
  }

  /**
   * Runs {@code seeds} seeds of {@code steps} steps per family and prints the table to {@code out}.
   */
  static Totals run(int seeds, int steps, int faultEvery, PrintStream out) throws Exception {
    EnumSet<Fault> within = EnumSet.complementOf(BROKEN);
    List<Set<Fault>> families = new ArrayList<>();
    families.add(EnumSet.noneOf(Fault.class));
    for (Fault fault : within) {
      families.add(EnumSet.of(fault));
    }
    families.add(EnumSet.copyOf(SimHarness.CALM)); // every calm fault at once: progress judged
    families.add(within);
    for (Fault fault : BROKEN) {
      families.add(EnumSet.of(fault));
    }
    return run(families, seeds, steps, faultEvery, out);
  }

  /**
   * How many threads run a campaign's seeds: {@code -Dsimulation.threads}, else one per processor.
   * Each run is on one thread and shares nothing with another, so they run side by side and each
   * gives the same figures as alone.
   */
  static int threads() {
    return Math.max(
        1, Integer.getInteger("simulation.threads", Runtime.getRuntime().availableProcessors()));
  }

  /** One seed's run, its trace dropped, and the CPU time of the thread that ran it. */
  private record Seeded(Run run, long cpuNanos) {}

  /** Runs {@code families} as {@link #run(int, int, int, PrintStream)} does. */
  static Totals run(
      List<Set<Fault>> families, int seeds, int steps, int faultEvery, PrintStream out)
      throws Exception {
    int threads = threads();
    out.printf(
        "simulation campaign: %d seeds of %d steps per family, a fault one step in %d, on %d"
            + " thread(s)%n",
        seeds, steps, faultEvery, threads);
    out.println(
        "| family | tries | contended | near a fault | grants | faults | notices | violations |"
            + " fencing failures | waits late | state left | worst overrun ms | longest unserved ms,"
            + " polling |"
            + " wake-ups | longest named ms | CPU s |");
    out.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    java.lang.management.ThreadMXBean cpuClock = ManagementFactory.getThreadMXBean();
    long allTries = 0;
    long allContended = 0;
    long allNearFault = 0;
    int failures = 0;
    List<Integer> brokenViolations = new ArrayList<>();
    int brokenFencing = 0;
    long cpu = 0;
    long start = System.nanoTime();
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(
            threads,
            task -> {
              Thread thread = new Thread(task, "simulation-campaign");
              thread.setDaemon(true);
              return thread;
            });
    try {
      // Every seed of every family queued at once, in order: the table is printed in order, each
      // family's row once its seeds are done, while the threads go on with the next families.
      List<List<java.util.concurrent.Future<Seeded>>> queued = new ArrayList<>();
      for (Set<Fault> family : families) {
        List<java.util.concurrent.Future<Seeded>> runs = new ArrayList<>();
        for (long seed = 1; seed <= seeds; seed++) {
          long s = seed;
          runs.add(
              pool.submit(
                  () -> {
                    long before = cpuClock.getCurrentThreadCpuTime();
                    Run run = SimHarness.run(s, steps, family, faultEvery, b -> b, x -> x);
                    return new Seeded(
                        withoutTrace(run), cpuClock.getCurrentThreadCpuTime() - before);
                  }));
        }
        queued.add(runs);
      }
      for (int f = 0; f < families.size(); f++) {
        Set<Fault> family = families.get(f);
        boolean broken = !family.isEmpty() && BROKEN.containsAll(family);
        Tally tally = new Tally(family, broken);
        for (int i = 0; i < seeds; i++) {
          Seeded seeded;
          try {
            seeded = queued.get(f).get(i).get();
          } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
          }
          tally.add(seeded, i + 1, out);
        }
        queued.set(f, List.of()); // done with: let its runs go
        if (broken) {
          brokenViolations.add(tally.violations);
          brokenFencing += tally.fencing;
        } else {
          failures += tally.violations + tally.fencing + tally.late + tally.left;
          allTries += tally.tries;
          allContended += tally.contended;
          allNearFault += tally.nearFault;
          cpu += tally.cpu;
        }
        tally.printRow(out);
      }
    } finally {
      pool.shutdownNow();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    double cpuSeconds = cpu / 1e9;
    out.printf(
        "within the assumptions: %d acquisitions tried (%d contended, %d within a second of a"
            + " fault), %d runs failed; %.1f s of the simulation threads' CPU: %.0f per CPU-second;"
            + " everything in %.1f s%n",
        allTries, allContended, allNearFault, failures, cpuSeconds, allTries / cpuSeconds, seconds);
    return new Totals(
        allTries,
        allContended,
        allNearFault,
        failures,
        brokenViolations,
        brokenFencing,
        cpuSeconds,
        seconds);
  }

  /** One family's figures over its seeds, and the failures it printed. */
  private static final class Tally {
    final Set<Fault> family;
    final boolean broken;
    long cpu;
    long tries;
    long contended;
    long nearFault;
    long grants;
    long faults;
    long notices;
    int violations;
    int fencing;
    int late;
    int left; // runs whose masters kept something past its bound
    long worstOverrun;
    final long[] unserved = new long[2]; // polling, wake-ups
    long named; // the longest a named waiter went without the resource

    Tally(Set<Fault> family, boolean broken) {
      this.family = family;
      this.broken = broken;
    }

    /** Adds the run of {@code seed}, printing its failures. */
    void add(Seeded seeded, long seed, PrintStream out) {
      Run run = seeded.run();
      cpu += seeded.cpuNanos();
      tries += run.tries();
      contended += run.contended();
      nearFault += run.nearFault();
      grants += run.grants();
      faults += run.faults();
      notices += run.notices();
      worstOverrun = Math.max(worstOverrun, run.worstOverrunNanos());
      int engine = SimHarness.wakeUps(seed) ? 1 : 0;
      unserved[engine] = Math.max(unserved[engine], run.longestUnservedNanos());
      named = Math.max(named, run.longestNamedNanos());
      String prefix = broken ? "expected, the assumption broken: " : "";
      if (run.violation() != null) {
        violations++;
        if (!broken || violations == 1) {
          out.println(prefix + "VIOLATION " + family + ": " + run.violation());
        }
      }
      if (run.fencing() != null) {
        fencing++;
        out.println("FENCING " + family + ": " + run.fencing());
      }
      if (run.liveness() != null) {
        late++;
        out.println("LATE " + family + ": " + run.liveness());
      }
      if (run.order() != null) {
        late++;
        out.println("ORDER " + family + ": " + run.order());
      }
      if (run.state() != null) {
        left++;
        out.println("STATE " + family + ": " + run.state());
      }
    }

    /** The family's row of the table. */
    void printRow(PrintStream out) {
      out.printf(
          "| %s%s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f"
              + " | %.1f |%n",
          family.isEmpty()
              ? "none"
              : family.size() == 1
                  ? family.iterator().next()
                  : family.equals(SimHarness.CALM)
                      ? "calm " + family.size()
                      : "all " + family.size(),
          broken ? " (assumption broken)" : "",
          tries,
          contended,
          nearFault,
          grants,
          faults,
          notices,
          violations,
          fencing,
          late,
          left,
          worstOverrun / 1e6,
          unserved[0] / 1e6,
          unserved[1] / 1e6,
          named / 1e6,
          cpu / 1e9);
    }
  }

  /** {@code run} without its trace: a campaign keeps only its figures and failures. */
  private static Run withoutTrace(Run run) {
    return new Run(
        List.of(),
        run.tries(),
        run.contended(),
        run.nearFault(),
        run.grants(),
        run.faults(),
        run.notices(),
        run.events(),
        run.violation(),
        run.fencing(),
        run.liveness(),
        run.order(),
        run.state(),
        run.worstOverrunNanos(),
        run.longestUnservedNanos(),
        run.longestNamedNanos(),
        run.failedAt());
  }
}
