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
}
