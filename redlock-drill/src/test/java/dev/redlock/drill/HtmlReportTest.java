package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.DrillChecks.FencingOrder;
import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.DrillChecks.Window;
import dev.redlock.drill.DrillPlan.FaultOptions;
import dev.redlock.drill.DrillResult.Setup;
import dev.redlock.drill.FaultPlan.Fault;
import dev.redlock.drill.FaultPlan.Interval;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.drill.RoundLog.Rounds;
import dev.redlock.drill.Timeline.Overlap;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The HTML report from a recording made up here: what it draws, and that it fetches nothing. */
class HtmlReportTest {

  private static final long SECOND = 1_000_000_000L;
  private static final List<String> MASTERS =
      List.of("127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003");

  /** Three workers' waits: 1,000 grants; none; two, one of them long. */
  static final List<Summary> THREE_WAITS =
      List.of(
          new Summary(1000, 1_000_000, 10_000_000, 20_000_000),
          new Summary(0, 0, 0, 0),
          new Summary(2, 340_000, 186_400_000, 359_000_000));

  @Test
  void thePageHasALanePerWorkerAStripPerMasterAndEveryFault() throws Exception {
    FaultPlan plan =
        FaultPlanParser.parse(
            "at 2s pause master 2 for 2s\nat 5s latency 80ms on master 3 for 1s", "plan.txt");
    Timeline timeline = timeline(4, plan, List.of());

    String html = HtmlReport.render(drill(plan, result(false, List.of()), timeline));

    assertEquals(4, count(html, String.format("fill=\"#%06x\"", HtmlStyle.LANE_MARKER)));
    assertEquals(3, count(html, String.format("fill=\"#%06x\"", HtmlStyle.STRIP_MARKER)));
    for (int w = 1; w <= 4; w++) {
      assertTrue(html.contains(">worker " + w + "  ("), "lane " + w);
    }
    assertTrue(html.contains(">master 2  127.0.0.1:7002</text>"), html);
    assertTrue(html.contains(">pause master 2</text>"), html);
    assertTrue(html.contains(">latency 80 ms on master 3</text>"), html);
    assertFalse(html.contains("quorum at risk"), "no breaking interval was planned");
    assertEquals(0, count(html, "class=\"overlap\""));
    assertTrue(html.contains("<p class=\"verdict passed\">DRILL PASSED</p>"), html);
    assertTrue(html.contains("<th>overlap violations</th><td>0 among"), html);
    assertTrue(html.contains("<h2>Faults as they ran</h2>"), html);
    assertTrue(html.contains("<td>pause master 2</td><td class=\"num\">2.000</td>"), html);
    assertTrue(html.contains("<th>timed_out</th>"), html);
    assertTrue(html.contains("<tr><th>masters</th><td>3 (made up), quorum 2</td></tr>"), html);
    assertTrue(
        html.contains(
            "<tr><th>lock</th><td>&#39;drill:inventory&#39;, ttl 2000 ms, node timeout 50 ms;"
                + " the library&#39;s defaults otherwise</td></tr>"),
        html);
    assertTrue(
        html.contains("<tr><th></th><td>line 1: at 2s pause master 2 for 2s</td></tr>"), html);
  }

  @Test
  void thePageShowsEachWorkersWaitForTheLock() throws Exception {
    Timeline timeline = timeline(3, FaultPlan.NONE, List.of());
    List<Summary> waits =
        List.of(
            new Summary(1000, 1_000_000, 10_000_000, 20_000_000),
            new Summary(0, 0, 0, 0),
            new Summary(2, 340_000, 186_400_000, 359_000_000));

    String html =
        HtmlReport.render(drill(FaultPlan.NONE, result(false, List.of()), timeline, waits));

    assertTrue(html.contains("<h2>Wait for the lock per worker</h2>"), html);
    assertTrue(
        html.contains(
            "<tr><th>worker</th><th>grants</th><th>p50 us</th><th>p99 us</th><th>max us</th></tr>"),
        html);
    assertTrue(html.contains(waitRow("1", "1,000", "1,000", "10,000", "20,000")), html);
    assertTrue(html.contains(waitRow("2", "0", "-", "-", "-")), html);
    assertTrue(html.contains(waitRow("3", "2", "340", "186,400", "359,000")), html);
    assertFalse(html.contains("<tr><td class=\"num\">4</td>"), "three workers, three rows");
  }

