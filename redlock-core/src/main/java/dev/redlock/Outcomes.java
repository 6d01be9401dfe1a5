package dev.redlock;

import dev.redlock.internal.lease.Attempt;
import dev.redlock.internal.lease.Coordinator;
import dev.redlock.internal.lease.Diagnosis;
import dev.redlock.internal.lease.Grant.FenceFailure;
import dev.redlock.internal.lease.Outcome;
import dev.redlock.internal.preflight.Findings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns what the internal layers report into the API's types: their outcomes into {@link
 * NodeOutcome}s, their failures into the API's exceptions, the preflight's findings into an {@link
 * Inspection}. The internal enums mirror the API's constant for constant (a test holds them
 * together), so a constant converts by its ordinal.
 */
final class Outcomes {

  private static final NodeOutcome.Status[] STATUSES = NodeOutcome.Status.values();
  private static final Inspection.Verdict[] VERDICTS = Inspection.Verdict.values();

  private Outcomes() {}

  /** The outcomes as the API shows them, in the same order. */
  static List<NodeOutcome> of(List<Outcome> outcomes) {
    List<NodeOutcome> shown = new ArrayList<>(outcomes.size());
    for (Outcome outcome : outcomes) {
      shown.add(of(outcome));
    }
    return List.copyOf(shown);
  }

  static NodeOutcome of(Outcome outcome) {
    return new NodeOutcome(
        outcome.node(),
        STATUSES[outcome.vote().ordinal()],
        Duration.ofNanos(outcome.elapsedNanos()),
        outcome.detail());
  }

  /**
   * Why an acquisition failed, as the exception {@code RedLock} throws; when too few masters could
   * grant, the message says why, kind by kind, and what to do ({@link Coordinator#explain}); when
   * this client's own queue kept some round of a wait from a master, it says that too.
   */
  static RedLockException failure(Attempt attempt, String message, Coordinator coordinator) {
    return attempt.unavailable()
        ? new QuorumUnavailableException(
            message
                + ": "
                + coordinator.explain(attempt.outcomes())
                + Diagnosis.heldBack(attempt, true),
            of(attempt.outcomes()))
        : new LockTakenException(
            message + ": held by another client" + Diagnosis.heldBack(attempt, false),
            of(attempt.outcomes()));
  }

  /** Why a fencing token was not stored, as the exception {@link Lease#fencingToken()} throws. */
  static RuntimeException failure(FenceFailure failure) {
    return failure.leaseLost()
        ? new LeaseLostException(failure.message())
        : new QuorumUnavailableException(failure.message(), of(failure.outcomes()));
  }

  /** The preflight's findings as {@link RedLock#inspect()} returns them. */
  static Inspection inspection(Findings findings) {
    List<Inspection.Master> masters = new ArrayList<>(findings.masters().size());
    for (Findings.Master master : findings.masters()) {
      List<Inspection.Check> checks = new ArrayList<>(master.checks().size());
      for (Findings.Check check : master.checks()) {
        checks.add(
            new Inspection.Check(
                check.name(), VERDICTS[check.verdict().ordinal()], check.detail()));
      }
      masters.add(new Inspection.Master(master.node(), master.datacenter(), checks));
    }
    List<Inspection.DatacenterLoss> losses = new ArrayList<>(findings.losses().size());
    for (Findings.Loss loss : findings.losses()) {
      losses.add(
          new Inspection.DatacenterLoss(
              loss.datacenter(), loss.lost(), loss.left(), loss.quorum()));
    }
    return new Inspection(masters, losses);
  }
}
