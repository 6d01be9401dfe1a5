package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Inspection;
import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import dev.redlock.faultproxy.FaultProxyServer;
import dev.redlock.testkit.RedisCluster;
import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.ToxiproxyClient;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Five masters in three simulated datacenters (2 / 2 / 1: A holds masters 0 and 1, B holds 2 and 3,
 * C holds 4), and clients placed in each datacenter. Every client reaches every master through a
 * proxy of its own whose latency toxic is the round trip between the two datacenters: local
 * (loopback, about 0.2 ms), A–B 20 ms, A–C and B–C 60 ms, each with 10% jitter. Each client's node
 * timeouts follow its distances (local 50 ms, 20 ms away 100 ms, 60 ms away 200 ms).
 *
 * <p>Scenarios, all with clients in every datacenter contending for one resource and the
 * mutual-exclusion checker: a quiet baseline (acquisitions decide on the nearest majority), a whole
 * datacenter partitioned, and a datacenter whose latency climbs to 300 ms.
 */
class MultiDatacenterChaosIT {

  private static final List<String> DATACENTERS = List.of("A", "B", "C");
  private static final String[] HOME = {"A", "A", "B", "B", "C"}; // by master
  private static final Duration TTL = Duration.ofSeconds(2);
  private static final Duration RUN = Duration.ofSeconds(6);
  private static final int MIN_CONTENDED_LEASES = 10;

  /**
   * The floor under a fault. With B cut off, a lease needs all three of A's and C's masters, and
   * the contenders in A, B and C split those three votes round after round: 5 or 6 leases in the 4
   * s after the cut and the 12 s the run may add (48 in the quiet 6 s), so the quiet floor cannot
   * be asked of them. Three leases by two clients, with rounds refused, still show contention.
   */
  private static final int MIN_LEASES_UNDER_FAULT = 3;

  private static RedisCluster masters;
  private static FaultProxyServer server;
  private static ToxiproxyClient toxiproxy;

  /** The proxy a client in one datacenter uses to reach each master, by placement. */
  private static final Map<String, List<Proxy>> proxies = new LinkedHashMap<>();

  @BeforeAll
  static void start() throws IOException {
    masters = RedisCluster.start(5);
    server = FaultProxyServer.start();
    toxiproxy = new ToxiproxyClient(server.host(), server.apiPort());
    for (String placement : DATACENTERS) {
      List<Proxy> list = new ArrayList<>();
      for (int m = 0; m < 5; m++) {
        list.add(
            toxiproxy.createProxy(
                placement + "-" + m,
                "127.0.0.1:0",
                masters.node(m).host() + ":" + masters.node(m).port()));
      }
      proxies.put(placement, list);
    }
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
    if (masters != null) {
      masters.close();
    }
  }

  @AfterEach
  void heal() throws IOException {
    toxiproxy.reset(); // every proxy enabled, every toxic gone
    masters.reset();
  }

  /** Round-trip milliseconds between two datacenters. */
  private static int roundTrip(String from, String to) {
    if (from.equals(to)) {
      return 0;
    }
    return (from.equals("C") || to.equals("C")) ? 60 : 20;
  }

  private static Duration nodeTimeout(int roundTripMillis) {
    return Duration.ofMillis(roundTripMillis == 0 ? 50 : roundTripMillis == 20 ? 100 : 200);
  }

  /** Sets every proxy's latency to the distance between its client's and its master's homes. */
  private static void placeLatencies() throws IOException {
    for (String placement : DATACENTERS) {
      for (int m = 0; m < 5; m++) {
        setLatency(proxies.get(placement).get(m), roundTrip(placement, HOME[m]));
      }
    }
  }

  private static void setLatency(Proxy proxy, int roundTripMillis) throws IOException {
    for (var toxic : proxy.toxics().getAll()) {
      toxic.remove();
    }
    if (roundTripMillis > 0) {
      long oneWay = roundTripMillis / 2;
      proxy.toxics().latency("up", ToxicDirection.UPSTREAM, oneWay).setJitter(oneWay / 10);
      proxy.toxics().latency("down", ToxicDirection.DOWNSTREAM, oneWay).setJitter(oneWay / 10);
    }
  }

