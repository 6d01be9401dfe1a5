package dev.redlock.internal.lease;

import dev.redlock.internal.lease.QuorumRound.Tally;
import dev.redlock.internal.preflight.Findings;
import dev.redlock.internal.preflight.Preflight;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.RestartGuardRule;
import dev.redlock.internal.transport.SelectorLoop;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Vote;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The machinery behind one API {@code RedLock}: the acquisition, read top to bottom in {@link
 * #attempt} (a fresh token; the vote on every master; the validity; the lease, or else the release
 * on every master), the retries of a bounded wait, the choice of the fencing token, the renewer,
 * the admission of fresh masters, the preflight's probes, and the close. The API checks the
 * arguments, turns the results into its types and throws its exceptions; the safety assumptions are
 * stated on {@code RedLock}. Thread-safe.
 */
public final class Coordinator {

  private static final Logger log = LoggerFactory.getLogger(Coordinator.class);

  /**
   * The settings the rounds follow, as the builder checked them.
   *
   * @param driftFactor the fraction of the TTL allowed for clock drift
   * @param minValidityNanos the least validity a new or extended lease must have
   * @param retryDelayNanos the mean pause between rounds of a wait, and between renewal retries
   * @param fencing whether leases carry fencing tokens
   * @param restartGuard whether young masters' votes are ignored
   * @param maxLeaseMillis the longest TTL
   * @param guardMillis how old a master's dataset and server run must be to vote; 0 without the
   *     restart guard
   * @param connectTimeoutNanos the longest connect timeout of any master
   */
  public record Settings(
      double driftFactor,
      long minValidityNanos,
      long retryDelayNanos,
      boolean fencing,
      boolean restartGuard,
      long maxLeaseMillis,
      long guardMillis,
      long connectTimeoutNanos) {}

  private final Timing timing;
  private final Masters masters;
  private final Leases leases;
  private final Releases releases;
  private final Arguments arguments;
  private final Events events;
  private final Preflight preflight;
  private final Settings settings;
  private final Contention contention;
  private final Tokens tokens = new Tokens();
  private final Stalls stalls; // says that a wait goes on without a quorum
  private final Abstentions abstentions; // when an acquire asks no master
  private final AtomicBoolean closed = new AtomicBoolean();
  private final ReentrantLock renewerLock = new ReentrantLock();
  private Renewer renewer; // guarded by renewerLock; created by the first renewal

  /**
   * The coordinator of {@code masters}.
   *
   * @param masters the masters, their clients built and connecting
   * @param events the listener's events
   * @param preflight the checks of {@link #inspect()}
   * @param settings the settings
   */
  public Coordinator(Masters masters, Events events, Preflight preflight, Settings settings) {
    this(masters, events, preflight, settings, Contention.polling());
  }

  /**
   * The coordinator of {@code masters}, whose waiters contend by {@code contention}: {@link
   * Wakeups}, or {@link Contention#polling}.
   *
   * @param masters the masters, their clients built and connecting
   * @param events the listener's events
   * @param preflight the checks of {@link #inspect()}
   * @param settings the settings
   * @param contention how the waits contend, closed with this
   */
  public Coordinator(
      Masters masters,
      Events events,
      Preflight preflight,
      Settings settings,
      Contention contention) {
    this(masters, events, preflight, settings, contention, Timing.REAL);
  }

  /**
   * The coordinator of {@code masters}, whose timers and pauses' randomness are {@code timing}'s (a
   * test's or a simulation's virtual time; the others' clock is the masters' ticker).
   *
   * @param masters the masters, their clients built and connecting
   * @param events the listener's events
   * @param preflight the checks of {@link #inspect()}
   * @param settings the settings
   * @param contention how the waits contend, closed with this
   * @param timing the timers and the randomness
   */
  public Coordinator(
      Masters masters,
      Events events,
      Preflight preflight,
      Settings settings,
      Contention contention,
      Timing timing) {
    this.timing = timing;
    this.contention = contention;
    this.masters = masters;
    this.stalls = new Stalls(masters.ticker(), Stalls.INTERVAL_NANOS);
    this.abstentions = new Abstentions(masters.nodes(), masters.quorum(), masters.ticker());
    contention.hearFrom(masters::heardFor);
    this.events = events;
    this.preflight = preflight;
    this.settings = settings;
    this.arguments =
        new Arguments(
            masters.nodeTimeoutNanos(),
            settings.minValidityNanos(),
            settings.restartGuard() ? settings.maxLeaseMillis() : Long.MAX_VALUE);
    this.releases = new Releases(masters, events, timing.timers());
    this.leases =
        new Leases(
            masters,
            releases,
            events,
            arguments,
            settings.driftFactor(),
            settings.minValidityNanos(),
            timing);
  }

