package dev.redlock.internal.lease;

import static java.util.Objects.requireNonNull;

import dev.redlock.internal.transport.LuaScript;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The checks at every public entry, and the encoding of resource names into keys. Everything here
 * fails with an exception naming the argument, before anything is sent to a master.
 */
public final class Arguments {

  /** The longest TTL accepted: one day. The API's {@code RedLock.MAX_TTL}. */
  public static final Duration MAX_TTL = Duration.ofDays(1);

  /**
   * The longest resource name accepted, in UTF-8 bytes: 16 KiB. The API's {@code
   * RedLock.MAX_RESOURCE_BYTES}.
   */
  public static final int MAX_RESOURCE_BYTES = 16 * 1024;

  /** Durations beyond this are treated as "forever" rather than overflowing nanoseconds. */
  private static final Duration FOREVER = Duration.ofDays(365 * 100);

  private final long nodeTimeoutNanos;
  private final long minValidityNanos;
  private final long maxLeaseMillis; // Long.MAX_VALUE without the restart guard

  Arguments(long nodeTimeoutNanos, long minValidityNanos, long maxLeaseMillis) {
    this.nodeTimeoutNanos = nodeTimeoutNanos;
    this.minValidityNanos = minValidityNanos;
    this.maxLeaseMillis = maxLeaseMillis;
  }

  /**
   * Validates a TTL and returns it in whole milliseconds, as sent to the masters.
   *
   * @param ttl the TTL the caller asked for
   * @return the TTL in whole milliseconds (a fraction is dropped)
   * @throws NullPointerException if {@code ttl} is null
   * @throws IllegalArgumentException if it is out of range: not above the node timeout and the
   *     minimum validity, or above {@link #MAX_TTL} or (with the restart guard) the longest lease
   */
  public long ttlMillis(Duration ttl) {
    long nanos = positiveNanos(ttl, "ttl");
    if (ttl.compareTo(MAX_TTL) > 0) {
      throw new IllegalArgumentException("ttl must be at most " + MAX_TTL + ": " + ttl);
    }
    long millis = ttl.toMillis();
    if (millis < 1) {
      throw new IllegalArgumentException("ttl must be at least 1 ms: " + ttl);
    }
    if (nanos <= nodeTimeoutNanos) {
      throw new IllegalArgumentException(
          "ttl ("
              + ttl
              + ") must be greater than the node timeout ("
              + Duration.ofNanos(nodeTimeoutNanos)
              + ")");
    }
    if (millis > maxLeaseMillis) {
      throw new IllegalArgumentException(
          "ttl ("
              + ttl
              + ") is longer than maxLeaseTime ("
              + Duration.ofMillis(maxLeaseMillis)
              + "), which the restart guard relies on; raise maxLeaseTime"
              + " (redlock.max-lease-time with the Spring Boot starter)");
    }
    if (nanos <= minValidityNanos) {
      throw new IllegalArgumentException(
          "ttl ("
              + ttl
              + ") must be greater than minValidity ("
              + Duration.ofNanos(minValidityNanos)
              + ")");
    }
    return millis;
  }

  /**
   * Returns a positive duration in nanoseconds; a century or more counts as "forever".
   *
   * @param value the duration
   * @param name the argument's name, for the exception
   * @return nanoseconds, positive
   * @throws NullPointerException if {@code value} is null
   * @throws IllegalArgumentException if it is zero or negative
   */
  public static long positiveNanos(Duration value, String name) {
    requireNonNull(value, name);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive: " + value);
    }
    return value.compareTo(FOREVER) > 0 ? Long.MAX_VALUE / 4 : value.toNanos();
  }

  /**
   * Encodes a resource name as strict UTF-8, refusing what would alias another name.
   *
   * @param resource the resource name
   * @return its key
   * @throws NullPointerException if {@code resource} is null
   * @throws IllegalArgumentException if it is empty, too long, not well-formed Unicode, or in the
   *     library's own key space
   */
  public static byte[] resourceKey(String resource) {
    requireNonNull(resource, "resource");
    if (resource.isEmpty()) {
      throw new IllegalArgumentException("resource must not be empty");
    }
    if (resource.startsWith(LuaScript.RESERVED_PREFIX)) {
      throw new IllegalArgumentException(
          "resource must not start with '"
              + LuaScript.RESERVED_PREFIX
              + "': the library keeps its own keys there");
    }
    if (resource.length() > MAX_RESOURCE_BYTES) {
      throw new IllegalArgumentException(
          "resource is longer than " + MAX_RESOURCE_BYTES + " UTF-8 bytes");
    }
    ByteBuffer encoded;
    try {
      encoded =
          StandardCharsets.UTF_8
              .newEncoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .encode(CharBuffer.wrap(resource));
    } catch (CharacterCodingException e) {
      // An unpaired surrogate: lenient encoding would turn it into '?' and alias another name.
      throw new IllegalArgumentException(
          "resource is not well-formed Unicode (unpaired surrogate)");
    }
    if (encoded.remaining() > MAX_RESOURCE_BYTES) {
      throw new IllegalArgumentException(
          "resource is "
              + encoded.remaining()
              + " UTF-8 bytes; the limit is "
              + MAX_RESOURCE_BYTES);
    }
    byte[] key = new byte[encoded.remaining()];
    encoded.get(key);
    return key;
  }

  /**
   * Returns a resource name as shown in messages and logs: quoted, cut at 64 characters.
   *
   * @param resource the resource name
   * @return the name to show
   */
  public static String quote(String resource) {
    return "'" + (resource.length() <= 64 ? resource : resource.substring(0, 64) + "...") + "'";
  }
}
