package dev.redlock.internal.transport;

import java.util.concurrent.CompletableFuture;

/**
 * The commands the coordinator sends to one master. Every call returns at once; the future
 * completes with the master's {@link NodeReply} when it answers, or exceptionally when it cannot.
 * Commands to one master go out on one connection in the order they were issued, and the master
 * runs them in that order, so on one connection a release never overtakes that master's own
 * acquire. A command written on a connection that is then lost fails with {@link
 * NodeUnavailableException#mayHaveRun}: the master may still run it after commands sent on the next
 * connection, which the lease layer's releases make up for.
 *
 * <p>Implementations are thread-safe. Futures may complete on an I/O thread (on the selector
 * transport, the one thread that reads every plaintext master's replies): callbacks must be short
 * and must not block.
 */
public interface NodeClient extends AutoCloseable {

  /**
   * Sends {@code command} to this master: the one command method of the port, which every decorator
   * overrides, switching on {@link Command#kind()} where it cares which command passes. Returns at
   * once; the future completes with the master's answer ({@link Command} says what each command
   * answers) or exceptionally when it cannot.
   *
   * @param command what to send
   * @param <R> its reply
   * @return its answer
   */
  <R> CompletableFuture<R> send(Command<R> command);

  /**
   * Whether this master's circuit breaker is closed (true without a breaker). Unlike {@link
   * #permits}, it asks for no permission, so it may be called for a choice that sends nothing.
   *
   * @return whether calls go through freely
   */
  default boolean closed() {
    return true;
  }

  /**
   * Asks to send this master a command that carries a vote ({@link Command.Role#VOTE}): false while
   * its circuit breaker skips it. A true answer must be followed by exactly one such command on
   * this client; after a false one the caller either sends nothing or calls through {@link
   * #probe()}.
   */
  default boolean permits() {
    return true;
  }

  /** Why a master that {@link #permits()} refused counts as a failed vote when it is not probed. */
  default NodeUnavailableException skipped() {
    return new NodeUnavailableException("skipped");
  }

  /**
   * Why this master may not vote at all for now, whatever its breaker (kept out as unfit for
   * Redlock), or null if it may: a round that cannot make a quorum without it asks no one. Asks no
   * permission; may start a re-check of the verdict when one is due.
   *
   * @return the reason, while it is kept out
   */
  default NodeUnavailableException excluded() {
    return null;
  }

  /**
   * The client to send through when {@link #permits()} said no but the round cannot reach a quorum
   * without this master: a probe, whose timely answer readmits the master.
   */
  default NodeClient probe() {
    return this;
  }

  /**
   * Hears how this master's connection attempts end, for the log of misconfiguration ({@link
   * DiagnosingNodeClient}). Called on the transport's thread: must be short and must not block.
   */
  interface Watcher {
    /** A connection opened and its handshake passed. */
    void connected();

    /**
     * A connection attempt failed.
     *
     * @param error why: the handshake's refusal ({@code AUTH refused: WRONGPASS ...}) or the
     *     connection's error; never a password
     */
    void connectFailed(String error);
  }

  /**
   * Has {@code watcher} hear how each connection attempt ends from now on; if the last attempt
   * failed already, it hears of that at once. One watcher per client; a client without connections
   * of its own ignores it.
   */
  default void watch(Watcher watcher) {}

  /** Waits until the first connection attempt has finished or the deadline passes. */
  default void awaitFirstConnect(long deadlineNanos) {}

  /**
   * Waits until every command written or queued has been answered (or has failed), or the deadline
   * passes: before a close, so that releases already sent are not cut off.
   */
  default void awaitDrained(long deadlineNanos) {}

  /** Waits for the client's thread, if any, to end; returns whether it did by the deadline. */
  default boolean awaitTermination(long deadlineNanos) {
    return true;
  }

  /** Stops the client: fails pending commands, closes the connection and ends its thread. */
  @Override
  void close();
}