  private static String waitRow(String... cells) {
    StringBuilder row = new StringBuilder("<tr>");
    for (String cell : cells) {
      row.append("<td class=\"num\">").append(cell).append("</td>");
    }
    return row.append("</tr>").toString();
  }

  @Test
  void thePageFetchesNothing() throws Exception {
    FaultPlan plan = FaultPlanParser.parse("at 2s pause master 2 for 2s", "plan.txt");
    String html =
        HtmlReport.render(drill(plan, result(false, List.of()), timeline(2, plan, List.of())));

    String lower = html.toLowerCase(Locale.ROOT);
    for (String fetch :
        new String[] {
          "http:", "https:", "//", "src=", "href=", "<link", "<script", "@import", "url("
        }) {
      assertFalse(lower.contains(fetch), "the page refers to something outside: " + fetch);
    }
    assertTrue(lower.startsWith("<!doctype html>"));
    assertTrue(lower.contains("<svg "), "the charts are inline SVG");
  }

  @Test
  void overlappingLeasesAreMarkedOnBothLanesAndTheVerdictSaysHowTheyWereJudged() throws Exception {
    // Inside the lease worker 2 holds from 5 s to 5.002 s, and over before the next one begins.
    List<Window> extra = List.of(new Window(5 * SECOND + 500_000, 5 * SECOND + 1_500_000));
    Timeline timeline = timeline(3, FaultPlan.NONE, extra);
    List<Overlap> overlaps = timeline.overlaps();
    assertEquals(1, overlaps.size(), overlaps.toString());

    String failed =
        HtmlReport.render(
            drill(FaultPlan.NONE, result(false, List.of("1 leases overlapped another")), timeline));
    assertEquals(2, count(failed, "class=\"overlap\""));
    assertTrue(
        failed.contains(
            "<p class=\"verdict failed\">DRILL FAILED: 1 leases overlapped another</p>"),
        failed);

    String broken =
        HtmlReport.render(
            drill(FaultPlan.NONE, result(true, List.of("1 leases overlapped another")), timeline));
    assertTrue(
        broken.contains(
            "<p class=\"verdict broken\">DRILL PASSED (quorum assumption broken on purpose;"
                + " violations reported, not failed): 1 leases overlapped another</p>"),
        broken);
  }

  @Test
  void plannedIntervalsBeyondAMinorityAreMarkedAsQuorumAtRisk() throws Exception {
    FaultPlan plan =
        FaultPlanParser.parse(
            "at 2s pause master 1 for 2s\nat 3s partition master 2 for 2s", "b.txt");
    Timeline timeline = timeline(2, plan, List.of());
    assertEquals(
        List.of(new Interval(Duration.ofSeconds(3), Duration.ofSeconds(4))), timeline.breaking());

    String html = HtmlReport.render(drill(plan, result(true, List.of()), timeline));
    assertEquals(1, count(html, "quorum at risk (planned)"));
  }

  @Test
  void theReportIsWrittenWhereAsked(@TempDir Path dir) throws Exception {
    Path path = dir.resolve("reports/run-1.html");
    HtmlReport.write(
        path,
        drill(FaultPlan.NONE, result(false, List.of()), timeline(1, FaultPlan.NONE, List.of())));
    String html = Files.readString(path, StandardCharsets.UTF_8);
    assertTrue(html.endsWith("</html>\n"));
  }

  @Test
  void textIsEscaped() {
    assertEquals(
        "a &lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;", HtmlReport.escape("a <b> & \"c\" 'd'"));
  }

  // ---- a made-up recording: 10 s, workers taking turns, every master answering ----

