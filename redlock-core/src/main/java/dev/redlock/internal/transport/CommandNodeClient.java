package dev.redlock.internal.transport;

import java.util.concurrent.CompletableFuture;

/**
 * The commands of {@link NodeClient}, built once for both transports: each is a {@link NodeCommand}
 * handed to the transport's {@link CommandPipeline}, and its future is the command's own. The waits
 * and the close are the pipeline's too; a transport says how its links open and read.
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
  public final CompletableFuture<NodeReply> acquire(
      byte[] key, byte[] legacyFenceKey, byte[] token, long ttlMillis, long guardMillis) {
    NodeCommand command = NodeCommand.acquire(key, legacyFenceKey, token, ttlMillis, guardMillis);
    command.onNewDataset = storeBirth;
    return reply(command);
  }

  @Override
  public final CompletableFuture<NodeReply> acquireInTurn(
      byte[] key, byte[] token, long ttlMillis, long guardMillis, byte[] waiter, long staleMillis) {
    NodeCommand command =
        NodeCommand.acquireInTurn(key, token, ttlMillis, guardMillis, waiter, staleMillis);
    command.onNewDataset = storeBirth;
    return reply(command);
  }

  @Override
  public final CompletableFuture<NodeReply> leaveQueue(byte[] key, byte[] waiter) {
    return reply(NodeCommand.leaveQueue(key, waiter));
  }

  @Override
  public final CompletableFuture<NodeReply> fence(byte[] key, byte[] token, long fence) {
    return reply(NodeCommand.fence(key, token, fence));
  }

  @Override
  public final CompletableFuture<NodeReply> release(byte[] key, byte[] token) {
    return reply(NodeCommand.release(key, token));
  }

  @Override
  public final CompletableFuture<NodeReply> releaseAtGate(byte[] key, byte[] token) {
    return reply(NodeCommand.releaseAtGate(key, token));
  }

  @Override
  public final CompletableFuture<NodeReply> releaseQuietly(byte[] key, byte[] token) {
    return reply(NodeCommand.releaseQuietly(key, token));
  }

  @Override
  public final CompletableFuture<NodeReply> releaseAtNext(byte[] key, byte[] token) {
    return reply(NodeCommand.releaseAtNext(key, token));
  }

  @Override
  public final CompletableFuture<NodeReply> noticeWaiters(byte[] key, byte[] token) {
    return reply(NodeCommand.noticeWaiters(key, token));
  }

  @Override
  public final CompletableFuture<NodeReply> extend(byte[] key, byte[] token, long ttlMillis) {
    return reply(NodeCommand.extend(key, token, ttlMillis));
  }

  @Override
  public final CompletableFuture<NodeReply> shorten(byte[] key, byte[] token, long ttlMillis) {
    return reply(NodeCommand.shorten(key, token, ttlMillis));
  }

  @Override
  public final CompletableFuture<Object> query(NodeCommand.Verb verb, String... args) {
    NodeCommand command = NodeCommand.query(verb, args);
    submit(command);
    return command.value;
  }

  @Override
  public final CompletableFuture<NodeReply> admit() {
    return reply(NodeCommand.admit());
  }

  private CompletableFuture<NodeReply> reply(NodeCommand command) {
    submit(command);
    return command.reply;
  }
}
