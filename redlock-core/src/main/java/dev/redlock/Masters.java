package dev.redlock;

import dev.redlock.QuorumRound.Mode;
import dev.redlock.QuorumRound.Tally;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The N masters as one: runs a command on all of them in one parallel round, bounded by the node
 * timeout, and counts the answers.
 */
final class Masters {

  private static final Logger log = LoggerFactory.getLogger(Masters.class);

  /** One master's part of a round. */
  @FunctionalInterface
  interface Call {
    CompletableFuture<NodeReply> send(NodeClient node, int index);
  }

  private final List<NodeClient> nodes;
  private final List<String> names;
  private final int quorum;
  private final long nodeTimeoutNanos;
  private final Ticker ticker;

  Masters(List<NodeClient> nodes, List<String> names, long nodeTimeoutNanos, Ticker ticker) {
    this.nodes = List.copyOf(nodes);
    this.names = List.copyOf(names);
    this.quorum = nodes.size() / 2 + 1;
    this.nodeTimeoutNanos = nodeTimeoutNanos;
    this.ticker = ticker;
  }

  int size() {
    return nodes.size();
  }

  int quorum() {
    return quorum;
  }

  List<String> names() {
    return names;
  }

  Ticker ticker() {
    return ticker;
  }

  long nodeTimeoutNanos() {
    return nodeTimeoutNanos;
  }

  /** A round decided at a majority of grants, or as soon as a majority can no longer grant. */
  Tally vote(Call call) {
    return round(Mode.QUORUM, call);
  }

  /** A round decided when every master answered, or at the node timeout. */
  Tally all(Call call) {
    return round(Mode.ALL, call);
  }

  private Tally round(Mode mode, Call call) {
    QuorumRound round =
        QuorumRound.start(names, quorum, mode, ticker, i -> call.send(nodes.get(i), i));
    return round.await(round.startNanos() + nodeTimeoutNanos);
  }

  /**
   * Sends the compare-and-delete release to every master without waiting: after a failed round, and
   * wherever a lease ends without a caller to wait for it. Each master runs it after every earlier
   * command of the lease, so it cannot overtake the acquire it undoes.
   */
  void releaseAll(byte[] key, byte[] token) {
    for (NodeClient node : nodes) {
      node.release(key, token);
    }
  }

  /** Waits until each client's first connection attempt has finished, or the deadline. */
  void awaitFirstConnect(long deadlineNanos) {
    for (NodeClient node : nodes) {
      node.awaitFirstConnect(deadlineNanos);
    }
  }

  /** Closes every client and waits, until the deadline, for their threads. */
  void close(long deadlineNanos) {
    for (NodeClient node : nodes) {
      node.close();
    }
    for (NodeClient node : nodes) {
      if (!node.awaitTermination(deadlineNanos)) {
        log.debug("a node thread did not stop in time: {}", node);
      }
    }
  }

  @Override
  public String toString() {
    return names + ", quorum " + quorum;
  }
}
