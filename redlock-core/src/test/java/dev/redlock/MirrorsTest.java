package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.redlock.internal.lease.Outcome;
import dev.redlock.internal.preflight.Findings;
import dev.redlock.internal.transport.BreakerState;
import dev.redlock.internal.transport.Vote;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The internal layers' own value types mirror the API's, which converts them constant by constant
 * (by ordinal) and outcome by outcome: same constants, same order, same reading.
 */
class MirrorsTest {

  @Test
  void aVoteHasTheConstantsOfNodeOutcomeStatusInTheirOrder() {
    assertEquals(names(NodeOutcome.Status.values()), names(Vote.values()));
  }

  @Test
  void aBreakerStateHasTheConstantsOfCircuitStateInTheirOrder() {
    assertEquals(names(RedLockListener.CircuitState.values()), names(BreakerState.values()));
  }

  @Test
  void aFindingsVerdictHasTheConstantsOfInspectionVerdictInTheirOrder() {
    assertEquals(names(Inspection.Verdict.values()), names(Findings.Verdict.values()));
  }

  @Test
  void anOutcomeBecomesTheNodeOutcomeItReadsAs() {
    for (Vote vote : Vote.values()) {
      for (String detail : List.of("", "Connection refused")) {
        Outcome outcome = new Outcome("10.0.0.1:6379", vote, 1_234_567, detail);
        NodeOutcome shown = Outcomes.of(outcome);
        assertEquals(
            new NodeOutcome(
                "10.0.0.1:6379",
                NodeOutcome.Status.valueOf(vote.name()),
                Duration.ofNanos(1_234_567),
                detail),
            shown);
        assertEquals(shown.toString(), outcome.toString());
      }
    }
  }

  private static List<String> names(Enum<?>[] constants) {
    return Arrays.stream(constants).map(Enum::name).toList();
  }
}
