package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.drill.FaultPlan.Fault;
import dev.redlock.drill.FaultPlan.Interval;
import dev.redlock.drill.FaultPlan.Kind;
import dev.redlock.drill.FaultPlan.Problem;
import dev.redlock.drill.FaultPlanParser.PlanException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The fault plan's grammar and the checks made before anything runs. */
class FaultPlanTest {

  private static final Duration MINUTE = Duration.ofMinutes(1);

  @Test
  void theIssuesExamplePlanReadsAsWritten() throws Exception {
    FaultPlan plan =
        FaultPlanParser.parseList(
            "at 10 s pause master 2 for 5 s; at 20 s partition masters 1 and 2 for 10 s;"
                + " at 40 s kill master 3 and restart it after 2 s",
            "--faults");

    assertEquals(
        List.of(
            new Fault(
                1,
                Duration.ofSeconds(10),
                Kind.PAUSE,
                List.of(2),
                Optional.of(Duration.ofSeconds(5)),
                Duration.ZERO,
                "at 10 s pause master 2 for 5 s"),
            new Fault(
                2,
                Duration.ofSeconds(20),
                Kind.PARTITION,
                List.of(1, 2),
                Optional.of(Duration.ofSeconds(10)),
                Duration.ZERO,
                "at 20 s partition masters 1 and 2 for 10 s"),
            new Fault(
                3,
                Duration.ofSeconds(40),
                Kind.KILL,
                List.of(3),
                Optional.of(Duration.ofSeconds(2)),
                Duration.ZERO,
                "at 40 s kill master 3 and restart it after 2 s")),
        plan.faults());
    assertEquals("fault", plan.unit());
  }

  @Test
  void aFileHasOneFaultPerLineWithCommentsBlanksUnitsAndListsOfMasters() throws Exception {
    String text =
        """
        # a failover drill
        AT 1.5s LATENCY 80ms ON MASTER 5 FOR 500ms   # replies late

        at 2m blackhole masters 4, 1 for 1s
        at 30s kill master 3, restart after 2s
        at 40s kill master 2
        at 50s pause master 1
        """;
    FaultPlan plan = FaultPlanParser.parse(text, "plan.txt");
    List<Fault> faults = plan.faults();

    assertEquals(5, faults.size());
    Fault latency = faults.get(0);
    assertEquals(2, latency.line());
    assertEquals(Kind.LATENCY, latency.kind());
    assertEquals(Duration.ofMillis(1500), latency.at());
    assertEquals(Duration.ofMillis(80), latency.latency());
    assertEquals(Optional.of(Duration.ofMillis(500)), latency.length());
    assertEquals("latency 80 ms on master 5", latency.summary());
    // In order of time, not of line; masters ascending.
    assertEquals(List.of(5, 6, 7, 4), faults.stream().skip(1).map(Fault::line).toList());
    Fault blackhole = faults.get(4);
    assertEquals(Duration.ofMinutes(2), blackhole.at());
    assertEquals(List.of(1, 4), blackhole.masters());
    assertEquals("blackhole masters 1 and 4", blackhole.summary());
    assertEquals("kill master 3, restart after 2 s", faults.get(1).summary());
    assertEquals("kill master 2 (no restart)", faults.get(2).summary());
    assertTrue(faults.get(2).open());
    assertTrue(faults.get(3).open());
    assertEquals(Duration.ofSeconds(60), faults.get(3).end(Duration.ofSeconds(60)));
    assertEquals(Set.of(2, 3), plan.killedMasters());
    assertTrue(plan.hasNetworkFaults());
    assertEquals(Duration.ofSeconds(121), plan.lastEnd());
  }

