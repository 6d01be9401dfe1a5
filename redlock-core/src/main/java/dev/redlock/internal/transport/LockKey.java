package dev.redlock.internal.transport;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A lease's key, typed: one resource's key, or the keys of a multi-resource lease. Every layer that
 * only carries a lease's key (the quorum round, breakers, renewals, the releases that follow a
 * lease to every master) carries either unchanged; {@link NodeCommand} runs the key-set script
 * ({@code keyset.lua}) for a {@link Set}, the single-key commands for a {@link One}, and no layer
 * tells them apart by parsing bytes.
 */
public sealed interface LockKey permits LockKey.One, LockKey.Set {

  /**
   * The key's identity: the resource's key, or the set's encoding ({@code KeySet}), which picks its
   * gate master and names it in maps. Callers must not modify it.
   *
   * @return the bytes
   */
  byte[] bytes();

  /**
   * One resource's key.
   *
   * @param key the key (not copied: callers must not modify it)
   * @return the lease's key
   */
  static One of(byte[] key) {
    return new One(key);
  }

  /**
   * The keys of a multi-resource lease.
   *
   * @param sortedKeys the keys, distinct and sorted unsigned bytewise; at least one
   * @return the lease's key
   * @throws IllegalArgumentException if the keys are empty, not sorted or not distinct
   */
  static Set of(List<byte[]> sortedKeys) {
    return new Set(KeySet.encode(sortedKeys), List.copyOf(sortedKeys));
  }

  /**
   * One resource's key.
   *
   * @param bytes the key
   */
  record One(byte[] bytes) implements LockKey {
    /** Checks the key is there. */
    public One {
      java.util.Objects.requireNonNull(bytes, "key");
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof One one && Arrays.equals(bytes, one.bytes);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
      return "One[" + new String(bytes, java.nio.charset.StandardCharsets.UTF_8) + "]";
    }
  }

  /**
   * The keys of a multi-resource lease, and their encoding as one key.
   *
   * @param bytes the encoding ({@code KeySet.encode})
   * @param keys the keys, distinct and sorted
   */
  record Set(byte[] bytes, List<byte[]> keys) implements LockKey {
    /** Copies the list (not the keys). */
    public Set {
      keys = List.copyOf(keys);
    }

    /**
     * The keys, each as one resource's key.
     *
     * @return a new list
     */
    public List<One> members() {
      List<One> members = new ArrayList<>(keys.size());
      for (byte[] key : keys) {
        members.add(new One(key));
      }
      return members;
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof Set set && Arrays.equals(bytes, set.bytes);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
      return "Set"
          + keys.stream().map(k -> new String(k, java.nio.charset.StandardCharsets.UTF_8)).toList();
    }
  }
}
