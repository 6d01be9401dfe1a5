package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * admit.lua on a real master: a dataset-birth marker stored after the admitted one was lost is
 * never the marker the admission record names, even within the same millisecond. Otherwise a record
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
}