  @Test
  void everyUnreadableLineIsNamedWithItsReasonAndTheReadableOnesAreKept() {
    String text =
        String.join(
            "\n",
            "at 1s pause master 2 for 1s",
            "at 2s stop master 1 for 1s",
            "at 3 pause master 1 for 1s",
            "at -4s pause master 1 for 1s",
            "pause master 1 at 5s",
            "at 6s pause master x for 1s",
            "at 7s pause master 1 for 0s",
            "at 8s pause server 1 for 1s",
            "at 9s kill master 1 for 2s",
            "at 10s pause master 1 for 1s please",
            "at 11s pause masters 1 and 1 for 1s",
            "at 12s latency on master 1 for 1s",
            "at 13s pause master");
    PlanException e = assertThrows(PlanException.class, () -> FaultPlanParser.parse(text, "p.txt"));

    assertEquals(
        List.of(
            "p.txt line 2: unknown fault 'stop'; known: pause, partition, blackhole, latency,"
                + " kill",
            "p.txt line 3: time '3' needs a unit: ms, s or m (e.g. 3s)",
            "p.txt line 4: negative time '-4s'",
            "p.txt line 5: a fault begins with 'at <time>', found 'pause'",
            "p.txt line 6: 'x' is not a master number (masters count from 1)",
            "p.txt line 7: 'for' needs a time above 0",
            "p.txt line 8: expected 'master N' or 'masters N and M', found 'server'",
            "p.txt line 9: kill takes 'restart after <time>', not 'for'",
            "p.txt line 10: unexpected 'please' after the fault",
            "p.txt line 11: master 1 is named twice",
            "p.txt line 12: expected the latency after 'latency' (e.g. 'latency 80ms on master"
                + " 2'), found 'on'",
            "p.txt line 13: the line ends where a master number should be: 'at 13s pause"
                + " master'"),
        e.problems().stream().map(Problem::message).toList());
    assertEquals(List.of(1), e.readable().faults().stream().map(Fault::line).toList());
  }

  @Test
  void aPlanWithinTheAssumptionsPassesTheChecks() throws Exception {
    FaultPlan plan =
        FaultPlanParser.parse(
            """
            at 10s pause master 2 for 5s
            at 12s partition master 4 for 5s
            at 15s latency 30ms on master 2 for 5s
            at 17s kill master 1, restart after 1s
            """,
            "ok.txt");

    assertEquals(List.of(), FaultPlanCheck.check(plan, 5, MINUTE, true, false));
    assertEquals(2, plan.mostFaultedAtOnce(MINUTE));
    assertEquals(List.of(), plan.breakingIntervals(5, MINUTE));
  }

  @Test
  void unknownMastersFaultsAfterTheEndAndTwoFaultsOnOneMasterAreRefused() throws Exception {
    FaultPlan plan =
        FaultPlanParser.parse(
            """
            at 1s pause master 6 for 1s
            at 70s partition master 1 for 1s
            at 10s pause master 2 for 5s
            at 14s latency 5ms on master 2 for 5s
            at 20s kill master 3
            at 30s partition master 3 for 1s
            """,
            "bad.txt");

    assertEquals(
        List.of(
            "bad.txt line 1: no master 6: the drill has 5 masters (1 to 5)",
            "bad.txt line 2: begins at 70 s, but the workers run for 60 s (--duration)",
            "bad.txt line 4: master 2 is already faulted from 10 s to 15 s (line 3); one fault"
                + " per master at a time",
            "bad.txt line 6: master 3 is already faulted from 20 s to the end of the run (line"
                + " 5); one fault per master at a time"),
        FaultPlan.messages(FaultPlanCheck.check(plan, 5, MINUTE, true, false)));
  }

  @Test
  void faultsBackToBackOnOneMasterAreFine() throws Exception {
    FaultPlan plan =
        FaultPlanParser.parse(
            "at 10s pause master 2 for 5s\nat 15s partition master 2 for 5s", "back.txt");
    assertEquals(List.of(), FaultPlanCheck.check(plan, 3, MINUTE, true, false));
  }

