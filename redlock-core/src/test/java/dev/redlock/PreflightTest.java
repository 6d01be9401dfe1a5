package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Inspection.Check;
import dev.redlock.Inspection.Verdict;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.NodeUnavailableException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The preflight's rules, on scripted masters. */
class PreflightTest {

  private RedLock redlock;

  @AfterEach
  void close() {
    if (redlock != null) {
      redlock.close();
    }
  }

  /** Inspects three scripted masters, the first answering as {@code master0} says. */
  private Inspection inspect(
      java.util.function.UnaryOperator<RedLockBuilder> settings, Map<String, Object> master0) {
    if (redlock != null) {
      redlock.close();
    }
    FakeCluster fakes = new FakeCluster();
    redlock = settings.apply(fakes.builder(3)).build();
    fakes.nodes.get(0).queries.putAll(master0);
    return redlock.inspect();
  }

  private Inspection inspect(Map<String, Object> master0) {
    return inspect(b -> b, master0);
  }

  private static Check check(Inspection inspection, int master, String name) {
    return inspection.masters().get(master).checks().stream()
        .filter(c -> c.name().equals(name))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void aHealthyStandaloneMasterPassesEveryCheck() {
    Inspection inspection = inspect(Map.of());
    assertEquals(Verdict.PASS, inspection.verdict(), inspection::toString);
    assertEquals(
        List.of(
            "reachable",
            "role",
            "cluster",
            "eviction",
            "persistence",
            "uptime",
            "clock",
            "admission"),
        inspection.masters().get(0).checks().stream().map(Check::name).toList());
    assertEquals("Redis 7.0.15", check(inspection, 0, "reachable").detail());
    assertTrue(inspection.losses().isEmpty(), "no datacenter labels, no losses to judge");
  }

  @Test
  void aReplicaFailsAndAMasterWithReplicasWarns() {
    Inspection replica =
        inspect(
            Map.of(
                "INFO replication", "role:slave\r\nmaster_host:10.0.0.9\r\nmaster_port:6379\r\n"));
    assertEquals(Verdict.FAIL, check(replica, 0, "role").verdict());
    assertTrue(check(replica, 0, "role").detail().contains("10.0.0.9:6379"));
    Inspection withReplicas =
        inspect(Map.of("INFO replication", "role:master\r\nconnected_slaves:2\r\n"));
    assertEquals(Verdict.WARN, withReplicas.verdict());
  }

  @Test
  void clusterModeFails() {
    Inspection inspection = inspect(Map.of("INFO cluster", "cluster_enabled:1\r\n"));
    assertEquals(Verdict.FAIL, check(inspection, 0, "cluster").verdict());
  }

  @Test
  void anEvictingPolicyUnderAMemoryLimitFailsAndNoevictionOrNoLimitPasses() {
    for (String policy : List.of("allkeys-lru", "volatile-ttl", "allkeys-random")) {
      FakeCluster fakes = new FakeCluster();
      try (RedLock r = fakes.builder(1).build()) {
        fakes.nodes.get(0).queries.put("CONFIG GET maxmemory", List.of("maxmemory", "2097152"));
        fakes.nodes.get(0).queries.put("CONFIG GET maxmemory-policy", List.of("x", policy));
        Check eviction = check(r.inspect(), 0, "eviction");
        assertEquals(Verdict.FAIL, eviction.verdict(), policy);
        assertTrue(eviction.detail().contains(policy), eviction.detail());
      }
    }
    Inspection noLimit =
        inspect(Map.of("CONFIG GET maxmemory-policy", List.of("x", "allkeys-lru")));
    assertEquals(Verdict.PASS, check(noLimit, 0, "eviction").verdict(), "maxmemory 0");
    Inspection refusing = inspect(Map.of("CONFIG GET maxmemory", List.of("x", "1000000")));
    assertEquals(Verdict.PASS, check(refusing, 0, "eviction").verdict(), "noeviction");
  }

  @Test
  void persistenceThatLosesWritesWarnsAndSaysWhatTheGuardCoversAndWhatItDoesNot() {
    Inspection guarded =
        inspect(
            Map.of(
                "CONFIG GET appendonly", List.of("x", "no"),
                "CONFIG GET appendfsync", List.of("x", "everysec")));
    Check check = check(guarded, 0, "persistence");
    assertEquals(Verdict.WARN, check.verdict(), "a snapshot-only master loses locks in a restart");
    assertTrue(check.detail().contains("older snapshot"), check.detail());
    assertTrue(check.detail().contains("restart guard"), check.detail());
    assertTrue(check.detail().contains("run_id and uptime"), check.detail());
    assertTrue(check.detail().contains("Still at risk"), check.detail());
    Check everysec =
        check(
            inspect(
                Map.of(
                    "CONFIG GET appendonly", List.of("x", "yes"),
                    "CONFIG GET appendfsync", List.of("x", "everysec"))),
            0,
            "persistence");
    assertEquals(Verdict.WARN, everysec.verdict());
    assertTrue(everysec.detail().contains("loses the last writes"), everysec.detail());
    Inspection unguarded =
        inspect(b -> b.restartGuard(false), Map.of("CONFIG GET appendonly", List.of("x", "no")));
    assertEquals(Verdict.WARN, check(unguarded, 0, "persistence").verdict());
    Inspection durable =
        inspect(
            b -> b.restartGuard(false),
            Map.of(
                "CONFIG GET appendonly", List.of("x", "yes"),
                "CONFIG GET appendfsync", List.of("x", "always")));
    assertEquals(Verdict.PASS, check(durable, 0, "persistence").verdict());
    Check rewrites =
        check(
            inspect(
                Map.of(
                    "CONFIG GET appendonly", List.of("x", "yes"),
                    "CONFIG GET appendfsync", List.of("x", "always"),
                    "CONFIG GET no-appendfsync-on-rewrite", List.of("x", "yes"))),
            0,
            "persistence");
    assertEquals(Verdict.WARN, rewrites.verdict(), rewrites.detail());
    assertTrue(
        rewrites
            .detail()
            .contains("no-appendfsync-on-rewrite yes: a restart during an AOF rewrite"),
        rewrites.detail());
  }

  @Test
  void aMasterUpForLessThanTheLongestLeaseWarns() {
    Inspection inspection =
        inspect(Map.of("INFO server", "redis_version:7.0.15\r\nuptime_in_seconds:5\r\n"));
    Check uptime = check(inspection, 0, "uptime");
    assertEquals(Verdict.WARN, uptime.verdict());
    assertTrue(uptime.detail().contains("does not vote for another 57 s"), uptime.detail());
    // Its persistence loses nothing (the fake's default), but the run before it may have lost
    // writes: the guard does not count its vote yet, as the acquire's would not.
    Check admission = check(inspection, 0, "admission");
    assertEquals(Verdict.WARN, admission.verdict(), admission.detail());
    assertTrue(admission.detail().contains("restarted 5 s ago"), admission.detail());
  }

  @Test
  void commandsAnAclForbidsGiveUnknownNotAFailure() {
    NodeUnavailableException noperm =
        new NodeUnavailableException("NOPERM this user has no permissions to run 'config'");
    Inspection inspection =
        inspect(
            Map.of(
                "CONFIG GET maxmemory", noperm,
                "CONFIG GET maxmemory-policy", noperm,
                "CONFIG GET appendonly", noperm,
                "CONFIG GET appendfsync", noperm,
                "CONFIG GET no-appendfsync-on-rewrite", noperm));
    assertEquals(Verdict.UNKNOWN, check(inspection, 0, "eviction").verdict());
    assertEquals(Verdict.UNKNOWN, check(inspection, 0, "persistence").verdict());
    assertEquals(Verdict.PASS, check(inspection, 0, "reachable").verdict());
    assertEquals(Verdict.UNKNOWN, inspection.verdict());
  }

  @Test
  void aMasterThatAnswersNothingFailsReachable() {
    NodeUnavailableException down = new NodeUnavailableException("Connection refused");
    Map<String, Object> dead =
        Map.of(
            "INFO server", down,
            "INFO replication", down,
            "INFO cluster", down,
            "CONFIG GET maxmemory", down,
            "CONFIG GET maxmemory-policy", down,
            "CONFIG GET appendonly", down,
            "CONFIG GET appendfsync", down,
            "CONFIG GET no-appendfsync-on-rewrite", down);
    FakeCluster fakes = new FakeCluster();
    redlock = fakes.builder(1).build();
    fakes.nodes.get(0).queries.putAll(dead);
    fakes.nodes.get(0).failTime = true;
    Inspection inspection = redlock.inspect();
    assertEquals(Verdict.FAIL, check(inspection, 0, "reachable").verdict());
    assertTrue(check(inspection, 0, "reachable").detail().contains("Connection refused"));
  }

  @Test
  void datacenterLossesSayWhichPlacementsKeepAQuorum() {
    FakeCluster spread = new FakeCluster();
    try (RedLock r =
        spread
            .builder(0)
            .datacenter("a", Duration.ofMillis(20), uris(7000, 7001))
            .datacenter("b", Duration.ofMillis(40), uris(7002, 7003))
            .datacenter("c", Duration.ofMillis(60), uris(7004))
            .build()) {
      Inspection inspection = r.inspect();
      assertTrue(inspection.losses().stream().allMatch(Inspection.DatacenterLoss::survives));
      assertEquals(Verdict.PASS, inspection.verdict(), inspection::toString);
    }
    FakeCluster lopsided = new FakeCluster();
    try (RedLock r =
        lopsided
            .builder(0)
            .datacenter("east", Duration.ofMillis(20), uris(7000, 7001, 7002))
            .datacenter("west", Duration.ofMillis(40), uris(7003, 7004))
            .build()) {
      Inspection inspection = r.inspect();
      assertFalse(inspection.losses().get(0).survives(), "losing east leaves 2 of 5");
      assertTrue(inspection.losses().get(1).survives(), "losing west leaves 3 of 5");
      assertEquals(Verdict.WARN, inspection.verdict());
      assertTrue(
          inspection.toString().contains("losing east (3 of 5 masters) leaves 2: NO QUORUM"));
    }
  }

  @Test
  void unfitMastersDoNotVoteWhenAskedButStillGetReleases() {
    FakeCluster fakes = new FakeCluster();
    RedLockBuilder builder = fakes.builder(3).excludeUnfitMasters(true);
    fakes.beforeBuild =
        node -> {
          if (fakes.nodes.size() == 1) {
            node.queries.put("CONFIG GET maxmemory", List.of("maxmemory", "2097152"));
            node.queries.put("CONFIG GET maxmemory-policy", List.of("x", "allkeys-lru"));
          }
        };
    redlock = builder.build();
    Lease lease = redlock.tryAcquire("job", Duration.ofSeconds(1)).orElseThrow();
    FakeNode unfit = fakes.nodes.get(0);
    assertFalse(unfit.received().stream().anyMatch(c -> c.startsWith("SET")), "not asked to vote");
    lease.close();
    assertTrue(unfit.received().contains("RELEASE job"), "releases still reach it");
    fakes.nodes.get(1).onSet = FakeNode.Answer.FAIL;
    QuorumUnavailableException e =
        assertThrows(
            QuorumUnavailableException.class,
            () -> redlock.tryAcquire("job", Duration.ofSeconds(1)));
    NodeOutcome outcome = e.outcomes().get(0);
    assertEquals(Status.FAILED, outcome.status());
    assertTrue(outcome.detail().startsWith("unfit for Redlock: maxmemory"), outcome.detail());
  }

  private static List<String> uris(int... ports) {
    return java.util.Arrays.stream(ports).mapToObj(p -> "redis://127.0.0.1:" + p).toList();
  }

  @Test
  void thePreflightWaitsTheLongerOfOneSecondAndTwoNodeTimeouts() {
    assertEquals(
        Duration.ofSeconds(1).toNanos(),
        dev.redlock.internal.lease.Coordinator.preflightWaitNanos(
            Duration.ofMillis(100).toNanos()));
    assertEquals(
        Duration.ofSeconds(4).toNanos(),
        dev.redlock.internal.lease.Coordinator.preflightWaitNanos(Duration.ofSeconds(2).toNanos()));
  }
}