  /** A client in {@code placement}: its own proxies, timeouts by distance, labels by home. */
  private static RedLock client(String placement) {
    RedLockBuilder builder = RedLock.builder().retryDelay(Duration.ofMillis(20));
    for (String home : DATACENTERS) {
      List<String> uris = new ArrayList<>();
      for (int m = 0; m < 5; m++) {
        if (HOME[m].equals(home)) {
          Proxy proxy = proxies.get(placement).get(m);
          uris.add("redis://" + proxy.getListen());
        }
      }
      builder.datacenter(home, nodeTimeout(roundTrip(placement, home)), uris);
    }
    RedLock redlock = builder.build();
    redlock.admitFreshNodes();
    return redlock;
  }

  /**
   * Clients in every datacenter until the run ends: in each, one contends with the other
   * datacenters' for a shared resource (checked for exclusion), and one locks a resource of its
   * own, uncontended, so its acquire times show where its quorums come from.
   */
  private static final class Placements implements AutoCloseable {
    final Map<String, List<Long>> latencies = new LinkedHashMap<>();
    final List<LeaseRecord> records = Collections.synchronizedList(new ArrayList<>());
    final List<RedLock> clients = new ArrayList<>();
    final List<Thread> threads = new ArrayList<>();
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    // Counted only from countFrom (the fault's start in a fault scenario): what the run did under
    // the fault, not before it.
    final AtomicInteger refused = new AtomicInteger(); // the shared resource's rounds: taken
    final AtomicInteger contended = new AtomicInteger(); // the shared resource's leases
    final Set<String> holders = ConcurrentHashMap.newKeySet(); // of the shared resource
    private final int minLeases;
    private volatile long countFrom;

    /**
     * Starts the clients; they run until {@code stopAt}, and on (up to two runs more) while the
     * shared resource has had fewer than {@code minLeases} leases, or fewer than two holders, since
     * {@link #countFromNow}.
     */
    Placements(String resource, long stopAt, int minLeases) {
      this.minLeases = minLeases;
      countFrom = System.nanoTime();
      for (String placement : DATACENTERS) {
        List<Long> placed = Collections.synchronizedList(new ArrayList<>());
        latencies.put(placement, placed);
        for (int c = 0; c < 2; c++) {
          RedLock redlock = client(placement);
          clients.add(redlock);
          boolean contending = c == 0;
          String name = placement + (contending ? "-contending" : "-alone");
          String locked = contending ? resource : resource + "-" + placement;
          List<Long> timed = contending ? new ArrayList<>() : placed;
          Thread thread =
              new Thread(() -> run(name, redlock, locked, contending, stopAt, timed), name);
          thread.setDaemon(true);
          threads.add(thread);
        }
      }
      threads.forEach(Thread::start);
    }

    private void run(
        String name,
        RedLock redlock,
        String resource,
        boolean contending,
        long stopAt,
        List<Long> latencies) {
      try {
        // The run's time, then (on a loaded machine, or under a fault that splits votes) up to
        // two runs more until the shared resource had minLeases by two holders: the check below
        // needs them to mean anything.
        while (System.nanoTime() - stopAt < 0
            || ((contended.get() < minLeases || holders.size() < 2)
                && System.nanoTime() - stopAt < 2 * RUN.toNanos())) {
          long start = System.nanoTime();
          Optional<Lease> lease;
          try {
            lease = redlock.tryAcquire(resource, TTL);
          } catch (QuorumUnavailableException e) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            continue;
          }
          if (lease.isEmpty()) {
            if (contending && counting(start)) {
              refused.incrementAndGet();
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            continue;
          }
          long acquiredAt = System.nanoTime();
          if (counting(start)) {
            latencies.add(acquiredAt - start);
          }
          long validUntil = acquiredAt + lease.get().remainingValidity().toNanos();
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // the work
          long releasedAt = System.nanoTime();
          lease.get().release();
          records.add(
              new LeaseRecord(name, resource, acquiredAt, Math.min(releasedAt, validUntil)));
          if (contending && counting(start)) {
            contended.incrementAndGet();
            holders.add(name);
          }
        }
      } catch (RuntimeException | Error e) {
        failure.compareAndSet(null, e);
      }
    }

