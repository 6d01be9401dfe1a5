package dev.redlock.simulation;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * A long campaign of the simulation: each fault family within the library's assumptions alone, then
 * all of them together, over many seeds, with a table per family of what ran and what the checkers
 * found (mutual exclusion on the simulation's true time; fencing tokens rising in grant order). A
 * program that prints figures, not a test:
 *
 * <pre>
 * ./mvnw -q -pl redlock-simulation -am -Pcampaign package -DskipTests -Dcampaign.args="SEEDS STEPS FAULT_EVERY"
 * </pre>
 *
 * <p>Exits 1 if any run broke either property, naming its seed. Not thread-safe: one thread runs
 * it.
 */
final class SimulationCampaign {

  private SimulationCampaign() {}

  /**
   * Runs the campaign.
   *
   * @param args seeds per family (default 100), steps per seed (default 1,000), a fault one step in
   *     how many (default 10)
   */
  public static void main(String[] args) throws Exception {
    int seeds = args.length > 0 ? Integer.parseInt(args[0]) : 100;
    int steps = args.length > 1 ? Integer.parseInt(args[1]) : 1_000;
    int faultEvery = args.length > 2 ? Integer.parseInt(args[2]) : 10;
    Set<SimHarness.Fault> within =
        EnumSet.complementOf(
            EnumSet.of(SimHarness.Fault.CLOCK_TOO_FAST, SimHarness.Fault.CLIENT_CLOCK_TOO_SLOW));
    List<Set<SimHarness.Fault>> families = new ArrayList<>();
    for (SimHarness.Fault fault : within) {
      families.add(EnumSet.of(fault));
    }
    families.add(within);
    System.out.printf(
        "simulation campaign: %d seeds of %d steps per family, a fault one step in %d%n",
        seeds, steps, faultEvery);
    System.out.println("| family | tries | grants | faults | violations | fencing failures | s |");
    System.out.println("|---|---|---|---|---|---|---|");
    boolean failed = false;
    long allTries = 0;
    long start = System.nanoTime();
    for (Set<SimHarness.Fault> family : families) {
      long familyStart = System.nanoTime();
      long tries = 0;
      long grants = 0;
      long faults = 0;
      int violations = 0;
      int fencing = 0;
      for (long seed = 1; seed <= seeds; seed++) {
        SimHarness.Run run = SimHarness.run(seed, steps, family, faultEvery, b -> b, s -> s);
        for (String line : run.trace()) {
          if (line.endsWith(" granted")
              || line.endsWith(" refused")
              || line.endsWith(" unavailable")) {
            tries++;
          }
        }
        grants += run.grants();
        faults += run.faults();
        if (run.violation() != null) {
          violations++;
          System.out.println("VIOLATION " + family + ": " + run.violation());
        }
        if (run.fencing() != null) {
          fencing++;
          System.out.println("FENCING " + family + ": " + run.fencing());
        }
      }
      failed |= violations > 0 || fencing > 0;
      allTries += tries;
      System.out.printf(
          "| %s | %d | %d | %d | %d | %d | %.1f |%n",
          family.size() == 1 ? family.iterator().next() : "all " + family.size(),
          tries,
          grants,
          faults,
          violations,
          fencing,
          (System.nanoTime() - familyStart) / 1e9);
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    System.out.printf(
        "%d acquisitions tried in %.1f s: %.0f a second%n", allTries, seconds, allTries / seconds);
    System.exit(failed ? 1 : 0);
  }
}
