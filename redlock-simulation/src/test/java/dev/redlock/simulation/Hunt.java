package dev.redlock.simulation;

import dev.redlock.RedLockBuilder;
import dev.redlock.simulation.Workload.Step;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * Seeds run one after another until one fails, and a failing schedule shrunk until removing any one
 * fault or step makes it pass.
 */
final class Hunt {

  private Hunt() {}

  /**
   * The first failure of seeds 1 to {@code seeds}, each of {@code steps} steps with {@code faults}
   * (names of {@link Fault}, comma-separated; empty: none) one step in {@code faultEvery}, or null:
   * what {@link PatchedCore} runs in a class loader of its own, so only strings cross.
   */
  static String hunt(String faults, int seeds, int steps, int faultEvery) throws Exception {
    Set<Fault> families = EnumSet.noneOf(Fault.class);
    for (String name : faults.split(",")) {
      if (!name.isBlank()) {
        families.add(Fault.valueOf(name.trim()));
      }
    }
    long first = Long.getLong("simulation.firstSeed", 1); // to replay one seed of a hunt
    return firstFailure(
        seeds,
        seed ->
            SimHarness.run(first - 1 + seed, steps, families, faultEvery, b -> b, s -> s)
                .failure());
  }

  /** What one seed's run gave: a failure's description, or null. */
  @FunctionalInterface
  interface SeedRun {
    String failure(long seed) throws Exception;
  }

  /** The first failure of seeds 1 to {@code seeds}, or null if none failed. */
  static String firstFailure(int seeds, SeedRun run) throws Exception {
    for (long seed = 1; seed <= seeds; seed++) {
      String failure = run.failure(seed);
      if (failure != null) {
        return failure;
      }
    }
    return null;
  }

  /**
   * Shrinks a failing schedule: drops the steps after the failure, then each fault and each step
   * whose removal still fails, until removing any one more makes the run pass (or {@code budget}
   * runs were spent).
   *
   * @param fails whether a run fails as the original did
   * @return the shrunk schedule
   */
  static List<Step> shrink(
      long seed,
      List<Step> schedule,
      UnaryOperator<RedLockBuilder> settings,
      UnaryOperator<String> bug,
      java.util.function.Predicate<Run> fails,
      int budget)
      throws Exception {
    Run first = SimHarness.run(seed, schedule, settings, bug);
    if (!fails.test(first)) {
      throw new IllegalArgumentException("the schedule does not fail");
    }
    List<Step> current = new ArrayList<>(schedule.subList(0, first.failedAt() + 1));
    int runs = 1;
    boolean changed = true;
    while (changed && runs < budget) {
      changed = false;
      for (int i = current.size() - 1; i >= 0 && runs < budget; i--) {
        List<Step> candidate = new ArrayList<>(current);
        if (current.get(i).fault() != null) {
          candidate.set(i, current.get(i).withoutFault());
        } else {
          candidate.remove(i);
        }
        runs++;
        Run tried = SimHarness.run(seed, candidate, settings, bug);
        if (fails.test(tried)) {
          current = new ArrayList<>(candidate.subList(0, tried.failedAt() + 1));
          changed = true;
          i = Math.min(i, current.size());
        }
      }
    }
    return current;
  }
}
