package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.drill.DrillChecks.FencingOrder;
import dev.redlock.drill.DrillChecks.Handovers;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.Percentiles.Summary;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The drill's fault options and verdicts, checked without starting anything. */
class DrillFaultOptionsTest {

  @Test
  void aRefusedPlanExitsTwoWithEveryLineAndReasonBeforeAnythingRuns(@TempDir Path dir)
      throws Exception {
    Path plan = dir.resolve("plan.txt");
    Files.writeString(
        plan,
        """
        at 1s pause master 2 for 5s
        at 2s partition masters 1 and 3 for 1s
        at 3s kill master 7, restart after 1s
        at -1s latency 5ms on master 4
        """);
    Output output = new Output();
    int code = Drill.run(new String[] {"--plan", plan.toString()}, output.stream);

    assertEquals(2, code, output.text());
    String text = output.text();
    assertTrue(text.startsWith("drill: the fault plan is refused, nothing was run:\n"), text);
    assertTrue(
        text.contains(
            "  "
                + plan
                + " line 2: from 2 s, masters 1, 2 and 3 are faulted at once (lines 1 and 2)"),
        text);
    assertTrue(text.contains("  " + plan + " line 3: no master 7: the drill has 5 masters"), text);
    assertTrue(text.contains("  " + plan + " line 4: negative time '-1s'"), text);
    assertFalse(text.contains("Starting"), "nothing may start for a refused plan: " + text);
    assertFalse(Files.exists(dir.resolve(Drill.DEFAULT_REPORT)));
  }

  @Test
  void allowBreakingLetsTheSamePlanThrough() throws Exception {
    DrillPlan config =
        Drill.plan(
            "--faults",
            "at 1s pause master 2 for 5s; at 2s partition masters 1 and 3 for 1s",
            "--allow-breaking");
    assertTrue(config.faults().allowBreaking());
    assertEquals(2, config.faults().plan().faults().size());
  }

  @Test
  void processFaultsAreRefusedThroughToxiproxy() {
    Output output = new Output();
    int code =
        Drill.run(
            new String[] {
              "--nodes",
              "redis://127.0.0.1:26371,redis://127.0.0.1:26372,redis://127.0.0.1:26373",
              "--toxiproxy",
              "127.0.0.1:8474",
              "--faults",
              "at 1s pause master 1 for 1s; at 3s partition master 2 for 1s"
            },
            output.stream);
    assertEquals(2, code, output.text());
    assertTrue(
        output
            .text()
            .contains(
                "--faults fault 1: pause needs a local redis-server process; with --toxiproxy"
                    + " only network faults work (partition, blackhole, latency)"),
        output.text());
  }

  @Test
  void faultOptionsThatDoNotFitTogetherAreRefused() {
    assertRefused(
        "a fault plan on --nodes masters needs --toxiproxy HOST:PORT",
        "--nodes",
        "redis://a:1",
        "--faults",
        "at 1s partition master 1 for 1s");
    assertRefused("--toxiproxy needs --nodes", "--toxiproxy", "localhost:8474");
    assertRefused("--proxies names Toxiproxy proxies: give --toxiproxy too", "--proxies", "a,b");
    assertRefused(
        "--toxiproxy: expected host:port, was 'localhost'",
        "--nodes",
        "redis://a:1",
        "--toxiproxy",
        "localhost");
    assertRefused(
        "give --plan FILE or --faults \"...\", not both",
        "--plan",
        "p.txt",
        "--faults",
        "at 1s pause master 1 for 1s");
    assertRefused("cannot read --plan no-such-plan.txt", "--plan", "no-such-plan.txt");
  }

  @Test
  void withoutADurationThePlanSetsIt() throws Exception {
    DrillPlan planned = Drill.plan("--faults", "at 20s pause master 1 for 3s");
    assertEquals(Duration.ofSeconds(28), planned.duration());

    DrillPlan early = Drill.plan("--faults", "at 1s pause master 1 for 1s");
    assertEquals(Drill.DEFAULT_DURATION, early.duration());

    Output output = new Output();
    int code =
        Drill.run(
            new String[] {"--duration", "10", "--faults", "at 20s pause master 1 for 3s"},
            output.stream);
    assertEquals(2, code, output.text());
    assertTrue(
        output.text().contains("--faults fault 1: begins at 20 s, but the workers run for 10 s"),
        output.text());
  }

  @Test
  void theHtmlReportGoesToTheWorkingDirectoryUnlessToldOtherwise() throws Exception {
    assertEquals(Optional.of(Path.of("drill-report.html")), Drill.plan().report());
    assertEquals(Optional.of(Path.of("out/r.html")), Drill.plan("--report", "out/r.html").report());
    assertEquals(
        Optional.of(Path.of("runs/a,b.html")), Drill.plan("--report", "runs/a,b.html").report());
    assertEquals(Optional.empty(), DrillPlan.defaults(List.of()).report());
  }

  @Test
  void theVerdictFailsOnViolationsUnlessThePlanBrokeTheAssumptionOnPurpose() {
    Handovers overlap = new Handovers(2, -1000);
    FencingOrder rising = new FencingOrder(10, 0, Optional.empty(), Optional.empty());
    List<String> violations = DrillChecks.violations(90, 89, overlap, rising);
    assertEquals(
        List.of(
            "final inventory 90 but expected 89: 1 updates lost", "2 leases overlapped another"),
        violations);
    assertEquals(List.of(), DrillChecks.availability(10, 5, 0));
    assertEquals(
        List.of("no lease was granted (5 rounds: too few masters could vote)"),
        DrillChecks.availability(0, 5, 0));

    assertEquals(
        "DRILL FAILED: final inventory 90 but expected 89: 1 updates lost; 2 leases overlapped"
            + " another",
        ResultRows.verdict(result(violations, false, List.of())));
    assertEquals(
        "DRILL PASSED (quorum assumption broken on purpose; violations reported, not failed):"
            + " final inventory 90 but expected 89: 1 updates lost; 2 leases overlapped another",
        ResultRows.verdict(result(List.of(), true, violations)));
    assertEquals(
        "DRILL PASSED (quorum assumption broken on purpose; no violation seen)",
        ResultRows.verdict(result(List.of(), true, List.of())));
    assertEquals("DRILL PASSED", ResultRows.verdict(result(List.of(), false, List.of())));
    assertEquals(
        "DRILL FAILED: no lease was granted",
        ResultRows.verdict(result(List.of("no lease was granted"), true, violations)));
  }

  private static Result result(List<String> failures, boolean broken, List<String> tolerated) {
    Summary none = new Summary(0, 0, 0, 0);
    return new Result(
        10,
        10,
        0,
        0,
        0,
        0,
        List.of(10L),
        100,
        90,
        false,
        10,
        0,
        0,
        none,
        none,
        1_000_000_000L,
        new FencingOrder(10, 0, Optional.empty(), Optional.empty()),
        0,
        List.of(),
        failures,
        broken,
        tolerated);
  }

  private static void assertRefused(String message, String... args) {
    Output output = new Output();
    assertEquals(2, Drill.run(args, output.stream), output.text());
    assertTrue(output.text().contains(message), output.text());
  }

  /** Collects what a program prints. */
  private static final class Output {
    final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    final PrintStream stream = new PrintStream(bytes, true, StandardCharsets.UTF_8);

    String text() {
      return bytes.toString(StandardCharsets.UTF_8);
    }
  }
}
