package dev.redlock;

import dev.redlock.NodeOutcome.Status;
import java.util.concurrent.CompletableFuture;

/**
 * The commands the coordinator sends to one master. Every call returns at once; the future
 * completes with {@link Status#GRANTED}, {@link Status#TAKEN} or {@link Status#GONE} when the
 * master answers, or exceptionally when it cannot. Commands to one master are executed in the order
 * they were issued, so a release never overtakes that master's own acquire.
 *
 * <p>Implementations are thread-safe. Futures may complete on an I/O thread: callbacks must be
 * short and must not block.
 */
interface NodeClient extends AutoCloseable {

  /** {@code SET key token NX PX ttl}: GRANTED if set, TAKEN if the key exists. */
  CompletableFuture<Status> setIfAbsent(byte[] key, byte[] token, long ttlMillis);

  /** The release script: GRANTED if deleted, TAKEN if another token holds it, GONE if absent. */
  CompletableFuture<Status> release(byte[] key, byte[] token);

  /** The extend script: GRANTED if extended, TAKEN if another token holds it, GONE if absent. */
  CompletableFuture<Status> extend(byte[] key, byte[] token, long ttlMillis);

  /** Waits until the first connection attempt has finished or the deadline passes. */
  default void awaitFirstConnect(long deadlineNanos) {}

  /** Waits for the client's thread, if any, to end; returns whether it did by the deadline. */
  default boolean awaitTermination(long deadlineNanos) {
    return true;
  }

  /** Stops the client: fails pending commands, closes the connection and ends its thread. */
  @Override
  void close();
}
