package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.FaultPlan.Kind;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import dev.redlock.drill.RoundLog.Rounds;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A failover drill on the five local masters the drill starts: every kind of fault, each on its
 * master while the workers run, checked against what the masters answered.
 */
class DrillFaultsIT {

  /** Rounds that began this long after a fault was made, and before it was undone, are checked. */
  private static final long MARGIN = TimeUnit.MILLISECONDS.toNanos(100);

  @Test
  void everyFaultRunsOnItsMasterWhichDoesNotVoteMeanwhileAndTheDrillPasses(@TempDir Path dir)
      throws Exception {
    Path html = dir.resolve("report.html");
    DrillPlan config =
        Drill.plan(
            "--workers",
            "3",
            "--duration",
            "3.2",
            "--report",
            html.toString(),
            "--faults",
            "at 0.4s pause master 2 for 0.6s;"
                + " at 1.1s partition master 4 for 0.5s;"
                + " at 1.8s kill master 5 and restart it after 0.4s;"
                + " at 2.3s latency 150ms on master 1 for 0.5s;"
                + " at 2.3s blackhole master 3 for 0.5s");
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DrillResult outcome =
        Drill.runRecorded(config, new PrintStream(bytes, true, StandardCharsets.UTF_8));
    String text = bytes.toString(StandardCharsets.UTF_8);

    assertTrue(outcome.checks().passed(), text);
    assertTrue(text.strip().endsWith("DRILL PASSED"), text);
    assertEquals(0, outcome.checks().violations(), text);
    assertEquals(outcome.checks().expectedInventory(), outcome.checks().finalInventory(), text);
    assertTrue(text.contains("the workers connect through one fault proxy per master,"), text);
    assertTrue(text.contains("quorum               never needs a faulted master"), text);
    for (String fault :
        List.of(
            "pause master 2 (fault 1)",
            "partition master 4 (fault 2)",
            "kill master 5, restart after 0.4 s (fault 3)",
            "latency 150 ms on master 1 (fault 4)",
            "blackhole master 3 (fault 5)")) {
      assertTrue(text.contains("fault began: " + fault), fault + "\n" + text);
      assertTrue(text.contains("fault ended: " + fault), fault + "\n" + text);
    }
    assertTrue(text.contains("masters up "), text);
    assertTrue(text.contains("Note: master 5 was killed by the plan and restarted empty"), text);
    assertFalse(text.contains("Hint:"), "the kill explains the RESTARTED answers: " + text);
    assertTrue(text.contains("HTML report: " + html.toAbsolutePath()), text);

    Timeline timeline = outcome.timeline();
    List<FaultWindow> windows = timeline.faults();
    assertEquals(5, windows.size(), windows.toString());
    for (FaultWindow window : windows) {
      assertEquals(List.of(), window.errors(), window.toString());
      int master = window.fault().masters().get(0);
      assertNoVote(timeline, master, window.applied() + MARGIN, window.healing() - MARGIN, text);
    }
    FaultWindow kill =
        windows.stream().filter(w -> w.fault().kind() == Kind.KILL).findFirst().orElseThrow();
    // Restarted empty, master 5 answers again but the restart guard keeps it from voting.
    assertTrue(answered(timeline, 4, Status.RESTARTED, kill.ended(), Long.MAX_VALUE), text);
    assertNoVote(timeline, 5, kill.ended(), Long.MAX_VALUE, text);

    String page = Files.readString(html, StandardCharsets.UTF_8);
    assertEquals(3, count(page, String.format("fill=\"#%06x\"", HtmlStyle.LANE_MARKER)));
    assertEquals(5, count(page, String.format("fill=\"#%06x\"", HtmlStyle.STRIP_MARKER)));
  }

  private static void assertNoVote(Timeline timeline, int master, long from, long to, String text) {
    for (Status vote : List.of(Status.GRANTED, Status.TAKEN, Status.GONE)) {
      assertFalse(
          answered(timeline, master - 1, vote, from, to),
          "master "
              + master
              + " answered "
              + vote
              + " between "
              + from
              + " and "
              + to
              + "\n"
              + text);
    }
  }

  /** Whether master {@code m} (from 0) answered {@code status} in a round begun in [from, to]. */
  private static boolean answered(Timeline timeline, int m, Status status, long from, long to) {
    for (Rounds rounds : timeline.rounds()) {
      for (int i = 0; i < rounds.size(); i++) {
        long t = rounds.time(i);
        if (t >= from && t <= to && rounds.status(i, m) == status) {
          return true;
        }
      }
    }
    return false;
  }

  private static int count(String text, String needle) {
    int n = 0;
    for (int i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
      n++;
    }
    return n;
  }
}
