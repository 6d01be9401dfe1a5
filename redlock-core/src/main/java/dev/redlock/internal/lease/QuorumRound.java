package dev.redlock.internal.lease;

import dev.redlock.internal.transport.AwaitedRound;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.RoundLoop;
import dev.redlock.internal.transport.SelectorLoop;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Vote;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.IntFunction;

/**
 * One parallel round of a command on every master, and the vote count.
 *
 * <p>{@link #start} sends the command to all N masters before waiting on any of them (each client
 * only queues or writes it), then {@link #await} parks the calling thread until the round is
 * decided or its deadline passes; or {@link #whenDecided} returns a future of the same result for a
 * caller that must not block (the renewer). In {@link Mode#QUORUM} the round is decided as soon as
 * a majority granted or a majority can no longer be reached; in {@link Mode#ALL} only when every
 * master answered. Answers that arrive after the decision are ignored here; whatever they changed
 * on a master is undone by the commands queued behind them. The round only observes the clients'
 * futures: a master that does not answer in time is the client's (and its breaker's) business. On
 * the selector transport, the waiting caller may read the replies itself ({@link
 * SelectorLoop#await}), which sees the round as an {@link AwaitedRound}.
 *
 * <p><b>A gated round</b> ({@link #start(List, long[], int, Mode, Ticker, IntFunction, int,
 * BooleanSupplier)} with a gate) sends the command to one master first, the gate, and to the others
 * only once the gate granted, failed, or was given up on ({@link #openGate}). If the gate answers
 * that another client holds the key, the round is decided at once, the others never asked
 * (PENDING): contenders that all go through the same gate do not split the votes of the other
 * masters among themselves.
 */
final class QuorumRound implements Landing, AwaitedRound {

  /**
   * What each master's part of a round counts as: its answer as judged (the restart guard's vote,
   * for an acquire), or, for a master not asked at all, the answer it is known to give.
   */
  interface Verdict {
    /** Every master asked, every answer as it is. */
    Verdict AS_ANSWERED = new Verdict() {};

    /**
     * What master {@code node}'s answer counts as, applied as the round records it.
     *
     * @param node the master's index
     * @param answer its answer
     * @return the answer itself, unless the verdict says otherwise
     */
    default NodeReply judge(int node, NodeReply answer) {
      return answer;
    }

    /**
     * The answer master {@code node} is known to give, counted without asking it (the round sends
     * it nothing, so the command certainly left nothing there); {@link #NOT_ASKED} to leave it
     * unasked and unheard (PENDING); null to ask it. Asked before the master's command is made.
     *
     * @param node the master's index
     * @return the known answer, {@link #NOT_ASKED}, or null
     */
    default NodeReply known(int node) {
      return null;
    }
  }

  /** A master the round leaves unasked and unheard ({@link Verdict#known}): PENDING. */
  static final NodeReply NOT_ASKED =
      new NodeReply(Vote.PENDING, 0, 0, "not asked: too few masters may vote for this client");

  enum Mode {
    /** Decided at a majority of grants, or once a majority can no longer grant. */
    QUORUM,
    /** Decided when every master answered. */
    ALL,
    /**
     * For a release: decided once a majority answered (released, gone, or another's: the key no
     * longer holds our token there), or when every master answered.
     */
    FREED
  }

  private final List<String> names;
  private final long[] timeoutNanos; // per master: how long after the start it counts as timed out
  private final int quorum;
  private final Mode mode;
  private final Ticker ticker;
  private final long startNanos;
  private final int gate; // the master asked first, or -1
  private volatile Thread waiter; // set by await()
  private volatile Runnable selecting; // wakes the selector the waiter is selecting on, if it is

