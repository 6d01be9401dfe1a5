package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.FaultPlan.Interval;
import dev.redlock.drill.FaultPlan.Problem;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * What one drill run does, the first stage of the drill's pipeline (plan, run, result, reports):
 * the masters, the workers, the lock's settings, the fault plan and how its faults are made, and
 * where the HTML report goes. Checked once, when it is made: a plan that exists is one the drill
 * can run, its fault plan fitting the masters and the run's length ({@link FaultPlanCheck}).
 * Immutable.
 *
 * @param nodes the masters' URIs; empty to start {@link Masters#LOCAL_COUNT} local ones
 * @param workers how many workers, each with its own RedLock
 * @param duration how long the workers run
 * @param inventory the counter's initial value
 * @param ttl each lease's time to live
 * @param nodeTimeout each RedLock's per-master timeout
 * @param admitFreshNodes whether to admit the {@code nodes} as a brand-new cluster (local masters
 *     are always admitted)
 * @param faults the fault plan and how to make its faults
 * @param report where to write the HTML report; empty for none
 */
record DrillPlan(
    List<String> nodes,
    int workers,
    Duration duration,
    long inventory,
    Duration ttl,
    Duration nodeTimeout,
    boolean admitFreshNodes,
    FaultOptions faults,
    Optional<Path> report) {

  /**
   * Checks the plan.
   *
   * @throws IllegalArgumentException for fewer than one worker or an inventory below one
   * @throws Refused if the fault plan does not fit the run
   */
  DrillPlan {
    nodes = List.copyOf(nodes);
    requireNonNull(duration, "duration");
    requireNonNull(ttl, "ttl");
    requireNonNull(nodeTimeout, "nodeTimeout");
    requireNonNull(faults, "faults");
    requireNonNull(report, "report");
    if (workers < 1) {
      throw new IllegalArgumentException("workers must be at least 1: " + workers);
    }
    if (inventory < 1) {
      throw new IllegalArgumentException("inventory must be at least 1: " + inventory);
    }
    List<Problem> problems =
        FaultPlanCheck.check(
            faults.plan(), masters(nodes), duration, nodes.isEmpty(), faults.allowBreaking());
    if (!problems.isEmpty()) {
      throw new Refused(problems);
    }
  }

  /** The defaults, with the given masters (none: start local ones), no plan and no HTML. */
  static DrillPlan defaults(List<String> nodes) {
    return new DrillPlan(
        nodes,
        Drill.DEFAULT_WORKERS,
        Drill.DEFAULT_DURATION,
        Drill.DEFAULT_INVENTORY,
        Drill.DEFAULT_TTL,
        Drill.DEFAULT_NODE_TIMEOUT,
        false,
        FaultOptions.NONE,
        Optional.empty());
  }

  /** Returns a copy with another number of workers. */
  DrillPlan withWorkers(int workers) {
    return new DrillPlan(
        nodes, workers, duration, inventory, ttl, nodeTimeout, admitFreshNodes, faults, report);
  }

  /** Returns a copy with another duration. */
  DrillPlan withDuration(Duration duration) {
    return new DrillPlan(
        nodes, workers, duration, inventory, ttl, nodeTimeout, admitFreshNodes, faults, report);
  }

  /** Returns a copy with another initial inventory. */
  DrillPlan withInventory(long inventory) {
    return new DrillPlan(
        nodes, workers, duration, inventory, ttl, nodeTimeout, admitFreshNodes, faults, report);
  }

  /** Returns a copy that does or does not admit the {@code nodes} as a brand-new cluster. */
  DrillPlan withAdmitFreshNodes(boolean admit) {
    return new DrillPlan(
        nodes, workers, duration, inventory, ttl, nodeTimeout, admit, faults, report);
  }

  /** How many masters the run has: the {@code nodes}, or the local ones. */
  int masters() {
    return masters(nodes);
  }

  private static int masters(List<String> nodes) {
    return nodes.isEmpty() ? Masters.LOCAL_COUNT : nodes.size();
  }

  /** How many masters make a quorum. */
  int quorum() {
    return FaultPlan.quorum(masters());
  }

  /** The faults ({@link FaultPlan#NONE} for none). */
  FaultPlan faultPlan() {
    return faults.plan();
  }

  /** The planned intervals in which more than a minority of the masters is faulted. */
  List<Interval> breaking() {
    return faultPlan().breakingIntervals(masters(), duration);
  }

  /** The most masters faulted at one instant of the run (every kind of fault counts). */
  int mostFaultedAtOnce() {
    return faultPlan().mostFaultedAtOnce(duration);
  }

  /**
   * Whether overlaps, lost updates and falling tokens are reported without failing the drill: the
   * plan breaks the quorum assumption, on purpose ({@code --allow-breaking}).
   */
  boolean toleratesViolations() {
    return faults.allowBreaking() && !breaking().isEmpty();
  }

  /**
   * The fault side of a drill.
   *
   * @param plan the faults ({@link FaultPlan#NONE} for none)
   * @param toxiproxy the address of the user's Toxiproxy API, if the faults go through it
   * @param proxies the proxy name of each master (empty: found by port)
   * @param allowBreaking whether the plan may fault more than a minority at once
   */
  record FaultOptions(
      FaultPlan plan, Optional<String> toxiproxy, List<String> proxies, boolean allowBreaking) {

    static final FaultOptions NONE =
        new FaultOptions(FaultPlan.NONE, Optional.empty(), List.of(), false);

    FaultOptions {
      requireNonNull(plan, "plan");
      requireNonNull(toxiproxy, "toxiproxy");
      proxies = List.copyOf(proxies);
    }
  }

  /** A fault plan that does not fit the run; nothing was run. */
  static final class Refused extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final transient List<Problem> problems;

    Refused(List<Problem> problems) {
      super(String.join("\n", FaultPlan.messages(problems)));
      this.problems = List.copyOf(problems);
    }

    /** Every problem, as {@code "<source> line N: reason"}. */
    List<Problem> problems() {
      return problems;
    }
  }
}