    /**
     * From now on, only what begins counts towards the floors and the figures: called when a
     * scenario's fault starts, so that nothing done before it can meet them.
     */
    void countFromNow() {
      countFrom = System.nanoTime();
      refused.set(0);
      contended.set(0);
      holders.clear();
      latencies.values().forEach(List::clear);
    }

    long countFrom() {
      return countFrom;
    }

    /** Whether a round that began at {@code start} counts: it began under the fault. */
    private boolean counting(long start) {
      return start - countFrom >= 0;
    }

    void join() throws InterruptedException {
      for (Thread thread : threads) {
        thread.join(TimeUnit.SECONDS.toMillis(60));
        assertTrue(!thread.isAlive(), thread.getName() + " stopped");
      }
      if (failure.get() != null) {
        throw new AssertionError("a client failed", failure.get());
      }
    }

    /** {@code p50 / p99} of the uncontended client's granted acquires in {@code placement}. */
    String figures(String placement) {
      List<Long> sorted = new ArrayList<>(latencies.get(placement));
      Collections.sort(sorted);
      if (sorted.isEmpty()) {
        return "no acquisitions";
      }
      return String.format(
          "p50 %.1f ms / p99 %.1f ms (%d acquisitions)",
          percentile(sorted, 0.50) / 1e6, percentile(sorted, 0.99) / 1e6, sorted.size());
    }

    long p50Millis(String placement) {
      List<Long> sorted = new ArrayList<>(latencies.get(placement));
      Collections.sort(sorted);
      return sorted.isEmpty() ? Long.MAX_VALUE : percentile(sorted, 0.5) / 1_000_000;
    }

    int acquisitions(String placement) {
      return latencies.get(placement).size();
    }

    @Override
    public void close() {
      clients.forEach(RedLock::close);
    }
  }

