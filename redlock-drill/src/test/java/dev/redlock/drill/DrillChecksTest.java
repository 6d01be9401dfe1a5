package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.drill.Drill.Handovers;
import dev.redlock.drill.Drill.Window;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The drill's checker and command line, without Redis. */
class DrillChecksTest {

  @Test
  void backToBackWindowsDoNotOverlap() {
    List<Window> windows = List.of(new Window(20, 30), new Window(0, 10), new Window(10, 20));
    assertEquals(new Handovers(0, 0), Drill.handovers(windows));
  }

  @Test
  void aWindowStartingBeforeThePreviousEndedIsAViolation() {
    List<Window> windows = List.of(new Window(0, 10), new Window(9, 20), new Window(25, 30));
    Handovers handovers = Drill.handovers(windows);
    assertEquals(1, handovers.overlaps());
    assertEquals(-1, handovers.closestNanos());
  }

  @Test
  void aWindowInsideALongOneIsAViolationEvenAfterAShortOneEnded() {
    // Sorted by start: [0,100], [10,20], [30,40]. [30,40] starts after [10,20] ended but inside
    // [0,100], so it counts too.
    List<Window> windows = List.of(new Window(0, 100), new Window(10, 20), new Window(30, 40));
    assertEquals(2, Drill.countOverlaps(windows));
  }

  @Test
  void oneWindowOrNoneHasNoHandover() {
    assertEquals(new Handovers(0, 0), Drill.handovers(List.of()));
    assertEquals(new Handovers(0, 0), Drill.handovers(List.of(new Window(5, 6))));
  }

  @Test
  void passwordsInNodeUrisAreNeverPrinted() {
    assertEquals("redis://***@db1:6379/0", Drill.redact("redis://user:s3cret@db1:6379/0"));
    assertEquals("redis://127.0.0.1:6379", Drill.redact("redis://127.0.0.1:6379"));
  }

  @Test
  void helpPrintsTheOptionsAndExitsZero() {
    Output output = new Output();
    assertEquals(0, Drill.run(new String[] {"--help"}, output.stream));
    assertTrue(output.text().contains("--workers K"), output.text());
  }

  @Test
  void aBadCommandLineExitsTwoAndSaysWhy() {
    Output unknown = new Output();
    assertEquals(2, Drill.run(new String[] {"--wokers", "3"}, unknown.stream));
    assertTrue(unknown.text().contains("unknown option --wokers"), unknown.text());

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