  private final ReentrantLock lock = new ReentrantLock();
  private final NodeReply[] replies; // guarded by lock
  private final Vote[] statuses; // guarded by lock
  private final long[] answeredAt; // guarded by lock
  private final String[] details; // guarded by lock
  private final boolean[] lostInFlight; // guarded by lock; recorded after the decision too
  private final Vote[] answers; // guarded by lock: every answer, after the decision too
  // guarded by lock: the command was handed to the master's client; null in a round without a
  // gate, which sends to every master at its start
  private final boolean[] sent;
  private IntFunction<CompletableFuture<NodeReply>> held; // guarded by lock: the gate's, until open
  // guarded by lock: the others are never asked: another client holds the key at the gate, or
  // the gate answered after the acquisition stopped
  private boolean gateClosed;
  // whether the acquisition still wants the round: read when the gate answers (a stopped one's
  // round asks no one else)
  private final BooleanSupplier wanted;
  private final Verdict verdict; // what an answer counts as (the guard's vote); who is not asked
  private boolean[] unasked; // guarded by lock: masters sent nothing ({@link Verdict#known}); lazy
  private boolean gateWaitPassed; // guarded by lock: the others were asked for want of the gate
  private int granted; // guarded by lock
  private int refused; // guarded by lock: any answer other than GRANTED
  private int answered; // guarded by lock: any answer from the master, not a failure
  private volatile boolean decided;
  private CompletableFuture<Tally> decision; // guarded by lock: set by whenDecided()
  private ScheduledExecutorService timer; // guarded by lock: set by whenDecided()
  private ScheduledFuture<?> timeout; // guarded by lock: set by whenDecided()
  private long deadlineNanos; // guarded by lock: set by whenDecided()

  private QuorumRound(
      List<String> names,
      long[] timeoutNanos,
      int quorum,
      Mode mode,
      Ticker ticker,
      int gate,
      BooleanSupplier wanted,
      Verdict verdict) {
    this.names = names;
    this.wanted = wanted;
    this.verdict = verdict;
    this.timeoutNanos = timeoutNanos;
    this.quorum = quorum;
    this.mode = mode;
    this.ticker = ticker;
    this.replies = new NodeReply[names.size()];
    this.statuses = new Vote[names.size()];
    this.answeredAt = new long[names.size()];
    this.details = new String[names.size()];
    this.lostInFlight = new boolean[names.size()];
    this.answers = new Vote[names.size()];
    this.sent = gate < 0 ? null : new boolean[names.size()];
    this.gate = gate;
    this.startNanos = ticker.read();
  }

  /**
   * Starts a round: reads the ticker, then issues {@code command} to every node in order. The
   * caller then either awaits it or asks {@link #whenDecided}.
   */
  static QuorumRound start(
      List<String> names,
      long[] timeoutNanos,
      int quorum,
      Mode mode,
      Ticker ticker,
      IntFunction<CompletableFuture<NodeReply>> command) {
    return start(
        names, timeoutNanos, quorum, mode, ticker, command, -1, () -> true, Verdict.AS_ANSWERED);
  }

  /**
   * Starts a round as {@link #start(List, long[], int, Mode, Ticker, IntFunction)} does, but with
   * {@code gate} at least 0 (in {@link Mode#QUORUM}) only on that master: the others are sent the
   * command when the gate grants or fails, or at {@link #openGate}; not at all if it refuses, nor
   * once {@code wanted} says false: an acquisition that may stop while its gate is asked (an
   * asynchronous one, cancelled) asks no other master after its gate answered; the round is then
   * decided (a grant at the gate alone is no lease, and is released as any failed round's). Each
   * answer counts as {@code verdict} says (the restart guard's vote for an acquire), applied as it
   * is recorded, before the gate opens on it.
   */
  static QuorumRound start(
      List<String> names,
      long[] timeoutNanos,
      int quorum,
      Mode mode,
      Ticker ticker,
      IntFunction<CompletableFuture<NodeReply>> command,
      int gate,
      BooleanSupplier wanted,
      Verdict verdict) {
    QuorumRound round =
        new QuorumRound(names, timeoutNanos, quorum, mode, ticker, gate, wanted, verdict);
    if (gate < 0) {
      for (int i = 0; i < names.size(); i++) {
        round.send(i, command);
      }
      return round;
    }
    round.lock.lock();
    try {
      round.held = command;
      round.sent[gate] = true;
      round.send(gate, command); // its answer, even if at once, opens the gate only after this
    } finally {
      round.lock.unlock();
    }
    return round;
  }