  private static long percentile(List<Long> sorted, double p) {
    return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p * sorted.size()) - 1));
  }

  private MutualExclusionChecker.Report check(String label, Placements run, List<String> notes) {
    List<String> lines = new ArrayList<>(notes);
    for (String placement : DATACENTERS) {
      lines.add("client in " + placement + ": " + run.figures(placement));
    }
    List<LeaseRecord> shared =
        run.records.stream().filter(r -> r.client().endsWith("-contending")).toList();
    // Every lease is checked for overlaps; the floors count only those granted under the fault.
    List<LeaseRecord> underFault =
        shared.stream().filter(r -> r.acquiredAt() - run.countFrom() >= 0).toList();
    long holders = underFault.stream().map(LeaseRecord::client).distinct().count();
    lines.add(
        "under the fault (or, without one, the whole run): "
            + underFault.size()
            + " leases of the shared resource by "
            + holders
            + " clients, "
            + run.refused.get()
            + " of its rounds refused (taken)");
    MutualExclusionChecker.Report report = ProcessChaos.checkHolds(label, shared, Map.of(), lines);
    report.print(System.out);
    // "0 violations" means something only if the shared resource was contended under the fault:
    // many leases, by clients in more than one datacenter, and rounds refused because another
    // held it.
    assertAll(
        "contention on the shared resource under the fault",
        () ->
            assertTrue(
                underFault.size() >= run.minLeases,
                "leases of the shared resource: " + underFault.size()),
        () -> assertTrue(holders >= 2, "holders: " + holders),
        () -> assertTrue(run.refused.get() > 0, "rounds refused: " + run.refused.get()));
    return report;
  }

  @Test
  void thePreflightSaysTheTwoTwoOnePlacementSurvivesTheLossOfAnyDatacenter() throws Exception {
    placeLatencies();
    try (RedLock redlock = client("A")) {
      Inspection inspection = redlock.inspect();
      System.out.print(inspection);
      assertEquals(3, inspection.losses().size());
      assertTrue(inspection.losses().stream().allMatch(Inspection.DatacenterLoss::survives));
    }
  }

  @Test
  void acquisitionsDecideOnTheNearestMajority() throws Exception {
    placeLatencies();
    Placements run;
    try (Placements placements =
        new Placements(
            NetworkChaos.resource("dc-quiet"),
            System.nanoTime() + RUN.toNanos(),
            MIN_CONTENDED_LEASES)) {
      placements.join();
      run = placements;
    }
    MutualExclusionChecker.Report report =
        check("multi-datacenter, quiet", run, List.of("RTT A-B 20 ms, A-C and B-C 60 ms"));
    assertAll(
        () -> assertEquals(0, report.violations(), "overlapping leases"),
        // A and B each have a majority within 20 ms (their 2 masters and one of the other's): a
        // fenced acquire is two such round trips, well under one 60 ms trip to C and back twice.
        () -> assertTrue(run.p50Millis("A") < 60, "A decides without C: " + run.figures("A")),
        () -> assertTrue(run.p50Millis("B") < 60, "B decides without C: " + run.figures("B")),
        () -> assertTrue(run.acquisitions("C") > 0, "C's clients are granted too"));
  }

  @Test
  void aWholeDatacenterPartitionedLeavesAQuorumAndExclusion() throws Exception {
    placeLatencies();
    Placements run;
    try (Placements placements =
        new Placements(
            NetworkChaos.resource("dc-partition"),
            System.nanoTime() + RUN.toNanos(),
            MIN_LEASES_UNDER_FAULT)) {
      LockSupport.parkNanos(RUN.toNanos() / 3); // the fault schedule
      for (String placement : DATACENTERS) {
        proxies.get(placement).get(2).disable(); // datacenter B cut off from every client
        proxies.get(placement).get(3).disable();
      }
      placements.countFromNow();
      placements.join();
      run = placements;
    }
    MutualExclusionChecker.Report report =
        check("multi-datacenter, datacenter B partitioned", run, List.of("B cut off at 2 s"));
    assertAll(
        () -> assertEquals(0, report.violations(), "overlapping leases"),
        () ->
            assertTrue(
                run.acquisitions("A") > 0, "A still acquires with B cut off (A + C make 3)"));
  }

  @Test
  void aDatacenterWhoseLatencyClimbsTo300MsIsLeftOutWithoutHarm() throws Exception {
    placeLatencies();
    Placements run;
    try (Placements placements =
        new Placements(
            NetworkChaos.resource("dc-slow"),
            System.nanoTime() + RUN.toNanos(),
            MIN_LEASES_UNDER_FAULT)) {
      for (int rtt : new int[] {100, 200, 300}) {
        LockSupport.parkNanos(RUN.toNanos() / 4); // the fault schedule
        for (String placement : List.of("A", "B")) {
          setLatency(proxies.get(placement).get(4), rtt); // C's master, seen from A and B
        }
        for (int m = 0; m < 4; m++) {
          setLatency(proxies.get("C").get(m), rtt); // A and B's masters, seen from C
        }
        if (rtt == 100) {
          placements.countFromNow(); // from C's first step away
        }
      }
      placements.join();
      run = placements;
    }
    MutualExclusionChecker.Report report =
        check(
            "multi-datacenter, C's latency climbing to 300 ms",
            run,
            List.of("C at 100, 200, then 300 ms from A and B"));
    assertAll(
        () -> assertEquals(0, report.violations(), "overlapping leases"),
        () -> assertTrue(run.p50Millis("A") < 60, "A never waits for C: " + run.figures("A")));
  }
}
