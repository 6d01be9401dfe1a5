package dev.redlock.internal.transport;

import java.util.List;

/**
 * The commands on a {@link LockKey.Set}: each one call of the key-set script ({@code keyset.lua})
 * over every key of the set, which {@link NodeCommand} builds here when a lease's key is a set.
 */
final class KeySetCommands {

  private KeySetCommands() {}

  /**
   * The acquire of every key of a set at once, all or nothing: the script reads the master's clock,
   * sets every key only if none exists, then reads the fence counter, the dataset-birth marker and
   * the admitted run, in one atomic call. Its reply is read as the three of {@link
   * NodeCommand#acquire}'s ({@link #asAcquire}), with the same fencing and restart guard: a master
   * too young to vote still sets the keys, as the single acquire's {@code SET} does, and they are
   * released with the lease.
   */
  static NodeCommand acquire(LockKey.Set keySet, byte[] token, long ttlMillis, long guardMillis) {
    List<byte[]> lockKeys = keySet.keys();
    int n = lockKeys.size();
    byte[][] keys = new byte[n + 3][];
    for (int i = 0; i < n; i++) {
      keys[i] = lockKeys.get(i);
    }
    keys[n] = LuaScript.FENCE_COUNTER;
    keys[n + 1] = LuaScript.DATASET_MARKER;
    keys[n + 2] = LuaScript.ADMITTED;
    return NodeCommand.keySetScript(
        NodeCommand.Kind.ACQUIRE_SET,
        guardMillis,
        keys,
        NodeCommand.ascii("acquire"),
        token,
        NodeCommand.number(ttlMillis),
        NodeCommand.number(n));
  }

  /**
   * The script's {@code operation} (release, extend, shorten, fence) on every key of a set,
   * compare-and-act, answering 1, 0 or -1 as the single-key scripts do (and the release 2 when a
   * waiter heard it, as {@code release.lua} does); {@code extra} keys follow the lock keys.
   */
  static NodeCommand onSet(
      String operation, LockKey.Set keySet, byte[] token, long number, byte[]... extra) {
    List<byte[]> lockKeys = keySet.keys();
    byte[][] keys = new byte[lockKeys.size() + extra.length][];
    for (int i = 0; i < lockKeys.size(); i++) {
      keys[i] = lockKeys.get(i);
    }
    System.arraycopy(extra, 0, keys, lockKeys.size(), extra.length);
    return NodeCommand.keySetScript(
        NodeCommand.Kind.SCRIPT,
        0,
        keys,
        NodeCommand.ascii(operation),
        token,
        NodeCommand.number(number),
        NodeCommand.number(lockKeys.size()));
  }

  /**
   * The release of every key of a set without its notices to waiters: the cleanup of an acquire
   * that failed, as the single release's {@code quiet} ({@code NodeCommand#releaseQuietly}).
   */
  static NodeCommand releaseQuietly(LockKey.Set keySet, byte[] token) {
    List<byte[]> lockKeys = keySet.keys();
    return NodeCommand.keySetScript(
        NodeCommand.Kind.SCRIPT,
        0,
        lockKeys.toArray(new byte[0][]),
        NodeCommand.ascii("release"),
        token,
        NodeCommand.number(0),
        NodeCommand.number(lockKeys.size()),
        NodeCommand.ascii("quiet"));
  }

  /**
   * Reads the script's answer to an acquire, {@code {time, OK or nil, {counter, marker,
   * admitted}}}, as the three replies of a single acquire, {@code TIME}, {@code SET} and {@code
   * MGET counter marker admitted}.
   *
   * @return the three replies, or null if the answer is an error or not of that shape
   */
  static Object[] asAcquire(Object answer) {
    if (!(answer instanceof List<?> parts
        && parts.size() == 3
        && parts.get(2) instanceof List<?> read
        && read.size() == 3)) {
      return null;
    }
    return new Object[] {parts.get(0), parts.get(1), read};
  }
}
