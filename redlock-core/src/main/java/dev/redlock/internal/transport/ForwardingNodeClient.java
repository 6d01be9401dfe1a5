package dev.redlock.internal.transport;

import java.util.concurrent.CompletableFuture;

/**
 * A master's client that hands every call to another: the base of the wrappers that add one concern
 * to a master (its circuit breaker, its fitness), each overriding only the calls that concern
 * changes ({@link #send}, switching on the command's kind, where it looks at commands).
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
  public <R> CompletableFuture<R> send(Command<R> command) {
    return delegate.send(command);
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
  public NodeUnavailableException excluded() {
    return delegate.excluded();
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
