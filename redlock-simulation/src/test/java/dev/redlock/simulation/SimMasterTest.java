package dev.redlock.simulation;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * What the differential test cannot pin down on a real server's moving clock, on a simulated
 * master's clock that only moves when told: when a key expires, and the time a script expires keys
 * by.
 */
class SimMasterTest {

  private final AtomicLong micros = new AtomicLong(1_700_000_000_000_000L);
  private final SimMaster master = new SimMaster(micros::get);

  @Test
  void aKeyLivesThroughItsLastMillisecondAndIsGoneAfterIt() {
    master.execute("SET", "k", "v", "PX", "10");
    micros.addAndGet(10_000); // exactly at its expiry: Redis's "now > when" keeps it
    assertEquals(0L, master.execute("PTTL", "k"));
    assertArrayEquals("v".getBytes(ISO_8859_1), (byte[]) master.execute("GET", "k"));
    micros.addAndGet(1_000);
    assertNull(master.execute("GET", "k"));
    assertEquals(-2L, master.execute("PTTL", "k"));
    assertEquals(0, master.dbSize());
  }

  @Test
  void anExpiryInThePastDeletesTheKeyAtOnce() {
    master.execute("SET", "k", "v");
    assertEquals(1L, master.execute("PEXPIRE", "k", "0"));
    assertNull(master.execute("GET", "k"));
    assertEquals(0L, master.execute("PEXPIRE", "k", "100"));
  }

  @Test
  void aScriptExpiresKeysByTheTimeItStarted() {
    // The script reads TIME (which moves on, 10 ms a read) and then the key: still there, as on
    // Redis, whose scripts see the time they started for expiry from start to end.
    String script =
        "redis.call('TIME') redis.call('TIME') local v = redis.call('GET', KEYS[1]) return v";
    AtomicLong calls = new AtomicLong();
    SimMaster ticking =
        new SimMaster(() -> micros.get() + 10_000 * Math.min(1, calls.getAndIncrement()));
    calls.set(0); // the master read its start time
    ticking.execute("SET", "k", "v", "PX", "5");
    calls.set(0);
    Object reply = ticking.execute("EVAL", script, "1", "k");
    assertArrayEquals("v".getBytes(ISO_8859_1), (byte[]) reply);
    assertNull(ticking.execute("GET", "k"));
  }

  @Test
  void aNumberPassedToACommandIsWrittenAsRedisWritesIt() {
    assertEquals("1700000000000123", ZSet.g17(1_700_000_000_000_123d));
    assertEquals("-5", ZSet.g17(-5));
    assertEquals("0.5", ZSet.g17(0.5));
    assertEquals("0.10000000000000001", ZSet.g17(0.1));
    assertEquals("1e+17", ZSet.g17(1e17));
    Object reply =
        master.execute(
            "EVAL",
            "redis.call('SET', KEYS[1], 2 * 1700000000000000) return redis.call('GET', KEYS[1])",
            "1",
            "k");
    assertArrayEquals("3400000000000000".getBytes(ISO_8859_1), (byte[]) reply);
    assertEquals(List.of(), master.execute("ZRANGE", "none", "0", "-1"));
  }
}