  /**
   * Returns the checks of TTLs against these settings.
   *
   * @return the arguments' checks
   */
  public Arguments arguments() {
    return arguments;
  }

  /**
   * One round, after checking that this is open.
   *
   * @param resource the resource, as the caller named it
   * @param key its key
   * @param ttlMillis the TTL, checked
   * @return how the round ended
   * @throws IllegalStateException if closed
   */
  public Attempt attemptOnce(String resource, LockKey key, long ttlMillis) {
    checkOpen();
    return attempt(resource, key, ttlMillis, null);
  }

  /**
   * Runs rounds, with randomized pauses between them, until one grants a lease or {@code waitNanos}
   * has passed ({@link Long#MAX_VALUE}: no limit); returns the last attempt. If not {@code
   * interruptible}, an interrupt does not stop the wait: it is kept pending for the caller.
   *
   * @param resource the resource, as the caller named it
   * @param key its key
   * @param ttlMillis the TTL, checked
   * @param waitNanos how long to keep trying
   * @param interruptible whether an interrupt ends the wait
   * @return the attempt that granted the lease, or the last one
   * @throws InterruptedException if interruptible and interrupted; nothing is left locked
   * @throws IllegalStateException if closed while waiting
   */
  public Attempt retry(
      String resource, LockKey key, long ttlMillis, long waitNanos, boolean interruptible)
      throws InterruptedException {
    if (interruptible && Thread.interrupted()) {
      throw new InterruptedException();
    }
    long started = masters.ticker().read();
    boolean interrupted = false;
    Turn turn = contention.turn(masters, key, settings.retryDelayNanos());
    Wait wait = wait(resource, key, turn, started, waitNanos);
    try {
      Wait.Step step = wait.start();
      while (true) {
        if (step instanceof Wait.Pause pause) {
          // No wake-up (the hand-off pause): a future of its own, which only the time ends.
          CompletableFuture<Void> wake = pause.wake();
          CompletableFuture<Void> until = wake == null ? new CompletableFuture<>() : wake;
          interrupted |= await(until, pause.nanos(), interruptible);
          checkOpen();
        }
        wait.beforeRound();
        step = wait.decided(attempt(resource, key, ttlMillis, turn));
        if (step instanceof Wait.Finish finish) {
          return finish.attempt();
        }
      }
    } finally {
      wait.close();
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * The wait engine of one acquisition of {@code key}, blocking or not, on this RedLock's clock and
   * with its stall log.
   */
  private Wait wait(String resource, LockKey key, Turn turn, long started, long waitNanos) {
    return new Wait(
        contention,
        turn,
        key,
        waitNanos,
        settings.retryDelayNanos(),
        masters.ticker(),
        timing.jitter(),
        attempt ->
            stalls.after(
                resource, started, waitNanos, attempt, masters.quorum(), settings.guardMillis()));
  }

  /**
   * Acquires without blocking a thread, as {@link #retry} (or, with {@code waitNanos} 0, {@link
   * #attemptOnce}) does: see {@link AsyncLeases}.
   *
   * @param <T> the caller's result
   * @param resource the resource, as the caller named it
   * @param key its key
   * @param ttlMillis the TTL, checked
   * @param waitNanos how long to keep trying; 0 for one round
   * @param result turns the last attempt into the caller's value, or throws its exception
   * @return the caller's future; cancelling it stops the retries and releases what was granted
   * @throws IllegalStateException if closed
   */
  public <T> CompletableFuture<T> acquireAsync(
      String resource, LockKey key, long ttlMillis, long waitNanos, Function<Attempt, T> result) {
    checkOpen();
    Turn turn = contention.turn(masters, key, settings.retryDelayNanos());
    Wait wait = wait(resource, key, turn, masters.ticker().read(), waitNanos);
    return leases
        .async()
        .acquire(
            resource, wait, timer -> attemptAsync(resource, key, ttlMillis, timer, turn), result);
  }

  /**
   * Whether a round that granted no lease had some master's vote: competing clients split the
   * votes, or the notice came from the first master to run the release and the round reached others
   * before the release did. Either way the lock is about to be free. (So does a master that lost
   * the key of a lease held by a majority vote for us: hence the cap on retries in a row.)
   */
  static boolean split(Attempt attempt) {
    for (Outcome outcome : attempt.outcomes()) {
      if (outcome.vote() == Vote.GRANTED) {
        return true;
      }
    }
    return false;
  }

  /**
   * Waits until {@code wake} completes or {@code nanos} pass. Returns whether an interrupt came and
   * was kept for the caller: if not {@code interruptible}, an interrupt does not end the wait.
   *
   * @throws InterruptedException if interruptible and interrupted
   */
  private boolean await(CompletableFuture<Void> wake, long nanos, boolean interruptible)
      throws InterruptedException {
    Ticker ticker = masters.ticker();
    long until = ticker.read() + nanos;
    boolean interrupted = false;
    while (true) {
      // First: a pause that is over at once (cut short by a wake-up, or shorter than a tick) must
      // not let an interruptible wait run round after round past its interrupt.
      if (interruptible && Thread.interrupted()) {
        throw new InterruptedException();
      }
      long left = until - ticker.read();
      if (left <= 0 || wake.isDone()) {
        return interrupted;
      }
      try {
        timing.pauses().await(wake, left);
        return interrupted; // woken or timed out (by the pause's clock, which may not be ours)
      } catch (InterruptedException e) {
        if (interruptible) {
          throw e;
        }
        interrupted = true;
      }
    }
  }

  /**
   * Starts renewing {@code grant} by quorum whenever a third of {@code ttlMillis} is left.
   *
   * @param grant the lease
   * @param ttlMillis the TTL of each renewal
   * @return the renewal, to cancel
   * @throws IllegalStateException if closed
   */
  public Renewer.Renewal renew(Grant grant, long ttlMillis) {
    return renewer().start(grant, ttlMillis);
  }

  /**
   * Returns how many leases were granted and are neither released nor lost.
   *
   * @return a snapshot
   */
  public int leasesHeld() {
    return leases.held();
  }

  /**
   * Returns how many renewal rounds have been sent and not yet decided.
   *
   * @return a snapshot
   */
  public int renewalsInFlight() {
    renewerLock.lock();
    try {
      return renewer == null ? 0 : renewer.inFlight();
    } finally {
      renewerLock.unlock();
    }
  }

  private Renewer renewer() {
    renewerLock.lock();
    try {
      checkOpen();
      if (renewer == null) {
        renewer = new Renewer(leases, settings.retryDelayNanos(), timing);
      }
      return renewer;
    } finally {
      renewerLock.unlock();
    }
  }

  /**
   * One acquisition, read top to bottom: a fresh token; the vote on every master; the validity; the
   * lease, or else the release on every master. With fencing, the vote also reads each master's
   * fence counter and clock, and the lease keeps the next token to store when it is first asked for
   * ({@link Grant#storeFence()}). A waiter's round (its {@code turn} says which, {@link
   * Turn#nextGate}) is asked of the key's gate master first ({@link Masters#gateOf}).
   */
  private Attempt attempt(String resource, LockKey key, long ttlMillis, Turn turn) {
    byte[] token = tokens.next();
    int gate = turn == null ? -1 : turn.nextGate();
    boolean inTurn = gate >= 0 && turn.takeNamed(); // named first: ask every master at once
    Tally votes =
        masters.vote(
            acquireCall(key, token, ttlMillis, turn, gate), inTurn ? -1 : gate, gateWait(gate));
    Attempt attempt = settle(resource, key, token, ttlMillis, votes);
    return turn == null ? attempt : turn.decided(gate, attempt);
  }

  /**
   * One acquisition as {@link #attempt}, without blocking: the round's votes are counted, and the
   * attempt completed, on {@code timer}'s thread.
   */
  private CompletableFuture<Attempt> attemptAsync(
      String resource, LockKey key, long ttlMillis, ScheduledExecutorService timer, Turn turn) {
    byte[] token = tokens.next();
    int gate = turn.nextGate();
    boolean inTurn = gate >= 0 && turn.takeNamed(); // named first: ask every master at once
    return masters
        .voteAsync(
            acquireCall(key, token, ttlMillis, turn, gate),
            timer,
            inTurn ? -1 : gate,
            gateWait(gate),
            turn::wanted)
        .thenApply(votes -> turn.decided(gate, settle(resource, key, token, ttlMillis, votes)));
  }

  /**
   * The acquire a round sends each master; at {@code gate} (if at least 0), the waiter's acquire in
   * turn ({@link Turn#acquire}). With fencing, it also reads each master's fence counter and clock.
   * With the restart guard, each answer's vote is the guard's ({@link RestartGuardRule#judge}):
   * decided in the quorum layer, from what the codec read, by the round as it records the answer
   * ({@link QuorumRound.Verdict#judge}), with no stage of its own per master. A round that too few
   * masters can win asks none ({@link Abstentions}).
   */
  private Masters.Call acquireCall(LockKey key, byte[] token, long ttlMillis, Turn turn, int gate) {
    long guardMillis = settings.guardMillis();
    Command.Acquire acquire =
        new Command.Acquire(key, token, ttlMillis, settings.fencing(), guardMillis);
    NodeReply[] known = abstentions.known();
    if (guardMillis == 0 && known == null) {
      return (node, i) -> i == gate ? turn.acquire(node, gate, acquire) : node.send(acquire);
    }
    return new Masters.Call() {
      @Override
      public CompletableFuture<NodeReply> send(NodeClient node, int i) {
        return i == gate ? turn.acquire(node, gate, acquire) : node.send(acquire);
      }

      @Override
      public NodeReply judge(int i, NodeReply answer) {
        return guardMillis == 0
            ? answer
            : abstentions.judged(i, RestartGuardRule.judge(answer, guardMillis));
      }

      @Override
      public NodeReply known(int i) {
        return known == null ? null : known[i];
      }
    };
  }

  /** How long a round gated by {@code gate} waits for it before asking the others; 0 if none. */
  private long gateWait(int gate) {
    return gate < 0 ? 0 : masters.gateWaitNanos(gate, contention.rounds().nanos());
  }

  /**
   * The rest of {@link #attempt} once the votes are in: the validity; the lease, or the release.
   */
  private Attempt settle(String resource, LockKey key, byte[] token, long ttlMillis, Tally votes) {
    long ttlNanos = TimeUnit.MILLISECONDS.toNanos(ttlMillis);
    long validity = Validity.remainingNanos(ttlNanos, votes.elapsedNanos(), settings.driftFactor());
    long took = votes.elapsedNanos();
    if (votes.timedByAnswers()) {
      contention.rounds().took(took);
    }
    List<Outcome> outcomes = votes.outcomes();
    if (votes.reachedQuorum() && validity > settings.minValidityNanos()) {
      long fence = settings.fencing() ? nextFence(votes) : Grant.NO_FENCE;
      Grant grant =
          leases.grant(
              resource,
              key,
              token,
              votes.decidedAtNanos() + validity,
              fence,
              votes.landing(),
              leases.keysExpireBy(votes.startNanos(), ttlMillis));
      if (events.enabled()) { // no allocation on the hot path without a listener
        events.emit(l -> l.acquired(resource, outcomes, took));
      }
      return new Attempt(grant, outcomes, false);
    }

    releases.releaseAll(
        key, token, votes.landing(), leases.keysExpireBy(votes.startNanos(), ttlMillis));
    // A majority voted for us but the lease still failed: the round was too slow.
    boolean unavailable =
        votes.reachedQuorum() || votes.unreachable() > masters.size() - masters.quorum();
    if (events.enabled()) {
      events.emit(l -> l.denied(resource, unavailable, outcomes, took));
    }
    if (log.isDebugEnabled()) {
      log.debug("{} not acquired: {}", Arguments.quote(resource), outcomes);
    }
    return new Attempt(null, outcomes, unavailable);
  }

  /**
   * Says why a round reached no quorum and what to do, kind of trouble by kind: {@link Diagnosis}.
   *
   * @param outcomes what each master answered in the round
   * @return the explanation, for an exception's message
   */
  public String explain(List<Outcome> outcomes) {
    return Diagnosis.explain(outcomes, masters.quorum(), settings.guardMillis());
  }

  /**
   * The lease's fencing token, to be stored when first asked for: above every counter the granting
   * masters had stored and not below any answering master's clock. See {@link Leases#storeFence}
   * for why a token stored later is as good as one stored during the acquire.
   */
  private static long nextFence(Tally votes) {
    long next = 1;
    for (NodeReply reply : votes.replies()) {
      if (reply != null) {
        next = Math.max(next, Math.max(reply.fence() + 1, reply.timeMicros()));
      }
    }
    return next;
  }

  /**
   * Runs the preflight on every master at once and waits for the answers, for at most {@link
   * #preflightWaitNanos}.
   *
   * @return what it found, per master and per datacenter
   * @throws IllegalStateException if closed
   */
  public Findings inspect() {
    checkOpen();
    List<Preflight.Probe> probes = new ArrayList<>();
    for (int i = 0; i < masters.size(); i++) {
      probes.add(
          preflight.start(
              masters.nodes().get(i), masters.names().get(i), masters.datacenters().get(i)));
    }
    Ticker ticker = masters.ticker();
    long deadline = ticker.read() + preflightWaitNanos(masters.nodeTimeoutNanos());
    List<Findings.Master> found = new ArrayList<>();
    for (Preflight.Probe probe : probes) {
      found.add(probe.await(deadline, ticker));
    }
    return new Findings(found, Preflight.losses(masters.datacenters()));
  }

  /**
   * Returns how long the preflight waits for its answers: the longer of 1 s and two node timeouts.
   *
   * @param nodeTimeoutNanos the longest node timeout
   * @return nanoseconds
   */
  public static long preflightWaitNanos(long nodeTimeoutNanos) {
    return Math.max(TimeUnit.SECONDS.toNanos(1), 2 * nodeTimeoutNanos);
  }

  /**
   * Admits every reachable master for the restart guard, waiting for those still connecting; logs
   * each master's result in words at INFO, and at WARN each master not admitted, with why.
   *
   * @return one outcome per master: GRANTED if admitted by this call, TAKEN if it already was,
   *     otherwise why not, in words, in its detail
   * @throws IllegalStateException if closed
   */
  public List<Outcome> admitFreshNodes() {
    checkOpen();
    // A master still connecting is waited for: the admission must not skip it for being slow.
    long deadline =
        masters.ticker().read() + settings.connectTimeoutNanos() + masters.nodeTimeoutNanos();
    Tally tally = masters.all((node, i) -> node.send(new Command.Admit()), deadline);
    abstentions.clear(); // the next round asks every master; the guard judges their votes anew
    List<Outcome> outcomes = AdmissionReport.explained(tally.outcomes());
    log.info("admission: {}", AdmissionReport.summary(outcomes));
    for (Outcome outcome : outcomes) {
      if (!AdmissionReport.admitted(outcome)) {
        log.warn("master {} {}", outcome.node(), AdmissionReport.words(outcome));
      }
    }
    return outcomes;
  }

  /**
   * Closes every connection and stops the library's threads, waiting a bounded time for them.
   * Idempotent.
   */
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    Renewer stopping;
    renewerLock.lock();
    try {
      stopping = renewer;
    } finally {
      renewerLock.unlock();
    }
    long grace = masters.nodeTimeoutNanos() + TimeUnit.SECONDS.toNanos(1);
    leases.async().close(grace); // first: what its rounds granted is released on open links
    if (stopping != null) {
      stopping.close(grace);
    }
    releases.close();
    contention.close(grace);
    masters.close(masters.ticker().read() + grace);
    events.close(grace);
  }

  /**
   * Reads the monotonic clock every wait and validity of this RedLock is measured on.
   *
   * @return nanoseconds, comparable only with other readings of it
   */
  public long nanoTime() {
    return masters.ticker().read();
  }

  /**
   * Throws if this was closed.
   *
   * @throws IllegalStateException if it was
   */
  public void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("RedLock is closed");
    }
  }

  /**
   * Returns the masters and the quorum, for the API's {@code toString()}.
   *
   * @return {@code nodes=[host:port, ...], quorum=N}
   */
  @Override
  public String toString() {
    return "nodes=" + masters.names() + ", quorum=" + masters.quorum();
  }

  /**
   * Returns the selector the plaintext masters share, or null: for tests.
   *
   * @return the selector, or null
   */
  public SelectorLoop selectorLoop() {
    return masters.io();
  }

  /**
   * Returns how many asynchronous acquisitions are pending: for tests.
   *
   * @return a snapshot
   */
  public int pendingAcquisitions() {
    return leases.async().pending();
  }

  /** Waits until the listener has been told every event handed to the event thread: for tests. */
  public void awaitEventsTold() {
    events.awaitTold(TimeUnit.SECONDS.toNanos(5));
  }
}
