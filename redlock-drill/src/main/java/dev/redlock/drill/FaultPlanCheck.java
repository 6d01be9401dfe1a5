package dev.redlock.drill;

import dev.redlock.drill.FaultPlan.Fault;
import dev.redlock.drill.FaultPlan.Kind;
import dev.redlock.drill.FaultPlan.Problem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/**
 * Checks a {@link FaultPlan} against a run before anything runs: the number of masters, the run's
 * length, local or remote masters, one fault per master at a time, and the quorum rule (never more
 * than a minority of the masters faulted at once, unless the user allows it). Every problem is
 * reported as {@code "<source> line N: reason"}. Stateless.
 */
final class FaultPlanCheck {

  private FaultPlanCheck() {}

  /**
   * Checks the plan against a run, before anything runs: every master exists, every fault begins
   * before the end, process faults only on local masters, one fault at a time per master, and
   * (unless {@code allowBreaking}) never more than a minority of the masters faulted at once.
   *
   * @param plan the plan
   * @param masters how many masters the run has
   * @param runLength how long the workers run
   * @param local whether the masters are local processes (else only network faults work)
   * @param allowBreaking whether more than a minority may be faulted at once
   * @return the problems; empty if the plan fits the run
   */
  static List<Problem> check(
      FaultPlan plan, int masters, Duration runLength, boolean local, boolean allowBreaking) {
    List<Problem> problems = new ArrayList<>();
    for (Fault fault : plan.faults()) {
      String where = plan.where(fault) + ": ";
      for (int master : fault.masters()) {
        if (master < 1 || master > masters) {
          problems.add(
              problem(
                  fault,
                  where
                      + "no master "
                      + master
                      + ": the drill has "
                      + masters
                      + (masters == 1 ? " master (1)" : " masters (1 to " + masters + ")")));
        }
      }
      if (fault.at().compareTo(runLength) >= 0) {
        problems.add(
            problem(
                fault,
                where
                    + "begins at "
                    + FaultPlan.format(fault.at())
                    + ", but the workers run for "
                    + FaultPlan.format(runLength)
                    + " (--duration)"));
      }
      if (!local && !fault.kind().network()) {
        problems.add(
            problem(
                fault,
                where
                    + fault.kind().word()
                    + " needs a local redis-server process; with --toxiproxy only network faults"
                    + " work ("
                    + Kind.words(true)
                    + ")"));
      }
    }
    problems.addAll(overlapsOnOneMaster(plan, runLength));
    if (!allowBreaking) {
      problems.addAll(breaking(plan, masters, runLength));
    }
    return problems;
  }

  private static Problem problem(Fault fault, String message) {
    return new Problem(fault.line(), message);
  }

  private static List<Problem> overlapsOnOneMaster(FaultPlan plan, Duration runLength) {
    List<Problem> problems = new ArrayList<>();
    for (int i = 0; i < plan.faults().size(); i++) {
      Fault later = plan.faults().get(i);
      for (int j = 0; j < i; j++) {
        Fault earlier = plan.faults().get(j);
        if (earlier.end(runLength).compareTo(later.at()) <= 0) {
          continue;
        }
        for (int master : later.masters()) {
          if (earlier.masters().contains(master)) {
            problems.add(
                problem(
                    later,
                    plan.where(later)
                        + ": master "
                        + master
                        + " is already faulted from "
                        + FaultPlan.format(earlier.at())
                        + (earlier.open()
                            ? " to the end of the run"
                            : " to " + FaultPlan.format(earlier.end(runLength)))
                        + " ("
                        + plan.unit()
                        + " "
                        + earlier.line()
                        + "); one fault per master at a time"));
          }
        }
      }
    }
    return problems;
  }

  /** One problem per fault that, when it begins, takes the faulted masters past a minority. */
  private static List<Problem> breaking(FaultPlan plan, int masters, Duration runLength) {
    int quorum = FaultPlan.quorum(masters);
    int minority = masters - quorum;
    List<Problem> problems = new ArrayList<>();
    for (Fault fault : plan.faults()) {
      List<Fault> active = plan.activeAt(fault.at(), runLength);
      Set<Integer> faulted = new TreeSet<>();
      active.forEach(f -> faulted.addAll(f.masters()));
      Set<Integer> others = new TreeSet<>();
      active.stream().filter(f -> f != fault).forEach(f -> others.addAll(f.masters()));
      boolean addsMaster = !others.containsAll(fault.masters());
      if (faulted.size() > minority && active.contains(fault) && addsMaster) {
        Set<Integer> lines = new TreeSet<>();
        active.forEach(f -> lines.add(f.line()));
        problems.add(
            problem(
                fault,
                String.format(
                    Locale.ROOT,
                    "%s: from %s, masters %s are faulted at once (%s %s): more than a"
                        + " minority of %d (at most %d, so that a quorum of %d never needs a faulted"
                        + " master); pass --allow-breaking to run it anyway",
                    plan.where(fault),
                    FaultPlan.format(fault.at()),
                    FaultPlan.joinAnd(faulted),
                    lines.size() == 1 ? plan.unit() : plan.unit() + "s",
                    FaultPlan.joinAnd(lines),
                    masters,
                    minority,
                    quorum)));
      }
    }
    return problems;
  }
}
