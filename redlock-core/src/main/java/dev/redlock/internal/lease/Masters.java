package dev.redlock.internal.lease;

import dev.redlock.internal.lease.QuorumRound.Mode;
import dev.redlock.internal.lease.QuorumRound.Tally;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.SelectorLoop;
import dev.redlock.internal.transport.Ticker;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The N masters as one: runs a command on all of them in one parallel round, bounded by the node
 * timeout, and counts the answers.
 *
 * <p>In a round that needs a quorum, a master whose circuit breaker is open is skipped (a failed
 * vote, at no cost) only while the masters with closed breakers could still make a quorum without
 * it. When they cannot, every open one is tried too, as a probe whose answer closes its breaker:
 * otherwise a majority that healed would wait out its breakers' open time with no lease possible.
 */
public final class Masters {

  private static final Logger log = LoggerFactory.getLogger(Masters.class);

  /** One master's part of a round. */
  @FunctionalInterface
  interface Call {
    CompletableFuture<NodeReply> send(NodeClient node, int index);
  }

  private final List<NodeClient> nodes;
  private final List<String> names;
  private final List<String> datacenters;
  private final int quorum;
  private final long[] timeoutNanos;
  private final long longestTimeoutNanos;
  private final Ticker ticker;
  private final SelectorLoop io; // null: no plaintext master on the selector transport

  /**
   * The masters, in configuration order.
   *
   * @param nodes each master's client
   * @param names each master's {@code host:port}
   * @param datacenters each master's datacenter label, or empty
   * @param timeoutNanos each master's node timeout
   * @param ticker the clock of the rounds
   * @param io the selector the plaintext masters share, or null if none is on that transport
   */
  public Masters(
      List<NodeClient> nodes,
      List<String> names,
      List<String> datacenters,
      long[] timeoutNanos,
      Ticker ticker,
      SelectorLoop io) {
    this.nodes = List.copyOf(nodes);
    this.names = List.copyOf(names);
    this.datacenters = List.copyOf(datacenters);
    this.quorum = nodes.size() / 2 + 1;
    this.timeoutNanos = timeoutNanos.clone();
    this.longestTimeoutNanos = java.util.Arrays.stream(timeoutNanos).max().orElse(0);
    this.ticker = ticker;
    this.io = io;
  }

  List<NodeClient> nodes() {
    return nodes;
  }

  /** The selector the plaintext masters share, or null if none is on the selector transport. */
  SelectorLoop io() {
    return io;
  }

