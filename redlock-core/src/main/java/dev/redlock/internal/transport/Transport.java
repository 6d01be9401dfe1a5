package dev.redlock.internal.transport;

import java.util.Objects;

/**
 * How {@code redis://} masters are talked to; {@code rediss://} (TLS) ones always by Jedis ({@link
 * PipelinedNodeClient}).
 */
public enum Transport {
  /** One NIO selector thread for every plaintext master ({@link SelectorNodeClient}). */
  SELECTOR,
  /** One Jedis connection and I/O thread per master ({@link PipelinedNodeClient}). */
  JEDIS;

  private static volatile Transport plaintext = SELECTOR;

  /**
   * Makes RedLocks built from now on talk to plaintext masters through {@code transport}: a hook
   * for comparisons (the benchmark's {@code --transport}) and for the test run on the Jedis
   * transport, not a setting (the package is not exported). {@link #SELECTOR} until called.
   *
   * @param transport the transport
   */
  public static void usePlaintext(Transport transport) {
    plaintext = Objects.requireNonNull(transport, "transport");
  }

  /**
   * Returns the transport RedLocks built now use for plaintext masters ({@link #usePlaintext}).
   *
   * @return {@link #SELECTOR} unless the hook said otherwise
   */
  public static Transport plaintext() {
    return plaintext;
  }
}
