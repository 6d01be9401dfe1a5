package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLocks;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * admit.lua on a real master: an admission records the server run with the marker it vouches for,
 * and the master votes at once; a missing marker is stored dated in milliseconds, and a marker,
 * once stored, is kept. And a dataset-birth marker stored after the admitted one was lost is never
 * the marker the admission record names, even within the same millisecond. Otherwise a record
 * written, the marker deleted (evicted, {@code DEL}) and a new one stored in one millisecond would
 * vouch for a dataset that lost its keys, and its master would vote at once for every client
 * (RestartGuardIT's marker test failed so in CI, now and then).
 */
class AdmitScriptIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(1);

  /**
   * In one script run, so in one millisecond: a record naming a marker of this very millisecond,
   * the marker lost, then admit.lua storing the missing marker (with no run to admit), as an
   * acquire that found none has it do.
   */
  private static final String SAME_MILLISECOND =
      "redis.replicate_commands()\n"
          + "local t = redis.call('TIME')\n"
          + "local at = math.floor((tonumber(t[1]) * 1000000 + tonumber(t[2])) / 1000)\n"
          + "redis.call('SET', KEYS[2], 'run-1 ' .. tostring(at))\n"
          + "redis.call('DEL', KEYS[1])\n";

  @Test
  void aMarkerStoredAfterTheAdmittedOneWasLostIsNeverTheOneTheRecordNames(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    String admit = new String(LuaScript.ADMIT.body(), StandardCharsets.UTF_8);
    String marker = Trouble.DATASET_MARKER_KEY;
    String record = Trouble.ADMITTED_KEY;
    for (int i = 0; i < 50; i++) {
      assertEquals(
          1L, admin.command("EVAL", SAME_MILLISECOND + admit, "2", marker, record, ""), "stored");
      String born = (String) admin.command("GET", marker);
      String admitted = (String) admin.command("GET", record);
      assertNotEquals(
          admitted.substring(admitted.indexOf(' ') + 1),
          born,
          "the new marker is the one the record names (record '" + admitted + "')");
    }
  }

  /**
   * {@code admitFreshNodes} records the master's server run with the dataset-birth marker it
   * vouches for, and the master votes at once; a second admission changes neither (a marker stamped
   * again would look younger, and a record that named another marker would no longer vouch for this
   * dataset).
   */
  @Test
  void anAdmittedMasterVotesAtOnceAndASecondAdmissionChangesNothing(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    try (RedLock redlock =
        RedLock.builder().nodes(cluster.uris()).nodeTimeout(ScriptMasters.NODE_TIMEOUT).build()) {
      redlock.admitFreshNodes();
      String born = admin.get(Trouble.DATASET_MARKER_KEY);
      String run = runId(admin);
      assertEquals(run + " " + born, admin.get(Trouble.ADMITTED_KEY), "the admission record");
      try (Lease lease = redlock.tryAcquire("admitted", RedLocks.TTL).orElseThrow()) {
        assertTrue(lease.isValid());
      }
      redlock.admitFreshNodes();
      assertEquals(born, admin.get(Trouble.DATASET_MARKER_KEY), "the marker stamped again");
      assertEquals(run + " " + born, admin.get(Trouble.ADMITTED_KEY), "the admission record");
    }
  }

  /**
   * An acquire on a master with no marker stores one, dated by the master's clock in milliseconds,
   * and no admission: the restart guard measures the dataset's age from it.
   */
  @Test
  void anAcquireStoresAMissingMarkerInMillisecondsAndAdmitsNothing(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    try (RedLock redlock =
        RedLock.builder().nodes(cluster.uris()).nodeTimeout(ScriptMasters.NODE_TIMEOUT).build()) {
      long before = ScriptMasters.timeMicros(admin) / 1000;
      // Refused: the master is not admitted, its dataset brand new.
      assertThrows(
          QuorumUnavailableException.class, () -> redlock.tryAcquire("young", RedLocks.TTL));
      Poll.until("a marker stored", () -> admin.get(Trouble.DATASET_MARKER_KEY) != null);
      long after = ScriptMasters.timeMicros(admin) / 1000;
      long born = Long.parseLong(admin.get(Trouble.DATASET_MARKER_KEY));
      assertTrue(
          born >= before && born <= after + 1,
          "the marker " + born + " is not the master's clock in ms, " + before + " to " + after);
      assertNull(admin.get(Trouble.ADMITTED_KEY), "admitted by an acquire");
    }
  }

  private static String runId(RedisAdmin admin) {
    String info = (String) admin.command("INFO", "server");
    for (String line : info.split("\r?\n")) {
      if (line.startsWith("run_id:")) {
        return line.substring("run_id:".length()).trim();
      }
    }
    throw new AssertionError("no run_id in INFO server");
  }
}
