package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Inspection.Check;
import dev.redlock.Inspection.Verdict;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a new user meets first: a default RedLock against five brand-new masters, before anyone
 * admitted them. The acquire fails with an error that names the restart guard, says when the
 * masters vote on their own and gives the remedy (admission); {@code inspect()} says the same, and
 * {@code requireQuorum()} refuses to let a service start on it.
 */
class NewUserIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @Test
  void aDefaultRedLockOnBrandNewMastersNamesTheRestartGuardAndAdmission(RedisCluster cluster)
      throws InterruptedException {
    try (RedLock redlock = RedLock.builder().nodes(cluster.uris()).build()) {
      QuorumUnavailableException e =
          assertThrows(
              QuorumUnavailableException.class,
              () -> redlock.acquire("orders:42", Duration.ofSeconds(10), Duration.ofMillis(500)));
      String message = e.getMessage();
      // The round is decided once a majority can no longer grant: at least 3 of the 5 answered.
      assertTrue(
          message.matches("(?s).*the restart guard does not count the votes of [345] masters.*"),
          message);
      assertTrue(message.contains("admitFreshNodes()"), message);
      assertTrue(message.contains("redlock admit"), message);
      assertTrue(message.contains("On a brand-new cluster, admit them"), message);
      assertTrue(
          message.matches("(?s).*they vote on their own in \\d+ s at the latest.*"), message);
      for (NodeOutcome outcome : e.outcomes()) {
        assertTrue(
            outcome.status() == Status.RESTARTED || outcome.status() == Status.PENDING,
            outcome.toString());
      }

      Inspection inspection = redlock.inspect();
      for (Inspection.Master master : inspection.masters()) {
        Check admission = admission(master);
        assertEquals(Verdict.WARN, admission.verdict(), admission.detail());
        assertTrue(
            admission.detail().startsWith("the restart guard does not count its vote"),
            admission.detail());
        assertTrue(admission.detail().contains("votes in "), admission.detail());
        assertTrue(admission.detail().contains("admitFreshNodes()"), admission.detail());
        assertTrue(!master.votes(), master.toString());
      }
      IllegalStateException refused =
          assertThrows(IllegalStateException.class, inspection::requireQuorum);
      assertTrue(refused.getMessage().startsWith("no quorum: 0 of 5 masters can grant, 3 must"));
      assertTrue(refused.getMessage().contains("admission WARN"), refused.getMessage());

      redlock.admitFreshNodes();
      Inspection admitted = redlock.inspect();
      assertSame(admitted, admitted.requireQuorum());
      for (Inspection.Master master : admitted.masters()) {
        assertEquals(Verdict.PASS, admission(master).verdict(), admission(master).detail());
      }
      try (Lease lease =
          redlock.acquire("orders:42", Duration.ofSeconds(10), Duration.ofMillis(500))) {
        assertTrue(lease.isValid());
      }
    }
  }

  /**
   * A client the restart guard keeps out of every master sets no key while it waits: its first
   * round told it when each master votes, and its rounds after that ask no one (a client that
   * cannot win would take the masters the others need). An admission made elsewhere ends that.
   */
  @Test
  void aClientTheGuardKeepsOutSetsNoKeyWhileItWaits(RedisCluster cluster)
      throws InterruptedException {
    try (RedLock redlock = RedLock.builder().nodes(cluster.uris()).build();
        RedLock operator = RedLock.builder().nodes(cluster.uris()).build()) {
      Duration ttl = Duration.ofSeconds(10);
      long before = sets(cluster); // since each server started: other tests' too
      assertThrows(
          QuorumUnavailableException.class,
          () -> redlock.acquire("orders:42", ttl, Duration.ofMillis(20)));
      // Its first round ran two SETs on each master, its acquire's and the dataset-birth marker's
      // that the guard had stored (admit.lua); the rounds after it, none.
      long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
      while (sets(cluster) < before + 10 && System.nanoTime() - deadline < 0) {
        Thread.onSpinWait();
      }
      assertEquals(before + 10, sets(cluster));
      QuorumUnavailableException e =
          assertThrows(
              QuorumUnavailableException.class,
              () -> redlock.acquire("orders:42", ttl, Duration.ofMillis(200)));
      assertEquals(
          before + 10, sets(cluster), "acquires sent while the guard kept every master out");
      assertTrue(e.getMessage().contains("the restart guard does not count"), e.getMessage());

      operator.admitFreshNodes();
      try (Lease lease = redlock.acquire("orders:42", ttl, Duration.ofSeconds(5))) {
        assertTrue(lease.isValid());
      }
    }
  }

  /** The SET commands every master has run so far: the acquire is one. */
  private static long sets(RedisCluster cluster) {
    long sets = 0;
    for (int i = 0; i < 5; i++) {
      String stats = String.valueOf(cluster.node(i).admin().command("INFO", "commandstats"));
      for (String line : stats.split("\r?\n")) {
        if (line.startsWith("cmdstat_set:calls=")) {
          sets += Long.parseLong(line.substring("cmdstat_set:calls=".length(), line.indexOf(',')));
        }
      }
    }
    return sets;
  }

  private static Check admission(Inspection.Master master) {
    return master.checks().stream()
        .filter(c -> c.name().equals("admission"))
        .findFirst()
        .orElseThrow();
  }
}
