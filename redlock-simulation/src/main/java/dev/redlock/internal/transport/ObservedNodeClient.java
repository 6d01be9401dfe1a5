package dev.redlock.internal.transport;

import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A master's client that tells an observer of each command the decorators above it let through, as
 * it is sent (for a checker: the command, at the time the library decided to send it, before the
 * network's delay).
 */
public final class ObservedNodeClient extends ForwardingNodeClient {

  private final Consumer<Command.Kind> observer;

  /**
   * Wraps {@code delegate}.
   *
   * @param delegate the client the commands go to
   * @param observer told of each command's kind as it is sent
   */
  public ObservedNodeClient(NodeClient delegate, Consumer<Command.Kind> observer) {
    super(delegate);
    this.observer = observer;
  }

  @Override
  public <R> CompletableFuture<R> send(Command<R> command) {
    observer.accept(command.kind());
    return delegate.send(command);
  }
}
