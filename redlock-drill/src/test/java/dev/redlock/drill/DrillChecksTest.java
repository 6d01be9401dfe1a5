package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.drill.DrillChecks.FencingOrder;
import dev.redlock.drill.DrillChecks.Grant;
import dev.redlock.drill.DrillChecks.Handovers;
import dev.redlock.drill.DrillChecks.Window;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The drill's checker and command line, without Redis. */
class DrillChecksTest {

  @Test
  void backToBackWindowsDoNotOverlap() {
    List<Window> windows = List.of(new Window(20, 30), new Window(0, 10), new Window(10, 20));
    assertEquals(new Handovers(0, 0), DrillChecks.handovers(windows));
  }

  @Test
  void aWindowStartingBeforeThePreviousEndedIsAViolation() {
    List<Window> windows = List.of(new Window(0, 10), new Window(9, 20), new Window(25, 30));
    Handovers handovers = DrillChecks.handovers(windows);
    assertEquals(1, handovers.overlaps());
    assertEquals(-1, handovers.closestNanos());
  }

  @Test
  void aWindowInsideALongOneIsAViolationEvenAfterAShortOneEnded() {
    // Sorted by start: [0,100], [10,20], [30,40]. [30,40] starts after [10,20] ended but inside
    // [0,100], so it counts too.
    List<Window> windows = List.of(new Window(0, 100), new Window(10, 20), new Window(30, 40));
    assertEquals(2, DrillChecks.countOverlaps(windows));
  }

  @Test
  void oneWindowOrNoneHasNoHandover() {
    assertEquals(new Handovers(0, 0), DrillChecks.handovers(List.of()));
    assertEquals(new Handovers(0, 0), DrillChecks.handovers(List.of(new Window(5, 6))));
  }

  @Test
  void tokensRisingInAcquisitionOrderPassWhateverOrderTheWorkersReportedThem() {
    // Two workers' lists, concatenated: not in acquisition order until sorted.
    List<Grant> grants =
        List.of(
            new Grant("r", 10, 100),
            new Grant("r", 30, 300),
            new Grant("r", 20, 200),
            new Grant("r", 40, 401));
    FencingOrder order = DrillChecks.fencingOrder(grants);
    assertTrue(order.increasing());
    assertEquals(new FencingOrder(4, 0, Optional.empty(), Optional.empty()), order);
  }

  @Test
  void aTokenNotAboveThePreviousLeasesFailsAndTheEarliestSuchPairIsNamed() {
    List<Grant> grants =
        List.of(
            new Grant("r", 10, 100),
            new Grant("r", 20, 100), // equal: not strictly increasing
            new Grant("r", 30, 300),
            new Grant("r", 40, 250)); // lower
    FencingOrder order = DrillChecks.fencingOrder(grants);
    assertEquals(2, order.notIncreasing());
    assertEquals(new Grant("r", 10, 100), order.firstBefore().orElseThrow());
    assertEquals(new Grant("r", 20, 100), order.firstAfter().orElseThrow());
  }

  @Test
  void tokensAreComparedPerResourceOnly() {
    // Interleaved in time, each resource's own tokens rise; across resources they need not.
    List<Grant> grants =
        List.of(
            new Grant("a", 10, 500),
            new Grant("b", 20, 7),
            new Grant("a", 30, 501),
            new Grant("b", 40, 8));
    assertTrue(DrillChecks.fencingOrder(grants).increasing());
    assertEquals(
        new FencingOrder(0, 0, Optional.empty(), Optional.empty()),
        DrillChecks.fencingOrder(List.of()));
  }

  @Test
  void theRestartedHintNamesTheFlagAndTheMaxLeaseTime() {
    String hint = Harness.restartedHint(12);
    assertTrue(hint.contains("12 rounds"), hint);
    assertTrue(hint.contains("RESTARTED"), hint);
    assertTrue(hint.contains("--admit-fresh-nodes"), hint);
    assertTrue(hint.contains("60 s"), hint);
  }

  @Test
  void mastersGivenByNodesAreAdmittedOnlyWithTheSwitch() {
    DrillPlan plain = Drill.plan("--nodes", "redis://a:1");
    assertFalse(plain.admitFreshNodes());
    DrillPlan admitted = Drill.plan("--nodes", "redis://a:1", "--admit-fresh-nodes");
    assertTrue(admitted.admitFreshNodes());
    assertFalse(DrillPlan.defaults(List.of()).admitFreshNodes());
  }

  @Test
  void passwordsInNodeUrisAreNeverPrinted() {
    assertEquals("redis://***@db1:6379/0", Masters.redact("redis://user:s3cret@db1:6379/0"));
    assertEquals("redis://127.0.0.1:6379", Masters.redact("redis://127.0.0.1:6379"));
  }

  @Test
  void helpPrintsTheOptionsAndExitsZero() {
    Output output = new Output();
    assertEquals(0, Drill.run(new String[] {"--help"}, output.stream));
    assertTrue(output.text().contains("--workers=K"), output.text());
    assertTrue(output.text().contains("--admit-fresh-nodes"), output.text());
  }

  @Test
  void aBadCommandLineExitsTwoAndSaysWhy() {
    Output unknown = new Output();
    assertEquals(2, Drill.run(new String[] {"--wokers", "3"}, unknown.stream));
    assertTrue(unknown.text().contains("drill: Unknown options: '--wokers'"), unknown.text());

    Output ttl = new Output();
    assertEquals(2, Drill.run(new String[] {"--ttl", "50", "--node-timeout=50"}, ttl.stream));
    assertTrue(ttl.text().contains("must be greater than --node-timeout"), ttl.text());

    Output nodes = new Output();
    assertEquals(
        2,
        Drill.run(
            new String[] {"--nodes", "redis://h:1,redis://h:1", "--duration", "1"}, nodes.stream));
    assertTrue(nodes.text().contains("--nodes"), nodes.text());
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