  private void send(int node, IntFunction<CompletableFuture<NodeReply>> command) {
    NodeReply known = verdict.known(node);
    if (known != null) {
      decline(node, known);
      return;
    }
    CompletableFuture<NodeReply> reply;
    try {
      reply = command.apply(node);
    } catch (RuntimeException e) {
      reply = CompletableFuture.failedFuture(e);
    }
    // The verdict is applied here, as the answer is recorded: no stage of its own per master.
    reply.whenComplete(
        (answer, error) ->
            record(node, error == null ? verdict.judge(node, answer) : null, error, true));
  }

  /**
   * Counts master {@code node} as {@code known} without asking it: sent nothing, it is left
   * nothing; its answer is no master's reply (no round trip measured), and PENDING stays unheard.
   */
  private void decline(int node, NodeReply known) {
    lock.lock();
    try {
      if (unasked == null) {
        unasked = new boolean[names.size()];
      }
      unasked[node] = true;
      if (known.status() != Vote.PENDING) {
        record(node, known, null, false); // the lock is reentrant
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Sends the command to the masters behind the gate, unless it was sent already or the round is
   * decided. Any thread; idempotent.
   */
  void openGate() {
    lock.lock();
    try {
      gateWaitPassed |= held != null && !decided;
      openLocked();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Sends behind the gate, under the lock: a decision (and the release that may follow it) cannot
   * come between marking a master sent and handing its client the command, so a release is never
   * queued ahead of the acquire it undoes. Each client only queues or writes; an answer completed
   * at once is recorded on this thread, the lock being reentrant.
   */
  private void openLocked() {
    IntFunction<CompletableFuture<NodeReply>> command = held;
    if (command == null || decided) {
      return;
    }
    held = null;
    for (int i = 0; i < sent.length; i++) {
      if (i != gate) {
        sent[i] = true;
        send(i, command);
      }
    }
  }

  long startNanos() {
    return startNanos;
  }

  private void record(int node, NodeReply answer, Throwable error, boolean asked) {
    long now = ticker.read();
    boolean wake;
    Tally tally = null;
    lock.lock();
    try {
      if (answers[node] == null) { // learned after the decision too
        answers[node] = error == null ? answer.status() : Vote.FAILED;
        lostInFlight[node] =
            cause(error) instanceof NodeUnavailableException lost && lost.mayHaveRun();
      }
      if (decided || statuses[node] != null) {
        return;
      }
      if (error != null) {
        statuses[node] = Vote.FAILED;
        details[node] = describe(error);
      } else {
        statuses[node] = answer.status();
        details[node] = answer.detail();
        if (asked) {
          replies[node] = answer;
          answered++;
        }
      }
      answeredAt[node] = now - startNanos;
      if (statuses[node] == Vote.GRANTED) {
        granted++;
      } else {
        refused++;
      }
      if (node == gate && held != null) {
        if (statuses[node] == Vote.TAKEN || statuses[node] == Vote.GONE) {
          gateClosed = true; // another client's: asking the others would only split their votes
        } else if (!wanted.getAsBoolean()) {
          gateClosed = true; // stopped meanwhile: the others would only grant a lock no one wants
        } else {
          openLocked(); // granted, or the gate could not vote: the others decide
        }
      }
      wake = !decided && isDecided();
      if (wake) {
        decided = true;
        if (decision != null) {
          tally = freezeLocked(now, deadlineNanos);
          timeout.cancel(false);
        }
      }
    } finally {
      lock.unlock();
    }
    if (tally != null) {
      completeOnTimer(tally);
    } else if (wake) {
      Thread parked = waiter;
      if (parked != null && parked != Thread.currentThread()) {
        // decided is written before selecting is read, and the waiter writes selecting before it
        // reads decided: one of the two sees the other, so a selecting waiter is always woken.
        Runnable wakeSelector = selecting;
        if (wakeSelector != null) {
          wakeSelector.run();
        }
        LockSupport.unpark(parked);
      }
    }
  }

  /** Whether the round is decided (or frozen). */
  @Override
  public boolean decided() {
    return decided;
  }

  /** Names the thread that waits for the round: it is unparked when the round is decided. */
  @Override
  public void waitOn(Thread thread) {
    waiter = thread;
  }

  /**
   * Says that the waiter is about to select (or, with null, that it stopped): a decision made by
   * another thread then also runs {@code wakeSelector}.
   */
  @Override
  public void selecting(Runnable wakeSelector) {
    selecting = wakeSelector;
  }

  private boolean isDecided() {
    int size = statuses.length;
    if (mode == Mode.ALL) {
      return granted + refused == size;
    }
    if (mode == Mode.FREED) {
      return answered >= quorum || granted + refused == size;
    }
    return granted >= quorum || refused > size - quorum || gateClosed;
  }

  /**
   * Parks until the round is decided or {@code deadlineNanos} passes, then freezes the count. The
   * wait is not interruptible (it is bounded by the node timeout); an interrupt is kept pending for
   * the caller.
   */
  Tally await(long deadlineNanos) {
    awaitDecision(deadlineNanos);
    return freeze(deadlineNanos);
  }

  /**
   * As {@link #await(long)}, on the selector {@code io} if not null: the caller leads it when no
   * one else does ({@link SelectorLoop#await}), and reads its own replies.
   */
  Tally await(RoundLoop io, long deadlineNanos) {
    if (io == null) {
      return await(deadlineNanos);
    }
    io.await(this, deadlineNanos);
    return freeze(deadlineNanos);
  }

  /**
   * Parks until the round is decided or {@code deadlineNanos} passes: {@link #await} but the count.
   */
  @Override
  public void awaitDecision(long deadlineNanos) {
    boolean interrupted = false;
    waiter = Thread.currentThread();
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
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Returns the round's result without blocking: completed on {@code timer}'s thread when the round
   * is decided, or at {@code deadlineNanos} with the masters that had not answered timed out. If
   * the timer has shut down, the future never completes.
   */
  CompletableFuture<Tally> whenDecided(ScheduledExecutorService timer, long deadlineNanos) {
    Tally tally = null;
    CompletableFuture<Tally> future = new CompletableFuture<>();
    lock.lock();
    try {
      this.decision = future;
      this.timer = timer;
      this.deadlineNanos = deadlineNanos;
      if (decided) {
        tally = freezeLocked(ticker.read(), deadlineNanos);
      } else {
        try {
          timeout =
              timer.schedule(this::expire, deadlineNanos - ticker.read(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closing) {
          decided = true; // the RedLock is closing: nothing more will be decided
        }
      }
    } finally {
      lock.unlock();
    }
    if (tally != null) {
      completeOnTimer(tally);
    }
    return future;
  }

  private void expire() {
    Tally tally;
    lock.lock();
    try {
      if (decided) {
        return;
      }
      decided = true;
      tally = freezeLocked(ticker.read(), deadlineNanos);
    } finally {
      lock.unlock();
    }
    decision.complete(tally); // already on the timer's thread
  }

  private void completeOnTimer(Tally tally) {
    try {
      timer.execute(() -> decision.complete(tally));
    } catch (RejectedExecutionException closing) {
      // the RedLock is closing: the renewal this round was for ends with it
    }
  }

  /** Freezes the count now: masters that have not answered are PENDING, or TIMED_OUT if late. */
  Tally freeze(long deadlineNanos) {
    long now = ticker.read();
    lock.lock();
    try {
      return freezeLocked(now, deadlineNanos);
    } finally {
      lock.unlock();
    }
  }

  private Tally freezeLocked(long now, long deadlineNanos) {
    decided = true;
    boolean late = now - deadlineNanos >= 0;
    long elapsed = now - startNanos;
    List<Outcome> outcomes = new ArrayList<>(statuses.length);
    for (int i = 0; i < statuses.length; i++) {
      Vote status = statuses[i];
      long at = answeredAt[i];
      String detail = details[i];
      if (status == null) {
        // Past its own node timeout (or the round's deadline), a master that has not answered
        // timed out; before, the round was decided without it.
        boolean asked = unasked == null || !unasked[i];
        status = asked && (late || elapsed >= timeoutNanos[i]) ? Vote.TIMED_OUT : Vote.PENDING;
        at = now - startNanos;
        detail = asked ? "" : NOT_ASKED.detail();
      }
      outcomes.add(new Outcome(names.get(i), status, at, detail));
    }
    return new Tally(
        quorum,
        startNanos,
        now - startNanos,
        gateWaitPassed,
        List.copyOf(outcomes),
        Collections.unmodifiableList(Arrays.asList(replies.clone())),
        this);
  }

  @Override
  public boolean mayHaveRun(int node) {
    lock.lock();
    try {
      if (sent != null && !sent[node] || unasked != null && unasked[node]) {
        return false; // behind a gate that never opened, or not asked
      }
      Vote answer = answers[node];
      return answer == null
          || answer == Vote.GRANTED
          || answer == Vote.RESTARTED
          || lostInFlight[node];
    } finally {
      lock.unlock();
    }
  }

  @Override
  public boolean leftNothing(int node) {
    lock.lock();
    try {
      if (sent != null && !sent[node] || unasked != null && unasked[node]) {
        return true; // behind a gate that never opened, or not asked
      }
      Vote answer = answers[node];
      return (answer == Vote.TAKEN || answer == Vote.GONE) && !lostInFlight[node];
    } finally {
      lock.unlock();
    }
  }

  @Override
  public boolean lostInFlight(int node) {
    lock.lock();
    try {
      return lostInFlight[node];
    } finally {
      lock.unlock();
    }
  }

  /** The failure itself, out of the {@link CompletionException} a dependent stage wraps it in. */
  static Throwable cause(Throwable error) {
    return error instanceof CompletionException && error.getCause() != null
        ? error.getCause()
        : error;
  }

  private static String describe(Throwable error) {
    Throwable cause = cause(error);
    String message = cause.getMessage();
    if (cause instanceof NodeUnavailableException && message != null) {
      return message;
    }
    return cause.getClass().getSimpleName() + (message == null ? "" : ": " + message);
  }

  /**
   * The frozen result of a round; only its {@code landing} keeps learning after the decision.
   *
   * @param quorum how many grants make a majority
   * @param startNanos the ticker just before the first request
   * @param elapsedNanos from {@code startNanos} to the decision
   * @param gateWaitPassed the masters behind the gate were asked because it had not answered in the
   *     gate wait (not because it granted or failed)
   * @param outcomes one per master, in configuration order
   * @param replies one per master, null where it had not answered (or failed) when decided
   * @param landing where the command may have run: the round's own view, which keeps learning after
   *     the decision
   */
  record Tally(
      int quorum,
      long startNanos,
      long elapsedNanos,
      boolean gateWaitPassed,
      List<Outcome> outcomes,
      List<NodeReply> replies,
      Landing landing) {

    /** How many masters granted. */
    int granted() {
      return count(Vote.GRANTED);
    }

    /** Whether a majority granted. */
    boolean reachedQuorum() {
      return granted() >= quorum;
    }

    /**
     * How many masters could not vote: they failed, did not answer in time, or (restart guard) are
     * too young to be trusted. The one definition of "unreachable".
     */
    int unreachable() {
      int count = 0;
      for (Outcome outcome : outcomes) {
        if (unreachable(outcome.vote())) {
          count++;
        }
      }
      return count;
    }

    static boolean unreachable(Vote vote) {
      return vote == Vote.FAILED || vote == Vote.TIMED_OUT || vote == Vote.RESTARTED;
    }

    /**
     * Whether {@code elapsedNanos} measures how fast the masters answer: some master answered, and
     * no master's timeout and no gate wait is part of it. A round that waited one out measures the
     * wait; counted in the average round time that sizes the gate wait, the hand-off pause and the
     * spread of retries, one paused master would lengthen each of them (and a longer gate wait, the
     * next gated round). A round that no master answered (decided by this client's own failures:
     * masters excluded as unfit, skipped by open breakers, a full queue) measures no round trip:
     * counted, such rounds would drag the average toward nothing, and a named waiter whose rounds
     * all fail so would retry with no pause between them.
     */
    boolean timedByAnswers() {
      return !gateWaitPassed && count(Vote.TIMED_OUT) == 0 && someAnswered();
    }

    /** Whether some master's answer decided the round with the rest (its reply is kept). */
    private boolean someAnswered() {
      for (NodeReply reply : replies) {
        if (reply != null) {
          return true;
        }
      }
      return false;
    }

    /** When the round was decided, on the ticker. */
    long decidedAtNanos() {
      return startNanos + elapsedNanos;
    }

    private int count(Vote vote) {
      int count = 0;
      for (Outcome outcome : outcomes) {
        if (outcome.vote() == vote) {
          count++;
        }
      }
      return count;
    }
  }
}
