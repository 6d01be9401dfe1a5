package dev.redlock.internal.lease;

import dev.redlock.internal.lease.QuorumRound.Mode;
import dev.redlock.internal.lease.QuorumRound.Tally;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.RoundLoop;
import dev.redlock.internal.transport.SelectorLoop;
import dev.redlock.internal.transport.Ticker;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;
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
 *
 * <p>A round may be <b>gated</b> ({@link #gateOf}): asked of one master first, the same one for a
 * key in every client that names the masters alike, and of the others only once it granted. A
 * waiter's retries are: when a lock is handed over, the woken waiters race at one master, one wins
 * there and the others are refused at once, instead of each taking some of the masters and no one a
 * majority (a split round, which all must undo and retry). Safety does not depend on it: a lease
 * still needs a majority of SET NX, timed from before the gate was asked. A gate whose breaker is
 * open is not used, and one that does not answer within the gate wait is passed by.
 */
public final class Masters {

  private static final Logger log = LoggerFactory.getLogger(Masters.class);

  /**
   * One master's part of a round; as a {@link QuorumRound.Verdict}, what each answer counts as (the
   * restart guard's vote for an acquire) and which masters are not asked: every one asked and every
   * answer as it is, unless the call says otherwise.
   */
  @FunctionalInterface
  interface Call extends QuorumRound.Verdict {
    CompletableFuture<NodeReply> send(NodeClient node, int index);
  }

  private final List<NodeClient> nodes;
  private final List<String> names;
  private final List<String> datacenters;
  private final int quorum;
  private final long[] timeoutNanos;
  private final long longestTimeoutNanos;
  private final Ticker ticker;
  private final RoundLoop io; // null: no plaintext master on the selector transport, no simulation
  private final int[] byName; // the masters' indexes, in the order of their names
  private final int[] nextByName; // for each master's index, the next master's by name

  /**
   * The masters, in configuration order.
   *
   * @param nodes each master's client
   * @param names each master's {@code host:port}
   * @param datacenters each master's datacenter label, or empty
   * @param timeoutNanos each master's node timeout
   * @param ticker the clock of the rounds
   * @param io the selector the plaintext masters share (or a simulation's loop), or null if none
   */
  public Masters(
      List<NodeClient> nodes,
      List<String> names,
      List<String> datacenters,
      long[] timeoutNanos,
      Ticker ticker,
      RoundLoop io) {
    this.nodes = List.copyOf(nodes);
    this.names = List.copyOf(names);
    this.datacenters = List.copyOf(datacenters);
    this.quorum = nodes.size() / 2 + 1;
    this.timeoutNanos = timeoutNanos.clone();
    this.longestTimeoutNanos = Arrays.stream(timeoutNanos).max().orElse(0);
    this.ticker = ticker;
    this.io = io;
    this.byName =
        IntStream.range(0, this.names.size())
            .boxed()
            .sorted(Comparator.comparing(this.names::get))
            .mapToInt(Integer::intValue)
            .toArray();
    this.nextByName = new int[byName.length];
    for (int i = 0; i < byName.length; i++) {
      nextByName[byName[i]] = byName[(i + 1) % byName.length];
    }
  }

  /**
   * The master a waiter's round on {@code key} asks first, or -1 for none: chosen by the key's hash
   * among the masters in the order of their names (so clients that configure them in another order
   * agree); none with fewer than three masters, or unless that master's breaker is closed.
   *
   * @param key the resource's key
   * @return the gate's index, or -1
   */
  int gateOf(byte[] key) {
    int n = nodes.size();
    if (n < 3) {
      return -1;
    }
    int gate = gateIndex(key);
    return nodes.get(gate).closed() ? gate : -1; // asks no permission: a choice, not a call
  }

  /** The gate of {@code key} by its hash alone, whatever its breaker; for three masters or more. */
  private int gateIndex(byte[] key) {
    int h = Arrays.hashCode(key);
    h ^= h >>> 16; // the high bits too: keys that differ only at the end
    h *= 0x45d9f3b;
    h ^= h >>> 16;
    return byName[Math.floorMod(h, nodes.size())];
  }

  /**
   * The client of {@code key}'s gate master, whatever its breaker, or null with fewer than three
   * masters: the release sent to it names the first waiter queued there ({@link
   * NodeClient#releaseAtGate}); elsewhere the release does not read the queue.
   *
   * @param key the resource's key
   * @return the gate's client, or null
   */
  NodeClient gateClient(byte[] key) {
    return nodes.size() < 3 ? null : nodes.get(gateIndex(key));
  }

  /**
   * The client of the master after {@code key}'s gate by name, whatever its breaker, or null with
   * fewer than three masters: the other master its waiters hear ({@link #heardFor}). A release
   * there tells them only if the gate did not take the release (see the lease layer's Leases).
   *
   * @param key the resource's key
   * @return the next master's client, or null
   */
  NodeClient fallbackClient(byte[] key) {
    return nodes.size() < 3 ? null : nodes.get(nextByName[gateIndex(key)]);
  }

  /**
   * How long after the next master answered a release of {@code key} its gate may still answer
   * before the gate counts as silent and the next master tells the waiters: half the gate's node
   * timeout. Longer than a gated round waits for its gate (a few rounds' time): a gate counted
   * silent too soon costs a notice that wakes every waiter, one counted too late only a delay in
   * the rare case that it is silent.
   *
   * @param key the resource's key; for three masters or more
   * @return nanoseconds
   */
  long fallbackDelayNanos(byte[] key) {
    return timeoutNanos[gateIndex(key)] / 2;
  }

  /**
   * The masters whose wake-up notices the waiters of {@code key} hear: its gate, where the release
   * names the waiter whose turn it is, and the next master in the order of names, whose plain
   * notices still wake them when the gate falls silent; every master if the key has no gate.
   *
   * @param key the resource's key
   * @return the masters' indexes
   */
  int[] heardFor(byte[] key) {
    int gate = gateOf(key);
    if (gate < 0) {
      return IntStream.range(0, nodes.size()).toArray();
    }
    return new int[] {gate, nextByName[gate]};
  }

  /**
   * Queues {@code waiter}, a set's, among {@code key}'s waiters at master {@code gate} without
   * setting the key ({@link Command.Join}), without waiting for the answer (a join that is lost is
   * made again by the waiter's next round).
   */
  void join(int gate, byte[] key, byte[] waiter, long staleMillis) {
    toQueue(gate, new Command.Join(key, waiter, staleMillis));
  }

  /**
   * Takes {@code waiter} out of the queue of {@code key}'s waiters at master {@code gate}, without
   * waiting for the answer (a master that does not answer drops it when it goes stale).
   */
  void leave(int gate, byte[] key, byte[] waiter) {
    toQueue(gate, new Command.Leave(key, waiter));
  }

  /** Sends {@code command} to the queue at master {@code gate}; its answer is not waited for. */
  private void toQueue(int gate, Command<?> command) {
    try {
      nodes.get(gate).send(command);
    } catch (RuntimeException e) {
      log.debug(
          "{} of a queue at {} was not sent: {}", command.kind(), names.get(gate), e.toString());
    }
  }

  /**
   * How long a gated round waits for its gate before asking the others anyway: {@code roundNanos}
   * (a typical round) times four, at least 2 ms and at most half the gate's node timeout.
   */
  long gateWaitNanos(int gate, long roundNanos) {
    long least = TimeUnit.MILLISECONDS.toNanos(2);
    return Math.min(timeoutNanos[gate] / 2, Math.max(least, 4 * roundNanos));
  }

  List<NodeClient> nodes() {
    return nodes;
  }

  /** The selector the plaintext masters share, or null if none is on the selector transport. */
  SelectorLoop io() {
    return io instanceof SelectorLoop selector ? selector : null;
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
   * A round as {@link #vote(Call)}, gated by master {@code gate} if it is at least 0: the others
   * are asked once it granted or could not vote, or after {@code gateWaitNanos} without its answer;
   * never if it refused.
   */
  Tally vote(Call call, int gate, long gateWaitNanos) {
    if (gate < 0) {
      return vote(call);
    }
    enterRound();
    try {
      QuorumRound round = start(call, gate);
      long deadline = round.startNanos() + longestTimeoutNanos;
      if (!round.decided()) {
        long gateDeadline = round.startNanos() + Math.min(gateWaitNanos, longestTimeoutNanos);
        if (io == null) {
          round.awaitDecision(gateDeadline);
        } else {
          io.await(round, gateDeadline);
        }
        round.openGate(); // nothing if it opened or the round is decided
      }
      return round.await(io, deadline);
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

  /**
   * A gated round, as {@link #vote(Call, int, long)}, whose result is completed on {@code timer}'s
   * thread; the gate wait is a task on the timer, which asks the others only if the acquisition is
   * still {@code wanted} (not cancelled).
   */
  CompletableFuture<Tally> voteAsync(
      Call call,
      ScheduledExecutorService timer,
      int gate,
      long gateWaitNanos,
      BooleanSupplier wanted) {
    if (gate < 0) {
      return voteAsync(call, timer);
    }
    QuorumRound round = start(call, gate, wanted);
    if (!round.decided()) {
      try {
        timer.schedule(
            () -> {
              if (wanted.getAsBoolean()) {
                round.openGate(); // else the round ends at its deadline, with no more asked
              }
            },
            Math.min(gateWaitNanos, longestTimeoutNanos),
            TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException closing) {
        round.openGate(); // closing: no timer, so no wait
      }
    }
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
    return start(call, -1);
  }

  private QuorumRound start(Call call, int gate) {
    return start(call, gate, () -> true);
  }

  private QuorumRound start(Call call, int gate, BooleanSupplier wanted) {
    if (gate < 0) {
      NodeClient[] chosen = choose(-1, false, call);
      return QuorumRound.start(
          names,
          timeoutNanos,
          quorum,
          Mode.QUORUM,
          ticker,
          i -> send(call, chosen, i),
          -1,
          () -> true,
          call);
    }
    // A breaker's permission is asked only for a call that is sent: the gate's now, the others'
    // when the gate opens (a half-open breaker counts its permissions, and one asked for a call
    // never sent would keep it half-open). The round sends behind the gate under its lock, once.
    NodeClient[][] others = new NodeClient[1][];
    boolean[] gateAsked = new boolean[1]; // the round asks the gate first, under its lock
    return QuorumRound.start(
        names,
        timeoutNanos,
        quorum,
        Mode.QUORUM,
        ticker,
        i -> {
          if (i == gate) {
            NodeClient node = nodes.get(gate);
            gateAsked[0] = node.permits();
            return gateAsked[0]
                ? call.send(node, gate)
                : CompletableFuture.failedFuture(node.skipped());
          }
          if (others[0] == null) {
            others[0] = choose(gate, gateAsked[0], call);
          }
          return send(call, others[0], i);
        },
        gate,
        wanted,
        call);
  }

  private CompletableFuture<NodeReply> send(Call call, NodeClient[] chosen, int i) {
    return chosen[i] != null
        ? call.send(chosen[i], i)
        : CompletableFuture.failedFuture(nodes.get(i).skipped());
  }

  /**
   * The client to call on each master but {@code gate} (-1: every master), or null to skip it: its
   * own client where its breaker lets the call through, its probe where not but the round needs it
   * for a quorum. The gate counts as let through only if it was asked ({@code gateAsked}): one
   * skipped (its breaker open, or unfit) leaves the others to make the quorum alone. A master the
   * call does not ask ({@link QuorumRound.Verdict#known}) is neither chosen nor asked permission.
   */
  private NodeClient[] choose(int gate, boolean gateAsked, Call call) {
    int n = nodes.size();
    NodeClient[] chosen = new NodeClient[n];
    int permitted = gateAsked ? 1 : 0;
    for (int i = 0; i < n; i++) {
      if (i != gate && call.known(i) == null && nodes.get(i).permits()) {
        chosen[i] = nodes.get(i);
        permitted++;
      }
    }
    if (permitted < quorum) {
      for (int i = 0; i < n; i++) {
        if (i != gate && chosen[i] == null && call.known(i) == null) {
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
