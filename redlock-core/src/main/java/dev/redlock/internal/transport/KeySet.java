package dev.redlock.internal.transport;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The lock keys of a multi-resource lease, carried as one key: every layer that only carries a
 * lease's key (the quorum round, breakers, renewals, the releases that follow a lease to every
 * master) carries a set unchanged, and only {@link NodeCommand} opens it, to run the key-set script
 * ({@code keyset.lua}) over every key of the set in one atomic call per master.
 *
 * <p>The encoding starts with {@link #PREFIX}, inside the library's reserved key space, so it can
 * never be a resource's own key (resources may not start with {@link LuaScript#RESERVED_PREFIX});
 * then each key as a 4-byte big-endian length and its bytes. It is never sent to a master as a key.
 * The keys are distinct and sorted (unsigned bytewise): one set has one encoding, and every master
 * sees the keys in the same order.
 */
public final class KeySet {

  /** What an encoded key set starts with. */
  static final byte[] PREFIX = "redlock:keyset:".getBytes(StandardCharsets.US_ASCII);

  private KeySet() {}

  /**
   * Encodes distinct keys, sorted unsigned bytewise, as one key.
   *
   * @param sortedKeys the keys, distinct and sorted; at least one
   * @return the encoded set
   * @throws IllegalArgumentException if the keys are empty, not sorted or not distinct
   */
  public static byte[] encode(List<byte[]> sortedKeys) {
    if (sortedKeys.isEmpty()) {
      throw new IllegalArgumentException("a key set needs at least one key");
    }
    int size = PREFIX.length;
    byte[] previous = null;
    for (byte[] key : sortedKeys) {
      if (previous != null && Arrays.compareUnsigned(previous, key) >= 0) {
        throw new IllegalArgumentException("the keys of a key set must be distinct and sorted");
      }
      previous = key;
      size += 4 + key.length;
    }
    ByteBuffer out = ByteBuffer.allocate(size).put(PREFIX);
    for (byte[] key : sortedKeys) {
      out.putInt(key.length).put(key);
    }
    return out.array();
  }

  /**
   * Returns whether {@code key} is an encoded key set rather than one resource's key.
   *
   * @param key a lease's key
   * @return true for a key set
   */
  public static boolean isKeySet(byte[] key) {
    return key.length > PREFIX.length
        && Arrays.equals(key, 0, PREFIX.length, PREFIX, 0, PREFIX.length);
  }

  /**
   * Returns the keys of an encoded key set, in their sorted order.
   *
   * @param keySet an encoded key set
   * @return new arrays, one per key
   * @throws IllegalArgumentException if {@code keySet} is not one
   */
  public static List<byte[]> keys(byte[] keySet) {
    if (!isKeySet(keySet)) {
      throw new IllegalArgumentException("not a key set");
    }
    List<byte[]> keys = new ArrayList<>();
    ByteBuffer in = ByteBuffer.wrap(keySet, PREFIX.length, keySet.length - PREFIX.length);
    while (in.hasRemaining()) {
      byte[] key = new byte[in.getInt()];
      in.get(key);
      keys.add(key);
    }
    return keys;
  }
}
