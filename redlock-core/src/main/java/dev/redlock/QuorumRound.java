package dev.redlock;

import dev.redlock.NodeOutcome.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * One parallel round of a command on every master, and the vote count.
 *
 * <p>{@link #start} sends the command to all N masters before waiting on any of them (each client
 * only queues or writes it), then {@link #await} parks the calling thread until the round is
 * decided or its deadline passes. In {@link Mode#QUORUM} the round is decided as soon as a majority
 * granted or a majority can no longer be reached; in {@link Mode#ALL} only when every master
 * answered. Answers that arrive after the decision are ignored here; whatever they changed on a
 * master is undone by the commands queued behind them.
 */
final class QuorumRound {

  enum Mode {
    QUORUM,
    ALL
  }

  private final List<String> names;
  private final int quorum;
  private final Mode mode;
  private final Ticker ticker;
  private final long startNanos;
  private final Thread waiter;

  private final CompletableFuture<?>[] futures;
  private final NodeReply[] replies;
  private final Status[] statuses;
  private final long[] answeredAt;
  private final String[] details;
  private int granted; // guarded by this
  private int refused; // guarded by this: any answer other than GRANTED
  private int failed; // guarded by this: FAILED only
  private volatile boolean decided;

  private QuorumRound(List<String> names, int quorum, Mode mode, Ticker ticker) {
    this.names = names;
    this.quorum = quorum;
    this.mode = mode;
    this.ticker = ticker;
    this.waiter = Thread.currentThread();
    this.futures = new CompletableFuture<?>[names.size()];
    this.replies = new NodeReply[names.size()];
    this.statuses = new Status[names.size()];
    this.answeredAt = new long[names.size()];
    this.details = new String[names.size()];
    this.startNanos = ticker.read();
  }

  /**
   * Starts a round: reads the ticker, then issues {@code command} to every node in order. Must be
   * awaited by the calling thread.
   */
  static QuorumRound start(
      List<String> names,
      int quorum,
      Mode mode,
      Ticker ticker,
      IntFunction<CompletableFuture<NodeReply>> command) {
    QuorumRound round = new QuorumRound(names, quorum, mode, ticker);
    for (int i = 0; i < names.size(); i++) {
      int node = i;
      CompletableFuture<NodeReply> reply;
      try {
        reply = command.apply(i);
      } catch (RuntimeException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      round.futures[i] = reply;
      reply.whenComplete((answer, error) -> round.record(node, answer, error));
    }
    return round;
  }

  long startNanos() {
    return startNanos;
  }

  private void record(int node, NodeReply answer, Throwable error) {
    long now = ticker.read();
    boolean wake;
    synchronized (this) {
      if (decided || statuses[node] != null) {
        return;
      }
      if (error != null) {
        statuses[node] = Status.FAILED;
        details[node] = describe(error);
        failed++;
      } else {
        statuses[node] = answer.status();
        replies[node] = answer;
        details[node] = "";
      }
      answeredAt[node] = now - startNanos;
      if (statuses[node] == Status.GRANTED) {
        granted++;
      } else {
        refused++;
      }
      wake = isDecided();
      if (wake) {
        decided = true;
      }
    }
    if (wake) {
      LockSupport.unpark(waiter);
    }
  }

  private boolean isDecided() {
    int size = statuses.length;
    if (mode == Mode.ALL) {
      return granted + refused == size;
    }
    return granted >= quorum || refused > size - quorum;
  }

  /**
   * Parks until the round is decided or {@code deadlineNanos} passes, then freezes the count. The
   * wait is not interruptible (it is bounded by the node timeout); an interrupt is kept pending for
   * the caller.
   */
  Tally await(long deadlineNanos) {
    boolean interrupted = false;
    while (!decided) {
      long left = deadlineNanos - ticker.read();
      if (left <= 0) {
        break;
      }
      LockSupport.parkNanos(this, left);
      if (Thread.interrupted()) {
        interrupted = true;
      }
    }
    long now = ticker.read();
    Tally tally;
    synchronized (this) {
      decided = true;
      boolean late = now - deadlineNanos >= 0;
      List<NodeOutcome> outcomes = new ArrayList<>(statuses.length);
      int timedOut = 0;
      for (int i = 0; i < statuses.length; i++) {
        Status status = statuses[i];
        long at = answeredAt[i];
        String detail = details[i];
        if (status == null) {
          status = late ? Status.TIMED_OUT : Status.PENDING;
          at = now - startNanos;
          detail = "";
          if (late) {
            timedOut++;
          }
        }
        outcomes.add(new NodeOutcome(names.get(i), status, Duration.ofNanos(at), detail));
      }
      tally =
          new Tally(
              granted,
              failed + timedOut,
              now - startNanos,
              List.copyOf(outcomes),
              java.util.Arrays.copyOf(replies, replies.length));
    }
    if (tally.unreachable() > 0) {
      // Let whoever watches a master's replies (its circuit breaker) see the timeout now; the
      // command itself stays queued, and its late reply is still read.
      for (int i = 0; i < futures.length; i++) {
        if (tally.outcomes().get(i).status() == Status.TIMED_OUT) {
          futures[i].completeExceptionally(new NodeUnavailableException("timed out"));
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return tally;
  }

  private static String describe(Throwable error) {
    Throwable cause =
        error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    String message = cause.getMessage();
    if (cause instanceof NodeUnavailableException && message != null) {
      return message;
    }
    return cause.getClass().getSimpleName() + (message == null ? "" : ": " + message);
  }

  /**
   * The frozen result of a round.
   *
   * @param granted how many masters granted
   * @param unreachable how many errored or timed out
   * @param elapsedNanos from before the first request to the decision
   * @param outcomes one per master, in configuration order
   * @param replies one per master, null where it had not answered (or failed) when decided
   */
  record Tally(
      int granted,
      int unreachable,
      long elapsedNanos,
      List<NodeOutcome> outcomes,
      NodeReply[] replies) {}
}
