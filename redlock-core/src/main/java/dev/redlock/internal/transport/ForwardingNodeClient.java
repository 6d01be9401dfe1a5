package dev.redlock.internal.transport;

import java.util.concurrent.CompletableFuture;

/**
 * A master's client that hands every call to another: the base of the wrappers that add one concern
 * to a master (its circuit breaker, its fitness), each overriding only the calls that concern
 * changes.
 */
public abstract class ForwardingNodeClient implements NodeClient {

  /** The client every call not overridden goes to. */
  protected final NodeClient delegate;

  /**
   * Wraps {@code delegate}.
   *
   * @param delegate the client every call not overridden goes to
   */
  protected ForwardingNodeClient(NodeClient delegate) {
    this.delegate = delegate;
  }

  @Override
  public CompletableFuture<NodeReply> acquire(
      byte[] key, byte[] legacyFenceKey, byte[] token, long ttlMillis, long guardMillis) {
    return delegate.acquire(key, legacyFenceKey, token, ttlMillis, guardMillis);
  }

  @Override
  public CompletableFuture<NodeReply> acquireInTurn(
      byte[] key, byte[] token, long ttlMillis, long guardMillis, byte[] waiter, long staleMillis) {
    return delegate.acquireInTurn(key, token, ttlMillis, guardMillis, waiter, staleMillis);
  }

  @Override
  public CompletableFuture<NodeReply> leaveQueue(byte[] key, byte[] waiter) {
    return delegate.leaveQueue(key, waiter);
  }

  @Override
  public CompletableFuture<NodeReply> fence(byte[] key, byte[] token, long fence) {
    return delegate.fence(key, token, fence);
  }

  @Override
  public CompletableFuture<NodeReply> release(byte[] key, byte[] token) {
    return delegate.release(key, token);
  }

  @Override
  public CompletableFuture<NodeReply> releaseAtGate(byte[] key, byte[] token) {
    return delegate.releaseAtGate(key, token);
  }

  @Override
  public CompletableFuture<NodeReply> releaseQuietly(byte[] key, byte[] token) {
    return delegate.releaseQuietly(key, token);
  }

  @Override
  public CompletableFuture<NodeReply> releaseAtNext(byte[] key, byte[] token) {
    return delegate.releaseAtNext(key, token);
  }

  @Override
  public CompletableFuture<NodeReply> noticeWaiters(byte[] key, byte[] token) {
    return delegate.noticeWaiters(key, token);
  }

  @Override
  public CompletableFuture<NodeReply> extend(byte[] key, byte[] token, long ttlMillis) {
    return delegate.extend(key, token, ttlMillis);
  }

  @Override
  public CompletableFuture<NodeReply> shorten(byte[] key, byte[] token, long ttlMillis) {
    return delegate.shorten(key, token, ttlMillis);
  }

  @Override
  public CompletableFuture<Object> query(NodeCommand.Verb verb, String... args) {
    return delegate.query(verb, args);
  }

  @Override
  public CompletableFuture<NodeReply> admit() {
    return delegate.admit();
  }

  @Override
  public boolean permits() {
    return delegate.permits();
  }

  @Override
  public boolean closed() {
    return delegate.closed();
  }

  @Override
  public NodeUnavailableException skipped() {
    return delegate.skipped();
  }

  @Override
  public NodeClient probe() {
    return delegate.probe();
  }

  @Override
  public void watch(Watcher watcher) {
    delegate.watch(watcher);
  }

  @Override
  public void awaitFirstConnect(long deadlineNanos) {
    delegate.awaitFirstConnect(deadlineNanos);
  }

  @Override
  public void awaitDrained(long deadlineNanos) {
    delegate.awaitDrained(deadlineNanos);
  }

  @Override
  public boolean awaitTermination(long deadlineNanos) {
    return delegate.awaitTermination(deadlineNanos);
  }

  @Override
  public void close() {
    delegate.close();
  }
}
