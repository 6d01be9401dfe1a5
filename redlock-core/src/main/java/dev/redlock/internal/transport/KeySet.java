package dev.redlock.internal.transport;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The encoding of a multi-resource lease's keys as one key ({@link LockKey.Set#bytes()}): what
 * picks the set's gate master and names it where one key is asked for. No layer parses it: a {@link
 * LockKey.Set} carries its keys.
 *
 * <p>The encoding starts with {@link #PREFIX}, inside the library's reserved key space, so it can
 * never be a resource's own key (resources may not start with {@link LuaScript#RESERVED_PREFIX});
 * then each key as a 4-byte big-endian length and its bytes. It is never sent to a master as a key.
 * The keys are distinct and sorted (unsigned bytewise): one set has one encoding, and every master
 * sees the keys in the same order.
 */
final class KeySet {

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
  static byte[] encode(List<byte[]> sortedKeys) {
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
}
