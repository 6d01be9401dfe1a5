package dev.redlock.internal.transport;

/**
 * One master's wake-up channels as a RedLock hears them: the {@link NoticeLink} (a connection of
 * its own, with its threads), or a simulation's link on virtual time. Subscriptions are asked for
 * and dropped without waiting; what the master confirms and publishes reaches the {@link
 * NoticeLink.Listener} given when it was made. Thread-safe.
 */
public interface Subscriber extends AutoCloseable {

  /**
   * Subscribes to {@code key}'s channel, connecting first if needed; returns at once.
   *
   * @param key the resource's key, one char per byte
   */
  void subscribe(String key);

  /**
   * Unsubscribes from {@code key}'s channel; returns at once.
   *
   * @param key the resource's key, one char per byte
   */
  void unsubscribe(String key);

  /**
   * Closes the connection and waits up to {@code graceNanos} for what serves it.
   *
   * @param graceNanos how long to wait
   */
  void close(long graceNanos);

  /** Closes, waiting up to a second. */
  @Override
  void close();
}
