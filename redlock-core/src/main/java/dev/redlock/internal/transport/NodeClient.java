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
   * The acquire ({@code TIME}, {@code SET key token NX PX ttl}, {@code MGET counter legacyCounter
   * marker admitted}, written together): GRANTED if the key was set, TAKEN if it exists, RESTARTED
   * if the master's dataset or server run is younger than {@code guardMillis} (or it has no birth
   * marker: then one is stored), whatever the {@code SET} did; with the master's fence counter (the
   * higher of its one counter and the resource's counter of earlier versions, {@code
   * legacyFenceKey}) and its time. With no {@code legacyFenceKey} (null) and no guard (0), a plain
   * {@code SET key token NX PX ttl} that reports neither.
   */
  CompletableFuture<NodeReply> acquire(
      byte[] key, byte[] legacyFenceKey, byte[] token, long ttlMillis, long guardMillis);

  /**
   * A waiter's acquire of a single resource at its gate master, in turn: as {@link #acquire}, but
   * the key is set only for the waiter first in the master's queue of the resource's waiters; any
   * other is queued and answered TAKEN. The default, for clients that keep no queue, is the plain
   * acquire.
   *
   * @param key the resource's key (not a key set)
   * @param token the round's token
   * @param ttlMillis the TTL
   * @param guardMillis the restart guard's age, or 0
   * @param waiter names the waiter, the same in each of its rounds
   * @param staleMillis how long a waiter that stopped asking stays queued
   * @return the answer
   */
  default CompletableFuture<NodeReply> acquireInTurn(
      byte[] key, byte[] token, long ttlMillis, long guardMillis, byte[] waiter, long staleMillis) {
    return acquire(key, LuaScript.legacyFenceKey(key), token, ttlMillis, guardMillis);
  }

  /**
   * Takes {@code waiter} out of the queue of {@code key}'s waiters at this master: it stopped
   * waiting without being granted here. Nothing to do by default.
   *
   * @param key the resource's key
   * @param waiter the waiter
   * @return completed when answered
   */
  default CompletableFuture<NodeReply> leaveQueue(byte[] key, byte[] waiter) {
    return CompletableFuture.completedFuture(NodeReply.of(Vote.GRANTED));
  }

  /**
   * The fence script: GRANTED if stored in the master's fence counter while the key holds our
   * token, TAKEN, or GONE.
   */
  CompletableFuture<NodeReply> fence(byte[] key, byte[] token, long fence);

  /** The release script: GRANTED if deleted, TAKEN if another token holds it, GONE if absent. */
  CompletableFuture<NodeReply> release(byte[] key, byte[] token);

  /**
   * Releases at the resource's gate master, where its waiters queue in turn: as {@link #release},
   * and the notice names the first queued waiter. The default, for clients that keep no queue, is
   * the plain release.
   *
   * @param key the resource's key
   * @param token the lease's token
   * @return the answer
   */
  default CompletableFuture<NodeReply> releaseAtGate(byte[] key, byte[] token) {
    return release(key, token);
  }

  /**
   * The release script without the notice to waiting clients ({@code redlock:wake:<key>}): the
   * cleanup of an acquire that failed or of a lost lease, whose competitors retry on their own.
   * Answers as {@link #release}; by default, a release.
   */
  default CompletableFuture<NodeReply> releaseQuietly(byte[] key, byte[] token) {
    return release(key, token);
  }

  /**
   * The release at the master after the resource's gate by name, the other master its waiters hear:
   * as {@link #releaseQuietly}, and the answer says whether some client waits on the resource there
   * ({@link NodeReply#waitersListening()}); they are told only if the gate did not take the release
   * ({@link #noticeWaiters}). By default, a quiet release.
   *
   * @param key the resource's key
   * @param token the lease's token
   * @return the answer
   */
  default CompletableFuture<NodeReply> releaseAtNext(byte[] key, byte[] token) {
    return releaseQuietly(key, token);
  }

  /**
   * Tells the clients waiting on {@code key} that it was released, deleting nothing: the releaser's
   * fallback on the next master by name when the key's gate did not take the release, so named no
   * waiter there. Answers GRANTED; {@link NodeReply#waitersTold()} if some client heard it. By
   * default, nothing is told.
   *
   * @param key the resource's key
   * @param token the released lease's token, which the notice names by its SHA-1
   * @return the answer
   */
  default CompletableFuture<NodeReply> noticeWaiters(byte[] key, byte[] token) {
    return CompletableFuture.completedFuture(NodeReply.of(Vote.GRANTED));
  }

  /** The extend script: GRANTED if extended, TAKEN if another token holds it, GONE if absent. */
  CompletableFuture<NodeReply> extend(byte[] key, byte[] token, long ttlMillis);

  /**
   * The shorten script: GRANTED if the key holds our token (its expiry is now at most {@code
   * ttlMillis}), TAKEN if another token holds it, GONE if absent.
   */
  CompletableFuture<NodeReply> shorten(byte[] key, byte[] token, long ttlMillis);

  /**
   * A read-only diagnostic command for the preflight ({@code INFO}, {@code CONFIG GET}, {@code
   * TIME}): completes with the raw answer, or exceptionally with the server's error (an ACL that
   * forbids it, say) or the failure. Never guarded by a circuit breaker.
   */
  CompletableFuture<Object> query(NodeCommand.Verb verb, String... args);

  /**
   * The admit script: admits the master's current server run with its dataset, so that it votes at
   * once for every client whatever its {@code maxLeaseTime} ({@link RestartGuardRule}): GRANTED if
   * that changed anything, TAKEN if it was already admitted; fails if the connection could not read
   * the server's run.
   */
  CompletableFuture<NodeReply> admit();

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
   * Asks to send this master an acquire, fence or extend: false while its circuit breaker skips it.
   * A true answer must be followed by exactly one of those calls on this client; after a false one
   * the caller either sends nothing or calls through {@link #probe()}.
   */
  default boolean permits() {
    return true;
  }

  /** Why a master that {@link #permits()} refused counts as a failed vote when it is not probed. */
  default NodeUnavailableException skipped() {
    return new NodeUnavailableException("skipped");
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
