package dev.redlock.internal.transport;

import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A master's client that hears which releases some waiting client was told of (the release script's
 * {@link NodeReply#waitersTold()}), so that this RedLock does not take the lock straight back ahead
 * of them: the lease layer's hand-off.
 */
public final class HandOffNodeClient extends ForwardingNodeClient {

  private final Consumer<byte[]> releasedToWaiters;

  /**
   * Wraps {@code delegate}.
   *
   * @param delegate the master's client
   * @param releasedToWaiters called with the key, on the thread that completed the release (often
   *     the one reading every master's replies): must be short and must not block
   */
  public HandOffNodeClient(NodeClient delegate, Consumer<byte[]> releasedToWaiters) {
    super(delegate);
    this.releasedToWaiters = releasedToWaiters;
  }

  /**
   * Every release but the quiet one is heard: the plain release and the gate's by the notice they
   * send, the release at the master after the gate (quiet, but it says whether clients wait on the
   * key there, which is as good a sign of waiters as a notice heard: the gate's notice may find
   * their subscriptions there not yet confirmed).
   */
  @Override
  @SuppressWarnings("unchecked") // a Release is a Command<NodeReply>
  public <R> CompletableFuture<R> send(Command<R> command) {
    return switch (command.kind()) {
      case RELEASE -> {
        Command.Release release = (Command.Release) command;
        yield release.flavour() == Command.Flavour.QUIET
            ? delegate.send(command)
            : (CompletableFuture<R>) heard(release.key().bytes(), delegate.send(release));
      }
      case ACQUIRE, ACQUIRE_IN_TURN, FENCE, EXTEND, SHORTEN, NOTICE, JOIN, LEAVE, ADMIT, QUERY ->
          delegate.send(command);
    };
  }

  /** Heard before the caller's callbacks run, so a release that returned has been heard. */
  private CompletableFuture<NodeReply> heard(byte[] key, CompletableFuture<NodeReply> release) {
    CompletableFuture<NodeReply> heard = TimedReply.following(release); // the breaker times it
    release.whenComplete(
        (answer, error) -> {
          if (error != null) {
            heard.completeExceptionally(error);
            return;
          }
          if (answer.waitersKnown()) {
            releasedToWaiters.accept(key);
          }
          heard.complete(answer);
        });
    return heard;
  }
}
