package dev.redlock.internal.transport;

import static dev.redlock.internal.transport.NodeCommand.ascii;
import static dev.redlock.internal.transport.NodeCommand.number;

/**
 * The commands on a resource's queue of waiters at its gate master: each one call of the queue
 * script ({@code queue.lua}), which {@link NodeCommand} builds here.
 */
final class QueueCommands {

  private QueueCommands() {}

  /**
   * A waiter's acquire at its resource's gate master, in turn: as {@code NodeCommand.acquire} with
   * fencing and the restart guard's reads, but the key is set only if {@code waiter} is the first
   * still queued there; any other waiter is queued and refused as if the key were held. Answers as
   * the key-set acquire does, so it is read as an {@link NodeCommand.Kind#ACQUIRE_SET}.
   */
  static NodeCommand acquireInTurn(Command.AcquireInTurn c) {
    return NodeCommand.queueScript(
        NodeCommand.Kind.ACQUIRE_SET,
        c.guardMillis(),
        keys(c.key()),
        ascii("acquire"),
        c.token(),
        number(c.ttlMillis()),
        c.waiter(),
        number(c.staleMillis()));
  }

  /**
   * Queues a set's waiter at the resource's gate master without setting the key: 1 if it is first
   * there, else 0.
   */
  static NodeCommand join(Command.Join c) {
    return call("join", c.key(), c.waiter(), c.staleMillis());
  }

  /** Takes a waiter out of the queue at the resource's gate master: it stopped waiting. */
  static NodeCommand leave(Command.Leave c) {
    return call("leave", c.key(), c.waiter(), 0);
  }

  private static NodeCommand call(String op, byte[] key, byte[] waiter, long staleMillis) {
    return NodeCommand.queueScript(
        NodeCommand.Kind.SCRIPT,
        0,
        keys(key),
        ascii(op),
        new byte[0],
        number(0),
        waiter,
        number(staleMillis));
  }

  private static byte[][] keys(byte[] key) {
    return new byte[][] {
      key,
      LuaScript.FENCE_COUNTER,
      LuaScript.DATASET_MARKER,
      LuaScript.ADMITTED,
      LuaScript.prefixed(LuaScript.QUEUE_PREFIX, key),
      LuaScript.prefixed(LuaScript.QUEUE_SEEN_PREFIX, key)
    };
  }
}
