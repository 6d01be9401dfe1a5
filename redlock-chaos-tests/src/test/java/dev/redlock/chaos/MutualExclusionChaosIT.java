package dev.redlock.chaos;

import static dev.redlock.chaos.ProcessChaos.address;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The headline check: clients contend for a few resources while a nemesis injects faults on a
 * minority of the masters at a time (latency, partition, black hole, reset, SIGSTOP, SIGKILL with a
 * restart only after the TTL), and no two valid leases of one resource may overlap, and no update
 * of a counter guarded by the lock may be lost. Each run prints one block of {@code CHECKER} lines.
 *
 * <p>In the thread runs, most holds are a few milliseconds of work, and their windows end at their
 * release; some are kept past their validity and some renewed for up to two TTLs ({@link
 * LongHolds}), so their windows end at the deadline the library computed: the checker then also
 * holds the validity arithmetic (elapsed time and drift subtracted, counted from the start of the
 * round) and the renewals to account.
 *
 * <p>The soak runs the thread scenario for longer: {@code mvn -o -pl redlock-chaos-tests verify
 * -Dit.test='MutualExclusionChaosIT#soak*' -Dredlock.chaos.soak=PT10M}.
 */
class MutualExclusionChaosIT {

  static final String SOAK_PROPERTY = "redlock.chaos.soak";
  static final String SOAK_BREAKING_PROPERTY = "redlock.chaos.soak.breaking";

  private static final int MASTERS = 5;
  private static final int RESOURCES = 3;
  private static final Duration TTL = Duration.ofSeconds(1);
  private static final Duration THREAD_RUN = Duration.ofSeconds(30);
  private static final Duration JVM_RUN = Duration.ofSeconds(15);
  private static final Duration SLOW_RUN = Duration.ofSeconds(15);
  private static final double OVERRUN_CHANCE = 0.05;
  private static final double RENEWED_CHANCE = 0.03;

  @Test
  void eightThreadsUnderMinorityFaultsNeverOverlapNorLoseAnUpdate() throws Exception {
    Run run = runThreads("threads", 8, THREAD_RUN, false);
    MutualExclusionChecker.Report report = run.report();

    assertAll(
        // Windows that end at the library's deadlines, not at releases: without them the run
        // proves quorum exclusion but not the validity arithmetic.
        () ->
            assertTrue(
                run.result().total("overran") >= 15,
                "holds kept past their validity: " + run.result().totals()),
        () ->
            assertTrue(
                run.result().total("outlived_ttl") >= 3,
                "renewed holds still valid after a TTL: " + run.result().totals()),
        () -> assertEquals(0, report.violations(), "overlapping leases"),
        () -> assertEquals(0, report.lostUpdates(), "lost updates"),
        () -> assertTrue(report.acquisitions() > 300, "acquisitions: " + report.acquisitions()),
        () -> assertEquals(8, report.distinctHolders(), "every client held a lease"),
        () -> assertTrue(report.faultTotal() >= 12, "faults injected: " + report.faults()),
        () ->
            assertTrue(
                report.faults().values().stream().allMatch(count -> count > 0),
                "every kind of fault injected: " + report.faults()));
  }

