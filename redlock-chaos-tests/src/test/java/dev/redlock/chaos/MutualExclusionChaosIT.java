package dev.redlock.chaos;

import static dev.redlock.chaos.ProcessChaos.address;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.time.format.DateTimeParseException;
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

  @Test
  void eightThreadsUnderMinorityFaultsNeverOverlapNorLoseAnUpdate() throws Exception {
    MutualExclusionChecker.Report report = runThreads("threads", 8, THREAD_RUN);

    assertAll(
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
        runThreads(breaking ? "soak, breaking assumptions" : "soak", 8, soak.get(), breaking);

    assertTrue(report.acquisitions() > 0, "acquisitions: " + report.acquisitions());
    if (!breaking) {
      assertAll(
          () -> assertEquals(0, report.violations(), "overlapping leases"),
          () -> assertEquals(0, report.lostUpdates(), "lost updates"));
    }
  }

  private static MutualExclusionChecker.Report runThreads(
      String label, int clients, Duration duration) throws Exception {
    return runThreads(label, clients, duration, false);
  }

  /**
   * Runs {@code clients} threads under a nemesis (within Redlock's assumptions unless {@code
   * breaking}) and prints the report.
   */
  private static MutualExclusionChecker.Report runThreads(
      String label, int clients, Duration duration, boolean breaking) throws Exception {
    try (ChaosCluster cluster = startCluster();
        RedisProcess store = RedisProcess.start()) {
      Workload workload =
          Workload.builder(cluster.uris(), address(store))
              .clients(clients, "t")
              .resources(RESOURCES)
              .ttl(TTL)
              // Breaking runs hold longer, so a restart or pause often lands on a held lease.
              .maxWork(breaking ? Duration.ofMillis(600) : Duration.ofMillis(3))
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
      return report;
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
