package dev.redlock.internal.transport;

/**
 * How {@code redis://} masters are talked to; {@code rediss://} (TLS) ones always by Jedis ({@link
 * PipelinedNodeClient}).
 */
public enum Transport {
  /** One NIO selector thread for every plaintext master ({@link SelectorNodeClient}). */
  SELECTOR,
  /** One Jedis connection and I/O thread per master ({@link PipelinedNodeClient}). */
  JEDIS;

  /**
   * A system property that picks the transport of plaintext masters: {@code jedis} for one Jedis
   * connection and I/O thread per master, anything else (or unset) for the default, one selector
   * thread for them all. For comparisons (the benchmark), not a supported setting.
   */
  public static final String PROPERTY = "dev.redlock.transport";

  /**
   * Returns the transport {@link #PROPERTY} asks for, or the default.
   *
   * @return {@link #JEDIS} if the property says {@code jedis}, else {@link #SELECTOR}
   */
  public static Transport fromProperty() {
    return "jedis".equalsIgnoreCase(System.getProperty(PROPERTY)) ? JEDIS : SELECTOR;
  }
}
