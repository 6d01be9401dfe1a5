package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Inspection.Check;
import dev.redlock.Inspection.Verdict;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What {@link RedLock#admitFreshNodes()} and {@link RedLock#inspect()} say about admission, against
 * real masters: each master's result in words, the reason a master cannot be admitted without the
 * restart guard's advice when it will never vote anyway, and one story per master whatever the
 * inspecting client's maxLeaseTime. The log is slf4j-simple's, on System.err.
 */
class AdmissionIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  /** The restart guard's advice: for a master that waits, not for one that never votes. */
  private static final List<String> GUARD_ADVICE =
      List.of("votes in", "votes only once", "once admitted", "has been up");

  @RegisterExtension final CapturedLog captured = new CapturedLog();

  private String log() {
    return captured.text();
  }

  private static Check check(Inspection inspection, int master, String name) {
    return inspection.masters().get(master).checks().stream()
        .filter(c -> c.name().equals(name))
        .findFirst()
        .orElseThrow();
  }

  private static void assertNoGuardAdvice(String text) {
    for (String advice : GUARD_ADVICE) {
      assertFalse(text.contains(advice), "restart-guard advice '" + advice + "' in: " + text);
    }
  }

  @Test
  void theAdmissionIsLoggedPerMasterInWords(RedisCluster cluster) {
    try (RedLock redlock = RedLock.builder().nodes(cluster.uris()).build()) {
      redlock.admitFreshNodes();
      String first = log();
      redlock.admitFreshNodes();
      String second = log().substring(first.length());
      for (String node : cluster.uris()) {
        String name = node.substring("redis://".length());
        assertTrue(first.contains(name + " admitted"), first);
        assertTrue(second.contains(name + " already admitted"), second);
      }
      for (String vote : List.of("GRANTED", "TAKEN")) {
        assertFalse(log().contains(vote), log());
      }
    }
  }

  @Test
  void aOneMinuteAdmissionPassesTheInspectionOfATenMinuteClient(RedisCluster cluster) {
    try (RedLock minute = RedLock.builder().nodes(cluster.uris()).build();
        RedLock tenMinutes =
            RedLock.builder().nodes(cluster.uris()).maxLeaseTime(Duration.ofMinutes(10)).build()) {
      minute.admitFreshNodes();
      Inspection inspection = tenMinutes.inspect();
      for (int i = 0; i < 3; i++) {
        assertEquals(Verdict.PASS, check(inspection, i, "uptime").verdict(), inspection::toString);
        assertEquals(
            Verdict.PASS, check(inspection, i, "admission").verdict(), inspection::toString);
        assertTrue(check(inspection, i, "admission").detail().contains("admitted"));
      }
      assertFalse(inspection.toString().contains("votes in"), inspection::toString);
      assertEquals(3, inspection.voting(), inspection::toString);
    }
  }

  @Test
  void aWrongPasswordIsNotAdmittedForThatReasonAlone(RedisCluster cluster) {
    RedisProcess node = cluster.node(0);
    node.admin().command("ACL", "SETUSER", "app", "on", ">right", "~*", "+@all");
    String uri = "redis://app:wr0ngpass@" + node.host() + ":" + node.port();
    try (RedLock redlock = RedLock.builder().node(uri).build()) {
      NodeOutcome outcome = redlock.admitFreshNodes().get(0);
      assertEquals(Status.FAILED, outcome.status(), outcome::toString);
      assertTrue(log().contains("not admitted: authentication refused"), log());
      assertTrue(log().contains("check the user and password"), log());
      assertNoGuardAdvice(log());
    } finally {
      node.admin().command("ACL", "DELUSER", "app");
    }
    assertFalse(log().contains("wr0ngpass"), log());
  }

  @Test
  void aMissingPasswordIsAnAuthenticationFailureNamingTheRemedy() {
    try (RedisProcess guarded = RedisProcess.start()) {
      // The admin client's connection was signed in before: it stays so.
      guarded.admin().command("CONFIG", "SET", "requirepass", "s3cret");
      try (RedLock redlock =
          RedLock.builder()
              .node(guarded.uri())
              .nodeTimeout(Duration.ofMillis(200))
              .connectTimeout(Duration.ofMillis(500))
              .build()) {
        NodeOutcome admitted = redlock.admitFreshNodes().get(0);
        assertEquals(Status.FAILED, admitted.status(), admitted::toString);
        QuorumUnavailableException refused =
            assertThrows(
                QuorumUnavailableException.class,
                () -> redlock.tryAcquire("r", Duration.ofSeconds(1)));
        for (String text : List.of(admitted.detail(), refused.getMessage(), log())) {
          assertFalse(text.contains("SCRIPT LOAD"), text);
          assertTrue(text.contains("authentication"), text);
          assertTrue(text.contains("requires a password"), text);
          assertTrue(text.contains("redis://user:password@host:port"), text);
        }
        assertNoGuardAdvice(log());
      }
    }
  }

  @Test
  void aReplicaIsNotAdmittedAndGetsNoRestartGuardAdvice(RedisCluster cluster) {
    try (RedisProcess replica = RedisProcess.start()) {
      RedisProcess master = cluster.node(0);
      replica.admin().command("REPLICAOF", master.host(), Integer.toString(master.port()));
      RedLocks.eventually(
          "the replica is connected",
          () ->
              String.valueOf(master.admin().command("INFO", "replication"))
                  .contains("connected_slaves:1"));
      try (RedLock redlock =
          RedLock.builder().nodes(List.of(cluster.uris().get(1), replica.uri())).build()) {
        NodeOutcome outcome = redlock.admitFreshNodes().get(1);
        assertEquals(Status.FAILED, outcome.status(), outcome::toString);
        assertTrue(log().contains("not admitted: a replica"), log());
        assertNoGuardAdvice(log());
        Check admission = check(redlock.inspect(), 1, "admission");
        assertNoGuardAdvice(admission.detail());
        assertTrue(admission.detail().contains("replica"), admission::toString);
      } finally {
        replica.admin().command("REPLICAOF", "NO", "ONE");
      }
    }
  }
}