  @Test
  void holdsIntoTheirValidityAfterSlowRoundsNeverOverlap() throws Exception {
    // Replies delayed by tens of milliseconds on a majority or all of the masters (below the node
    // timeout), on and off: a round then takes longer than the drift allowance, and a validity
    // that did not subtract the round's elapsed time would outlive the keys, for a holder whose
    // slow round is followed by another's fast one. Latency breaks none of Redlock's assumptions.
    try (ChaosCluster cluster = startCluster();
        RedisProcess store = RedisProcess.start()) {
      Workload workload =
          Workload.builder(cluster.uris(), address(store))
              .clients(6, "s")
              .resources(RESOURCES)
              .ttl(TTL)
              .overrunChance(0.3)
              .build();
      Nemesis nemesis =
          nemesis(cluster)
              .faults(EnumSet.of(Nemesis.Fault.LATENCY))
              .withinAssumptions(TTL)
              .affected(MASTERS / 2 + 1, MASTERS)
              .latency(Duration.ofMillis(30), Duration.ofMillis(70))
              .faultDuration(Duration.ofMillis(500), Duration.ofMillis(2000))
              .gap(Duration.ofMillis(100), Duration.ofMillis(600))
              .build();
      long began = System.nanoTime();
      Workload.Result result;
      nemesis.start();
      try {
        result = workload.run(SLOW_RUN);
      } finally {
        nemesis.stop();
      }
      MutualExclusionChecker.Report report =
          ProcessChaos.check(
              "slow rounds: 6 client threads, latency on a majority or all, "
                  + describe(cluster, began),
              workload,
              result,
              store,
              nemesis.faultsByKind(),
              nemesisNotes(nemesis));
      report.print(System.out);

      assertAll(
          () -> assertEquals(0, report.violations(), "overlapping leases"),
          () -> assertEquals(0, report.lostUpdates(), "lost updates"),
          () -> assertTrue(result.total("overran") >= 5, "held past validity: " + result.totals()),
          () -> assertTrue(nemesis.faultCount() >= 4, "latency faults: " + nemesis.events()),
          () -> assertEquals(List.of(), nemesis.errors(), "nemesis errors"),
          () -> assertEquals(Map.of(), result.errors(), "client errors"));
    }
  }

  @Test
  void threeWorkerJvmsUnderMinorityFaultsNeverOverlapNorLoseAnUpdate() throws Exception {
    try (ChaosCluster cluster = startCluster();
        RedisProcess store = RedisProcess.start()) {
      Workload settings =
          Workload.builder(cluster.uris(), address(store)).resources(RESOURCES).ttl(TTL).build();
      Nemesis nemesis = nemesis(cluster).withinAssumptions(TTL).build();
      Workload.Result result;
      long began;
      try (WorkerProcesses workers =
          WorkerProcesses.start(3, 2, settings, cluster.uris(), address(store))) {
        workers.awaitReady();
        began = System.nanoTime();
        nemesis.start();
        try {
          workers.go(began + JVM_RUN.toNanos());
          result = workers.awaitResults(JVM_RUN.plusSeconds(60));
        } finally {
          nemesis.stop();
        }
      }
      MutualExclusionChecker.Report report =
          ProcessChaos.check(
              "multi-JVM: 3 worker JVMs x 2 clients, " + describe(cluster, began),
              settings,
              result,
              store,
              nemesis.faultsByKind(),
              nemesisNotes(nemesis));
      report.print(System.out);

      assertAll(
          () -> assertEquals(0, report.violations(), "overlapping leases"),
          () -> assertEquals(0, report.lostUpdates(), "lost updates"),
          () -> assertEquals(6, result.stats().size(), "every client reported"),
          () -> assertEquals(Map.of(), result.errors(), "the worker JVMs' client errors"),
          () ->
              assertEquals(
                  result.total("acquired"),
                  result.leases().size(),
                  "every lease granted is in the history"),
          () -> assertTrue(report.acquisitions() > 100, "acquisitions: " + report.acquisitions()),
          () -> assertEquals(6, report.distinctHolders(), "every client held a lease"),
          () ->
              assertTrue(
                  report.leases().stream().map(l -> l.client().split("-")[0]).distinct().count()
                      == 3,
                  "leases from every JVM"),
          () -> assertTrue(report.faultTotal() >= 6, "faults injected: " + report.faults()),
          () -> assertEquals(List.of(), nemesis.errors(), "nemesis errors"));
    }
  }

  @Test
  void soakUnderMinorityFaultsNeverOverlapsNorLosesAnUpdate() throws Exception {
    Optional<Duration> soak = soakDuration();
    assumeTrue(
        soak.isPresent(),
        "soak disabled; run it with: mvn -o -pl redlock-chaos-tests verify"
            + " -Dit.test='MutualExclusionChaosIT#soak*' -D"
            + SOAK_PROPERTY
            + "=PT10M (add -D"
            + SOAK_BREAKING_PROPERTY
            + "=true to let the nemesis break Redlock's assumptions and count what breaks)");
    boolean breaking = Boolean.getBoolean(SOAK_BREAKING_PROPERTY);
    MutualExclusionChecker.Report report =
        runThreads(breaking ? "soak, breaking assumptions" : "soak", 8, soak.get(), breaking)
            .report();

    assertTrue(report.acquisitions() > 0, "acquisitions: " + report.acquisitions());
    if (!breaking) {
      assertAll(
          () -> assertEquals(0, report.violations(), "overlapping leases"),
          () -> assertEquals(0, report.lostUpdates(), "lost updates"));
    }
  }

