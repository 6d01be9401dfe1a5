package dev.redlock.internal.transport;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A master's client that tells an observer of each command the decorators above it let through, as
 * it is sent (for a checker: the command, at the time the library decided to send it, before the
 * network's delay).
 */
public final class ObservedNodeClient extends ForwardingNodeClient {

  private final Consumer<Command<?>> observer;

  /**
   * Wraps {@code delegate}.
   *
   * @param delegate the client the commands go to
   * @param observer told of each command as it is sent
   */
  public ObservedNodeClient(NodeClient delegate, Consumer<Command<?>> observer) {
    super(delegate);
    this.observer = observer;
  }

  /**
   * The round's token of an acquire (a plain one, or a waiter's in turn), or null for any other
   * command.
   *
   * @param command a command sent
   * @return the token, or null
   */
  public static String acquireToken(Command<?> command) {
    byte[] token = null;
    if (command instanceof Command.Acquire acquire) {
      token = acquire.token();
    } else if (command instanceof Command.AcquireInTurn inTurn) {
      token = inTurn.token();
    }
    return token == null ? null : new String(token, StandardCharsets.ISO_8859_1);
  }

  @Override
  public <R> CompletableFuture<R> send(Command<R> command) {
    observer.accept(command);
    return delegate.send(command);
  }
}