  @Test
  void moreThanAMinorityFaultedAtOnceIsRefusedWithoutAllowBreakingAndEveryKindCounts()
      throws Exception {
    FaultPlan plan =
        FaultPlanParser.parse(
            """
            at 10s pause master 1 for 10s
            at 12s latency 20ms on master 2 for 10s
            at 15s kill master 3, restart after 1s
            at 30s partition masters 1, 2 and 3 for 2s
            """,
            "break.txt");

    assertEquals(
        List.of(
            "break.txt line 3: from 15 s, masters 1, 2 and 3 are faulted at once (lines 1, 2"
                + " and 3): more than a minority of 5 (at most 2, so that a quorum of 3 never"
                + " needs a faulted master); pass --allow-breaking to run it anyway",
            "break.txt line 4: from 30 s, masters 1, 2 and 3 are faulted at once (line 4): more"
                + " than a minority of 5 (at most 2, so that a quorum of 3 never needs a"
                + " faulted master); pass --allow-breaking to run it anyway"),
        FaultPlan.messages(FaultPlanCheck.check(plan, 5, MINUTE, true, false)));
    assertEquals(List.of(), FaultPlanCheck.check(plan, 5, MINUTE, true, true));
    assertEquals(3, plan.mostFaultedAtOnce(MINUTE));
    assertEquals(
        List.of(
            new Interval(Duration.ofSeconds(15), Duration.ofSeconds(16)),
            new Interval(Duration.ofSeconds(30), Duration.ofSeconds(32))),
        plan.breakingIntervals(5, MINUTE));
  }

  @Test
  void withThreeMastersOneFaultedIsTheMostAndAnOpenFaultLastsToTheEnd() throws Exception {
    FaultPlan plan =
        FaultPlanParser.parse("at 5s kill master 1\nat 50s pause master 2 for 1s", "three.txt");
    List<String> problems = FaultPlan.messages(FaultPlanCheck.check(plan, 3, MINUTE, true, false));
    assertEquals(1, problems.size(), problems.toString());
    assertTrue(problems.get(0).startsWith("three.txt line 2: from 50 s, masters 1 and 2"));
    assertEquals(
        List.of(new Interval(Duration.ofSeconds(50), Duration.ofSeconds(51))),
        plan.breakingIntervals(3, MINUTE));
  }

  @Test
  void throughToxiproxyOnlyNetworkFaultsArePossible() throws Exception {
    FaultPlan plan =
        FaultPlanParser.parseList(
            "at 1s pause master 1 for 1s; at 3s kill master 2; at 5s partition master 3 for 1s",
            "--faults");
    assertEquals(
        List.of(
            "--faults fault 1: pause needs a local redis-server process; with --toxiproxy only"
                + " network faults work (partition, blackhole, latency)",
            "--faults fault 2: kill needs a local redis-server process; with --toxiproxy only"
                + " network faults work (partition, blackhole, latency)"),
        FaultPlan.messages(FaultPlanCheck.check(plan, 5, MINUTE, false, false)));
    assertEquals(List.of(), FaultPlan.messages(FaultPlanCheck.check(plan, 5, MINUTE, true, false)));
  }

  @Test
  void anEmptyPlanHasNoFaultsAndNothingToCheck() throws Exception {
    FaultPlan plan = FaultPlanParser.parse("# nothing yet\n\n   \n", "empty.txt");
    assertTrue(plan.isEmpty());
    assertFalse(plan.hasNetworkFaults());
    assertEquals(Duration.ZERO, plan.lastEnd());
    assertEquals(List.of(), FaultPlanCheck.check(plan, 1, MINUTE, true, false));
    assertTrue(FaultPlan.NONE.isEmpty());
  }

  @Test
  void timesAndListsFormatForReports() {
    assertEquals("10 s", FaultPlan.format(Duration.ofSeconds(10)));
    assertEquals("0.25 s", FaultPlan.format(Duration.ofMillis(250)));
    assertEquals("1, 2 and 3", FaultPlan.joinAnd(List.of(1, 2, 3)));
    assertEquals("4", FaultPlan.joinAnd(List.of(4)));
  }
}