  /** A thread run's checked report and the workload's own counts. */
  private record Run(MutualExclusionChecker.Report report, Workload.Result result) {}

  /**
   * Runs {@code clients} threads under a nemesis (within Redlock's assumptions unless {@code
   * breaking}) and prints the report. Within the assumptions, some holds run into their validity
   * and some are renewed for up to two TTLs ({@link LongHolds}).
   */
  private static Run runThreads(String label, int clients, Duration duration, boolean breaking)
      throws Exception {
    try (ChaosCluster cluster = startCluster();
        RedisProcess store = RedisProcess.start()) {
      Workload workload =
          Workload.builder(cluster.uris(), address(store))
              .clients(clients, "t")
              .resources(RESOURCES)
              .ttl(TTL)
              // Breaking runs hold longer, so a restart or pause often lands on a held lease.
              .maxWork(breaking ? Duration.ofMillis(600) : Duration.ofMillis(3))
              .overrunChance(breaking ? 0 : OVERRUN_CHANCE)
              .renewedChance(breaking ? 0 : RENEWED_CHANCE)
              .build();
      Nemesis.Builder builder = nemesis(cluster);
      Nemesis nemesis =
          (breaking ? builder.breakingAssumptions() : builder.withinAssumptions(TTL)).build();
      long began = System.nanoTime();
      Workload.Result result;
      nemesis.start();
      try {
        result = workload.run(duration);
      } finally {
        nemesis.stop();
      }
      MutualExclusionChecker.Report report =
          ProcessChaos.check(
              label + ": " + clients + " client threads, " + describe(cluster, began),
              workload,
              result,
              store,
              nemesis.faultsByKind(),
              nemesisNotes(nemesis));
      report.print(System.out);
      assertEquals(List.of(), nemesis.errors(), "nemesis errors");
      assertEquals(Map.of(), result.errors(), "client errors");
      assertEquals(
          result.total("acquired"),
          result.leases().size(),
          "every lease granted is in the history");
      return new Run(report, result);
    }
  }

  /**
   * Five local masters behind the fault proxy, so the nemesis has process faults as well as network
   * ones; on containers only if {@code -Dredlock.chaos.backend} names them (network faults only).
   */
  private static ChaosCluster startCluster() {
    String forced = System.getProperty(ChaosCluster.BACKEND_PROPERTY, "").strip();
    return forced.isEmpty() || forced.equalsIgnoreCase("local")
        ? ChaosCluster.start(MASTERS, i -> RedisProcess.builder())
        : ChaosCluster.start(MASTERS);
  }

  /** A nemesis with every fault the cluster's backend supports. */
  static Nemesis.Builder nemesis(ChaosCluster cluster) {
    return Nemesis.builder(cluster.size())
        .proxies(i -> Optional.of(cluster.proxy(i)))
        .processes(cluster::process);
  }

  private static String describe(ChaosCluster cluster, long began) {
    return String.format(
        "%d masters (%s), %d resources, ttl %d ms, %.1f s",
        cluster.size(),
        cluster.backend().name().toLowerCase(Locale.ROOT),
        RESOURCES,
        TTL.toMillis(),
        (System.nanoTime() - began) / 1e9);
  }

  private static List<String> nemesisNotes(Nemesis nemesis) {
    return List.of(
        "nemesis: " + nemesis.describe(),
        "nemesis errors: " + (nemesis.errors().isEmpty() ? "none" : nemesis.errors()));
  }

  private static Optional<Duration> soakDuration() {
    String value = System.getProperty(SOAK_PROPERTY, "").strip();
    if (value.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(Duration.parse(value));
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(
          "-D" + SOAK_PROPERTY + " must be an ISO-8601 duration such as PT10M: " + value, e);
    }
  }
}
