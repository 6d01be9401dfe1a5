package dev.redlock.internal.transport;

import java.util.concurrent.CompletableFuture;

/**
 * The commands of {@link NodeClient}, sent the same way by both transports: each {@link Command} is
 * encoded as a {@link NodeCommand} handed to the transport's {@link CommandPipeline}, and its
 * future is the encoded command's own. The waits and the close are the pipeline's too; a transport
 * says how its links open and read.
 */
abstract class CommandNodeClient implements NodeClient {

  /**
   * Has the master's dataset-birth marker stored, dated by the master's clock, where an acquire
   * found none; the admit script stores it only if it is still missing.
   */
  private final Runnable storeBirth = () -> submit(NodeCommand.markBirth());

  /** This master's pipeline. */
  abstract CommandPipeline<?> pipeline();

  /** Queues or writes {@code command} on this master's connection. */
  final void submit(NodeCommand command) {
    pipeline().submit(command);
  }

  @Override
  public final void watch(Watcher watcher) {
    pipeline().watch(watcher);
  }

  @Override
  public final void awaitFirstConnect(long deadlineNanos) {
    pipeline().awaitFirstAttempt(deadlineNanos);
  }

  @Override
  public final void awaitDrained(long deadlineNanos) {
    pipeline().awaitDrained(deadlineNanos);
  }

  /** Fails pending commands and closes the connection (an I/O thread of its own then ends). */
  @Override
  public final void close() {
    pipeline().close();
  }

  @Override
  public final <R> CompletableFuture<R> send(Command<R> command) {
    NodeCommand encoded = NodeCommand.of(command);
    if (command.kind() == Command.Kind.ACQUIRE || command.kind() == Command.Kind.ACQUIRE_IN_TURN) {
      encoded.onNewDataset = storeBirth;
    }
    submit(encoded);
    return encoded.replyTo(command);
  }
}