  /** Each master's datacenter label, or empty. */
  List<String> datacenters() {
    return datacenters;
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

  /**
   * Returns the longest node timeout of any master: a round never waits longer.
   *
   * @return nanoseconds
   */
  public long nodeTimeoutNanos() {
    return longestTimeoutNanos;
  }

  /** A round decided at a majority of grants, or as soon as a majority can no longer grant. */
  Tally vote(Call call) {
    enterRound();
    try {
      return await(start(call));
    } finally {
      leaveRound();
    }
  }

  /**
   * A round, as {@link #vote(Call)}, whose result is completed on {@code timer}'s thread. No caller
   * waits for it, so it does not count as one inside a round ({@link SelectorLoop#busy}).
   */
  CompletableFuture<Tally> voteAsync(Call call, ScheduledExecutorService timer) {
    QuorumRound round = start(call);
    return round.whenDecided(timer, round.startNanos() + longestTimeoutNanos);
  }

  /** A round decided when every master answered, or at the node timeout. */
  Tally all(Call call) {
    return round(Mode.ALL, call);
  }

  /**
   * A round decided when every master answered, or at {@code deadlineNanos}: for an operator's call
   * that should wait for masters still connecting.
   */
  Tally all(Call call, long deadlineNanos) {
    enterRound();
    try {
      QuorumRound round =
          QuorumRound.start(
              names, timeoutNanos, quorum, Mode.ALL, ticker, i -> call.send(nodes.get(i), i));
      return round.await(io, deadlineNanos);
    } finally {
      leaveRound();
    }
  }

  /**
   * A release round: decided once a majority answered, or when every master answered, or at the
   * node timeout. The others are sent the same command and answer later, unobserved.
   */
  Tally freed(Call call) {
    return round(Mode.FREED, call);
  }

  /**
   * A release round, as {@link #freed(Call)}, whose result is completed on {@code timer}'s thread:
   * for a caller that must not block.
   */
  CompletableFuture<Tally> freedAsync(Call call, ScheduledExecutorService timer) {
    QuorumRound round =
        QuorumRound.start(
            names, timeoutNanos, quorum, Mode.FREED, ticker, i -> call.send(nodes.get(i), i));
    return round.whenDecided(timer, round.startNanos() + longestTimeoutNanos);
  }

  private Tally round(Mode mode, Call call) {
    enterRound();
    try {
      QuorumRound round =
          QuorumRound.start(
              names, timeoutNanos, quorum, mode, ticker, i -> call.send(nodes.get(i), i));
      return await(round);
    } finally {
      leaveRound();
    }
  }

  /**
   * Counts the calling thread as a caller inside a round on the selector, from before it sends its
   * commands until it has the answer: a link holds bytes back for replies due only while at least
   * two callers are ({@link SelectorLoop#busy}), never for a caller alone.
   */
  private void enterRound() {
    if (io != null) {
      io.enterRound();
    }
  }

  private void leaveRound() {
    if (io != null) {
      io.leaveRound();
    }
  }

  /**
   * Waits for {@code round} for at most the longest node timeout: on the selector, leading it when
   * no one else does, if any master is on the selector transport; otherwise parked.
   */
  private Tally await(QuorumRound round) {
    return round.await(io, round.startNanos() + longestTimeoutNanos);
  }

  private QuorumRound start(Call call) {
    NodeClient[] chosen = choose();
    return QuorumRound.start(
        names,
        timeoutNanos,
        quorum,
        Mode.QUORUM,
        ticker,
        i ->
            chosen[i] != null
                ? call.send(chosen[i], i)
                : CompletableFuture.failedFuture(nodes.get(i).skipped()));
  }

  /**
   * The client to call on each master, or null to skip it: its own client where its breaker lets
   * the call through, its probe where not but the round needs it for a quorum.
   */
  private NodeClient[] choose() {
    int n = nodes.size();
    NodeClient[] chosen = new NodeClient[n];
    int permitted = 0;
    for (int i = 0; i < n; i++) {
      if (nodes.get(i).permits()) {
        chosen[i] = nodes.get(i);
        permitted++;
      }
    }
    if (permitted < quorum) {
      for (int i = 0; i < n; i++) {
        if (chosen[i] == null) {
          chosen[i] = nodes.get(i).probe();
        }
      }
    }
    return chosen;
  }

  /**
   * Waits until each client's first connection attempt has finished, or the deadline.
   *
   * @param deadlineNanos when to stop waiting, on the ticker
   */
  public void awaitFirstConnect(long deadlineNanos) {
    for (NodeClient node : nodes) {
      node.awaitFirstConnect(deadlineNanos);
    }
  }

  /**
   * Closes every client, then stops the selector thread they share, if any, and waits, until the
   * deadline, for every I/O thread.
   */
  void close(long deadlineNanos) {
    // Commands already sent (the releases a round decided without) get their answers first, for
    // at most the node timeout: closing a socket can drop what the master has not read yet.
    long drainedBy = Math.min(deadlineNanos, ticker.read() + longestTimeoutNanos);
    for (NodeClient node : nodes) {
      node.awaitDrained(drainedBy);
    }
    for (NodeClient node : nodes) {
      node.close();
    }
    for (NodeClient node : nodes) {
      if (!node.awaitTermination(deadlineNanos)) {
        log.debug("a node thread did not stop in time: {}", node);
      }
    }
    if (io != null && !io.close(deadlineNanos - ticker.read())) {
      log.debug("the selector thread did not stop in time: {}", io);
    }
  }

  @Override
  public String toString() {
    return names + ", quorum " + quorum;
  }
}
