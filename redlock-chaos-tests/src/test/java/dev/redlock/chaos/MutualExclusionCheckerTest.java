package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MutualExclusionCheckerTest {

  private static LeaseRecord lease(String client, String resource, long from, long to) {
    return new LeaseRecord(client, resource, from, to);
  }

  @Test
  void aLeaseGrantedWhileAnotherIsValidIsOneViolation() {
    List<MutualExclusionChecker.Overlap> overlaps =
        MutualExclusionChecker.overlaps(List.of(lease("a", "r", 0, 100), lease("b", "r", 99, 200)));

    assertEquals(1, overlaps.size());
    assertEquals("a", overlaps.get(0).first().client());
    assertEquals("b", overlaps.get(0).second().client());
    assertEquals(1, overlaps.get(0).nanos());
  }

  @Test
  void backToBackLeasesAndLeasesOfOtherResourcesDoNotOverlap() {
    assertEquals(
        List.of(),
        MutualExclusionChecker.overlaps(
            List.of(
                lease("a", "r", 0, 100),
                lease("b", "r", 100, 200),
                lease("c", "s", 50, 150),
                lease("d", "r", 200, 300))));
  }

  @Test
  void aLeaseInsideALongOneOverlapsItEvenAfterAShortOneInBetween() {
    List<MutualExclusionChecker.Overlap> overlaps =
        MutualExclusionChecker.overlaps(
            List.of(lease("a", "r", 0, 1000), lease("b", "r", 10, 20), lease("c", "r", 500, 600)));

    assertEquals(2, overlaps.size());
    assertTrue(overlaps.stream().allMatch(o -> o.first().client().equals("a")));
  }

  @Test
  void aLeaseAlreadyExpiredWhenReturnedNeverCounts() {
    assertEquals(
        List.of(),
        MutualExclusionChecker.overlaps(List.of(lease("a", "r", 0, 100), lease("b", "r", 50, 40))));
  }

  @Test
  void lostUpdatesAreIncrementsTheCountersDoNotShow() {
    MutualExclusionChecker.Report report =
        MutualExclusionChecker.check(
            "t",
            2,
            List.of(),
            Map.of("r", 10L, "s", 5L),
            Map.of("r", 8L, "s", 6L),
            Map.of(),
            List.of());

    assertEquals(2, report.lostUpdates());
    assertEquals(1, report.unconfirmedUpdates());
    assertEquals(15, report.increments());
    assertEquals(14, report.counters());
  }

  @Test
  void theReportPrintsGreppableLines() {
    Map<String, Long> faults = new LinkedHashMap<>();
    faults.put("pause", 2L);
    MutualExclusionChecker.Report report =
        MutualExclusionChecker.check(
            "demo",
            2,
            List.of(lease("a", "r", 0, 100), lease("b", "r", 50, 150)),
            Map.of(),
            Map.of(),
            faults,
            List.of("note=1"));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    report.print(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();

    assertTrue(lines.stream().allMatch(line -> line.startsWith("CHECKER ")), lines.toString());
    assertTrue(lines.contains("CHECKER faults total=2 pause=2"), lines.toString());
    assertTrue(lines.stream().anyMatch(line -> line.startsWith("CHECKER violations=1 ")));
    assertTrue(lines.contains("CHECKER lost_updates=n/a (no guarded counter in this scenario)"));
    assertFalse(report.guarded());
  }

  @Test
  void workerResultsSurviveTheirLines() {
    Workload.Result result =
        new Workload.Result(
            List.of(lease("w0-0", "chaos:r0", -5, 17)),
            Map.of("w0-0", Map.of("acquired", 1L, "increments", 1L)),
            Map.of("w0-0", Map.of("chaos:r0", 1L)),
            Map.of("w0-0", "boom\\nsecond line"));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    result.print(new PrintStream(bytes, true, StandardCharsets.UTF_8));

    Workload.Result back =
        Workload.Result.parse(bytes.toString(StandardCharsets.UTF_8).lines().toList());

    assertEquals(result.leases(), back.leases());
    assertEquals(result.stats(), back.stats());
    assertEquals(result.increments(), back.increments());
    assertEquals(1, back.errors().size());
  }

  @Test
  void aLeaseLineIsOneWordPerField() {
    LeaseRecord record = lease("w1-0", "chaos:r2", 123, 456);

    assertEquals(record, LeaseRecord.parse(record.toLine()));
    assertThrows(IllegalArgumentException.class, () -> lease("two words", "r", 0, 1));
    assertThrows(IllegalArgumentException.class, () -> LeaseRecord.parse("LEASE a r x 1"));
  }

  @Test
  void aGrantSoonAfterADeadlineBeforeTheReleaseIsExposedOthersAreNot() {
    List<LeaseRecord> leases =
        List.of(
            new LeaseRecord("a", "r", 0, 100, 150), // kept past its deadline at 100 until 150
            new LeaseRecord("b", "r", 105, 150), // 5 after it, before a let go: exposed
            new LeaseRecord("c", "r", 152, 200), // 2 after a release: not
            new LeaseRecord("d", "s", 0, 100, 200),
            new LeaseRecord("e", "s", 130, 180, 190), // 30 after: outside a 10 window
            new LeaseRecord("f", "s", 185, 190), // 5 after e's deadline: exposed
            new LeaseRecord("g", "t", 0, 100, 102),
            new LeaseRecord("h", "t", 103, 110)); // after g's release: the release let it in

    List<MutualExclusionChecker.Exposure> exposed = MutualExclusionChecker.exposures(leases, 10);

    assertEquals(List.of("b", "f"), exposed.stream().map(e -> e.next().client()).toList());
    assertEquals(List.of(5L, 5L), exposed.stream().map(e -> e.gapNanos()).toList());
  }

  @Test
  void aLeaseLineCarriesTheReleaseOfALeaseKeptPastItsDeadline() {
    LeaseRecord kept = new LeaseRecord("a", "r", 1, 2, 3);
    LeaseRecord released = new LeaseRecord("a", "r", 1, 2);

    assertEquals("LEASE a r 1 2 3", kept.toLine());
    assertEquals("LEASE a r 1 2", released.toLine());
    assertTrue(kept.atDeadline());
    assertFalse(released.atDeadline());
    assertEquals(kept, LeaseRecord.parse(kept.toLine()));
    assertEquals(released, LeaseRecord.parse(released.toLine()));
  }
}
