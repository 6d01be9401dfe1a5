package dev.redlock.internal.lease;

import java.security.SecureRandom;

/**
 * Lock values: 128 bits from {@link SecureRandom}, hex-encoded, fresh for every acquisition. A
 * value that collided with another client's would let that client release or extend our lock, so
 * they come from a cryptographic source rather than a counter or a UUID of unknown origin.
 */
final class Tokens {

  static final int TOKEN_BYTES = 16;
  private static final byte[] HEX =
      "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  private final SecureRandom random = new SecureRandom();

  /** Returns a new token as ASCII hex bytes (32 bytes for 128 bits). */
  byte[] next() {
    byte[] raw = new byte[TOKEN_BYTES];
    random.nextBytes(raw);
    byte[] hex = new byte[TOKEN_BYTES * 2];
    for (int i = 0; i < TOKEN_BYTES; i++) {
      hex[2 * i] = HEX[(raw[i] >> 4) & 0xf];
      hex[2 * i + 1] = HEX[raw[i] & 0xf];
    }
    return hex;
  }
}
