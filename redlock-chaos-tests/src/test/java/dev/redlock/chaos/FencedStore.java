package dev.redlock.chaos;

import dev.redlock.testkit.RedisAdmin;

/**
 * The guarded resource of the fencing tests, and an example of how any store should check fencing
 * tokens: a write carries the writer's {@code Lease.fencingToken()}, and the store rejects it if it
 * has already seen a higher token. The check and the write are one atomic step (here a Lua script
 * in a Redis that is not one of the lock's masters; in SQL, {@code UPDATE ... SET value = ?, fence
 * = ? WHERE id = ? AND fence <= ?}).
 */
final class FencedStore {

  private static final String WRITE =
      "local highest = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
          + "local token = tonumber(ARGV[2])\n"
          + "if token < highest then return 0 end\n"
          + "redis.call('SET', KEYS[2], ARGV[2])\n"
          + "redis.call('SET', KEYS[1], ARGV[1])\n"
          + "return 1\n";

  private final RedisAdmin store;

  FencedStore(RedisAdmin store) {
    this.store = store;
  }

  /** Writes {@code value} unless a write with a higher fencing token came first. */
  boolean write(String resource, long value, long fencingToken) {
    Object written =
        store.command(
            "EVAL",
            WRITE,
            "2",
            "fenced:" + resource,
            "fenced:" + resource + ":highest-token",
            Long.toString(value),
            Long.toString(fencingToken));
    return Long.valueOf(1).equals(written);
  }

  /** The value last written, or 0. */
  long read(String resource) {
    String value = store.get("fenced:" + resource);
    return value == null ? 0 : Long.parseLong(value);
  }

  /** The highest fencing token the store has accepted. */
  long highestToken(String resource) {
    String value = store.get("fenced:" + resource + ":highest-token");
    return value == null ? 0 : Long.parseLong(value);
  }
}