  static Timeline timeline(int workers, FaultPlan plan, List<Window> extraForWorker0)
      throws Exception {
    long span = 10 * SECOND;
    long lease = 2_000_000; // 2 ms leases, back to back in turn
    List<List<Window>> leases = new ArrayList<>();
    List<long[]> grantTimes = new ArrayList<>();
    List<long[]> grantLatencies = new ArrayList<>();
    List<Rounds> rounds = new ArrayList<>();
    for (int w = 0; w < workers; w++) {
      leases.add(new ArrayList<>());
    }
    int turn = 0;
    for (long t = 0; t + lease <= span; t += lease) {
      leases.get(turn % workers).add(new Window(t, t + lease - 1000));
      turn++;
    }
    leases.get(0).addAll(extraForWorker0);
    for (int w = 0; w < workers; w++) {
      List<Window> own = leases.get(w);
      long[] times = new long[own.size()];
      long[] latencies = new long[own.size()];
      long[] roundTimes = new long[own.size()];
      byte[] statuses = new byte[own.size() * MASTERS.size()];
      for (int i = 0; i < own.size(); i++) {
        times[i] = own.get(i).from();
        latencies[i] = 300_000 + (i % 7) * 50_000;
        roundTimes[i] = own.get(i).from() - latencies[i];
        for (int m = 0; m < MASTERS.size(); m++) {
          Status status =
              m == 1 && inFault(plan, roundTimes[i]) ? Status.TIMED_OUT : Status.GRANTED;
          statuses[i * MASTERS.size() + m] = (byte) status.ordinal();
        }
      }
      grantTimes.add(times);
      grantLatencies.add(latencies);
      rounds.add(new Rounds(MASTERS.size(), roundTimes, statuses));
    }
    List<FaultWindow> windows = new ArrayList<>();
    for (Fault fault : plan.faults()) {
      long from = fault.at().toNanos();
      long to = fault.end(Duration.ofNanos(span)).toNanos();
      windows.add(new FaultWindow(fault, from, from, to, to, List.of()));
    }
    return new Timeline(
        span,
        MASTERS,
        leases,
        grantTimes,
        grantLatencies,
        rounds,
        windows,
        plan.breakingIntervals(MASTERS.size(), Duration.ofNanos(span)));
  }

  private static boolean inFault(FaultPlan plan, long t) {
    for (Fault fault : plan.faults()) {
      if (fault.at().toNanos() <= t && t < fault.end(Duration.ofSeconds(10)).toNanos()) {
        return true;
      }
    }
    return false;
  }

  /** The result of a made-up run of the timeline's workers on {@link #MASTERS}. */
  static DrillResult drill(FaultPlan plan, Result result, Timeline timeline) {
    return drill(plan, result, timeline, waits(timeline.workers()));
  }

  static DrillResult drill(FaultPlan plan, Result result, Timeline timeline, List<Summary> waits) {
    DrillPlan drillPlan =
        new DrillPlan(
            List.of(), // local masters: process faults are allowed
            timeline.workers(),
            Duration.ofSeconds(10),
            1_000_000,
            Duration.ofSeconds(2),
            Duration.ofMillis(50),
            false,
            new FaultOptions(plan, Optional.empty(), List.of(), true),
            Optional.empty());
    List<String> uris = MASTERS.stream().map(m -> "redis://" + m).toList();
    Setup setup =
        new Setup("made up", uris, uris, MASTERS, Optional.empty(), List.of("made up"), List.of());
    return new DrillResult(drillPlan, setup, result, timeline, waits);
  }

  /** Made-up waits: worker w waited w ms at the median, 10 w ms at p99, 20 w ms at most. */
  static List<Summary> waits(int workers) {
    List<Summary> waits = new ArrayList<>();
    for (int w = 1; w <= workers; w++) {
      waits.add(new Summary(1000 * w, w * 1_000_000L, w * 10_000_000L, w * 20_000_000L));
    }
    return waits;
  }

  static Result result(boolean broken, List<String> violations) {
    Summary latency = new Summary(100, 300_000, 600_000, 700_000);
    List<String> failures = broken ? List.of() : violations;
    return new Result(
        5000,
        5000,
        120,
        3,
        0,
        0,
        List.of(1250L, 1250L, 1250L, 1250L),
        1_000_000,
        995_000,
        false,
        5000,
        violations.isEmpty() ? 0 : 1,
        violations.isEmpty() ? 1000 : -1000,
        latency,
        latency,
        10 * SECOND,
        new FencingOrder(5000, 0, Optional.empty(), Optional.empty()),
        0,
        List.of(),
        failures,
        broken,
        broken ? violations : List.of());
  }

  private static int count(String text, String needle) {
    Matcher m = Pattern.compile(Pattern.quote(needle)).matcher(text);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }
}
