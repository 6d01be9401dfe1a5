package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The text report from a result made up here: a pure function of it. */
class TextReportTest {

  @Test
  void theResultsShowEachWorkersGrantsAndItsP50P99AndMaxWaitBeforeAGrant() throws Exception {
    Timeline timeline = HtmlReportTest.timeline(3, FaultPlan.NONE, List.of());
    DrillResult drill =
        HtmlReportTest.drill(
            FaultPlan.NONE,
            HtmlReportTest.result(false, List.of()),
            timeline,
            HtmlReportTest.THREE_WAITS);

    String text = TextReport.results(drill, Optional.empty());

    String table =
        """

        Wait for the lock per worker (first try to lease, with backoff)
          worker     grants      p50 us      p99 us      max us
               1      1,000       1,000      10,000      20,000
               2          0           -           -           -
               3          2         340     186,400     359,000
        """;
    assertTrue(text.contains(table), text);
    assertTrue(text.strip().endsWith("DRILL PASSED"), text);
  }

  @Test
  void theResultsAreAFunctionOfTheResultAndSayWhereTheHtmlReportIs() throws Exception {
    Timeline timeline = HtmlReportTest.timeline(2, FaultPlan.NONE, List.of());
    DrillResult drill =
        HtmlReportTest.drill(FaultPlan.NONE, HtmlReportTest.result(false, List.of()), timeline);

    String without = TextReport.results(drill, Optional.empty());
    String with = TextReport.results(drill, Optional.of(Path.of("/tmp/r.html")));

    assertEquals(without, TextReport.results(drill, Optional.empty()));
    assertFalse(without.contains("HTML report:"), without);
    assertTrue(with.contains("\nHTML report: /tmp/r.html\n"), with);
  }

  @Test
  void theHeaderSaysWhatRunsAndHowTheFaultsAreMade() throws Exception {
    FaultPlan plan = FaultPlanParser.parse("at 2s pause master 2 for 2s", "plan.txt");
    DrillResult drill =
        HtmlReportTest.drill(
            plan,
            HtmlReportTest.result(false, List.of()),
            HtmlReportTest.timeline(2, plan, List.of()));

    String header = TextReport.header(drill.plan(), drill.setup());

    assertTrue(header.startsWith("\nRedLock drill\n"), header);
    assertTrue(header.contains("  masters              3 (made up), quorum 2\n"), header);
    assertTrue(header.contains("  workers              2, each with its own RedLock"), header);
    assertTrue(header.contains("  fault plan           plan.txt: 1 fault, at most 1 of 3"), header);
    assertTrue(header.contains("  fault injection      made up\n"), header);
  }
}
