package dev.redlock.internal.transport;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A Lua script kept as a resource file next to this class, with its SHA-1 computed at load so it
 * can be called by EVALSHA (and sent whole by EVAL when a node answers NOSCRIPT, as a restarted
 * node does).
 */
public final class LuaScript {

  static final LuaScript FENCE = load("fence.lua");
  static final LuaScript RELEASE = load("release.lua");
  static final LuaScript EXTEND = load("extend.lua");
  static final LuaScript ADMIT = load("admit.lua");
  static final LuaScript SHORTEN = load("shorten.lua");

  /** The multi-resource lease's script: every operation on every key of a {@link LockKey.Set}. */
  static final LuaScript KEY_SET = load("keyset.lua");

  /** The waiters' turn at a resource's gate master ({@code queue.lua}). */
  static final LuaScript QUEUE = load("queue.lua");

  /** Every script, loaded on each new connection. */
  static final java.util.List<LuaScript> ALL =
      java.util.List.of(FENCE, RELEASE, EXTEND, ADMIT, SHORTEN, KEY_SET, QUEUE);

  /** What a resource's queue of waiters at its gate master is named: this, then the key. */
  static final byte[] QUEUE_PREFIX = "redlock:queue:".getBytes(StandardCharsets.US_ASCII);

  /** What the key of when each waiter in a queue last asked is named: this, then the key. */
  static final byte[] QUEUE_SEEN_PREFIX = "redlock:queue-seen:".getBytes(StandardCharsets.US_ASCII);

  /** Returns {@code prefix}, then {@code key}, in a new array. */
  static byte[] prefixed(byte[] prefix, byte[] key) {
    byte[] prefixed = new byte[prefix.length + key.length];
    System.arraycopy(prefix, 0, prefixed, 0, prefix.length);
    System.arraycopy(key, 0, prefixed, prefix.length, key.length);
    return prefixed;
  }

  /**
   * The key of each master's dataset-birth marker, read by the acquire, written by the admit
   * script.
   */
  static final byte[] DATASET_MARKER =
      Trouble.DATASET_MARKER_KEY.getBytes(StandardCharsets.US_ASCII);

  /**
   * The key that names the server run ({@code run_id}) an operator admitted on each master, read by
   * the acquire, written by the admit script.
   */
  static final byte[] ADMITTED = Trouble.ADMITTED_KEY.getBytes(StandardCharsets.US_ASCII);

  /**
   * The key of each master's one fence counter, shared by every resource: read by the acquire,
   * raised by the fence script. See the lease layer's {@code Leases.storeFence} for why one counter
   * is enough.
   */
  static final byte[] FENCE_COUNTER = "redlock:fence".getBytes(StandardCharsets.US_ASCII);

  /** What the library's own keys start with; resources may not. */
  public static final String RESERVED_PREFIX = "redlock:";

  /**
   * What a resource's own fence counter key started with before one counter per master replaced
   * them: such counters are still read, never written.
   */
  private final byte[] body;

  private final byte[] sha1;

  private LuaScript(byte[] body) {
    this.body = body;
    this.sha1 = sha1Hex(body);
  }

  static LuaScript load(String resource) {
    try (InputStream in = LuaScript.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("missing script resource " + resource);
      }
      return new LuaScript(in.readAllBytes());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read script resource " + resource, e);
    }
  }

  /** The script text, for EVAL. Shared: callers must not modify it. */
  byte[] body() {
    return body;
  }

  /** The lowercase hex SHA-1 of the script, for EVALSHA. Shared: callers must not modify it. */
  byte[] sha1() {
    return sha1;
  }

  private static byte[] sha1Hex(byte[] body) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-1").digest(body);
      return HexFormat.of().formatHex(digest).getBytes(StandardCharsets.US_ASCII);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 is required of every Java platform", e);
    }
  }
}
