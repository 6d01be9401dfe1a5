package dev.redlock.internal.lease;

import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.Vote;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One acquisition's place among the waiters of its resource: which of its rounds are gated ({@link
 * Masters#gateOf}), the name it queues under at the gate master (the same in each of its rounds),
 * and the leave it owes the queue when it stops waiting, granted or not (a waiter granted at the
 * gate stays first there until it leaves, so that a round that then fails elsewhere keeps its
 * place; it leaves before its lease is handed to the caller, so its own release never names it).
 * Used by one acquisition: its rounds run one after the other; the leave may come from another
 * thread (a cancel), so the fields are volatile and the leave is idempotent.
 *
 * <p>A multi-resource lease's rounds take every key of the set on each master at once ({@code
 * keyset.lua}), so a set has no one gate to queue at (its own gate, by the set's hash, is asked
 * first but queues nothing). Its waiter joins the queue of each of its resources at that resource's
 * gate instead ({@link Command.Join}) after each refused round: while it is first there, the
 * single-resource waiters behind it are refused, and that resource's release names it, so a set is
 * not starved by queued single waiters (issue 32, R6).
 */
final class Turn {

  /**
   * How many rounds a set's waiter asks every master at once after a notice, each after a random
   * pause that doubles from two rounds' time (up to the retry delay): about 250 rounds' time in
   * all, far more than a release takes to reach every master.
   */
  static final int SET_RETRIES = 8;

  /**
   * How many rounds a single resource's named waiter asks every master at once after its naming
   * even once refused at its gate, each after the same doubling pause: about 14 rounds' time in
   * all, more than a failed round's cleanup takes to free the gate (the key that refused it there
   * may be such a round's, which releases quietly and names no one), and short of the retry delay,
   * so that a waiter whose notice is lost still shows it.
   */
  static final int NAMED_RETRIES = 3;

  /**
   * Its naming, one value replaced by compare-and-set: the notice link's thread names the waiter
   * (or, a set's, notices it), the waiter's thread takes the naming for a round and decides it.
   *
   * @param named its next round asks every master at once
   * @param namedRound named since it was last queued or granted (see {@link #wasNamed()})
   * @param retries the rounds left that ask every master at once: a set's, or a named single
   *     waiter's even once refused at its gate
   */
  private record Naming(boolean named, boolean namedRound, int retries) {
    static final Naming NONE = new Naming(false, false, 0);
  }

  private final Masters masters;
  private final byte[] key;
  private final long staleMillis;
  private final byte[] waiter;
  private volatile String name; // the waiter's, as a release names it: made when first asked
  private final boolean gating;
  private final boolean set; // a multi-resource lease's, with wake-ups: joins its resources' queues
  private final List<byte[]> members; // a set's resources; else null
  private volatile int[] joinedAt; // a set's: the gate each resource was joined at, or -1; or null
  private volatile int queuedAt = -1; // the gate it queued at, or -1
  private volatile Outcome[] latest; // each master's latest answer in this acquisition's rounds
  private volatile String queuedAs; // see queuedAs()
  private volatile int gatedRound; // how many calls to the gate in turn it has made
  private volatile int passedRound; // the round decided before its gate answered, or 0
  private volatile int queuedLate; // the latest round whose gate answered that it queued, or 0
  private volatile boolean left; // the acquisition stopped
  private volatile boolean unheard; // its waiter hears no notice: it must not queue
  private final AtomicReference<Naming> naming = new AtomicReference<>(Naming.NONE);
  private volatile boolean waiting; // the next round is a waiter's: gated

  /**
   * The turn of an acquisition of {@code key}.
   *
   * @param masters the masters
   * @param key the resource's key, or a key set's
   * @param retryDelayNanos the retry delay: a waiter asks its gate at least this often, about
   * @param queue whether to go through the gate and queue there: only with wake-ups, for a queued
   *     waiter sleeps until a release names it (polling waiters would queue behind one another and
   *     lose every race to a client that is not waiting), and the gate alone did not measure better
   *     than the plain round for polling waiters
   * @param client the waiting client's name, 16 hex digits: a release at the gate tells the waiter
   *     whose turn it is on its client's channel ({@link Wakeups})
   */
  Turn(Masters masters, LockKey key, long retryDelayNanos, boolean queue, String client) {
    this(
        masters,
        key,
        retryDelayNanos,
        queue,
        client,
        bound -> ThreadLocalRandom.current().nextLong(bound));
  }

  /**
   * The turn of an acquisition of {@code key}, its waiter's own 16 hex digits drawn from {@code
   * names}.
   *
   * @param masters the masters
   * @param key the resource's key, or a key set's
   * @param retryDelayNanos the retry delay
   * @param queue whether to go through the gate and queue there
   * @param client the waiting client's name, 16 hex digits
   * @param names the randomness of the waiter's name
   */
  Turn(
      Masters masters,
      LockKey key,
      long retryDelayNanos,
      boolean queue,
      String client,
      Jitter names) {
    this.masters = masters;
    this.key = key.bytes();
    this.gating = queue;
    this.set = queue && key instanceof LockKey.Set;
    this.members = set ? ((LockKey.Set) key).keys() : null;
    this.waiter = queue ? waiterName(client, names) : null;
    // A waiter asks again at least every retry delay and a half, plus a round: twice that, and two
    // node timeouts, before one that stopped asking (it crashed) leaves by itself.
    this.staleMillis =
        Math.max(
            1, TimeUnit.NANOSECONDS.toMillis(2 * retryDelayNanos + 2 * masters.nodeTimeoutNanos()));
  }

  /** Its client's 16 hex digits, then 16 of its own: 32, as the release names it. */
  private static byte[] waiterName(String client, Jitter names) {
    return (client + hex16(names)).getBytes(StandardCharsets.US_ASCII);
  }

  /** 16 hex digits drawn from {@code names}: 63 random bits under a set top bit. */
  static String hex16(Jitter names) {
    return Long.toHexString(names.nextLong(Long.MAX_VALUE) | Long.MIN_VALUE);
  }

  /**
   * Whether, its last round refused without queuing it (the first, which asks every master at
   * once), this acquisition should ask again at once, gated, to queue: only the waiter whose turn
   * it is hears a release at the gate, so one not queued would wait for its timer. Not while the
   * gate's breaker is open: that round would have no gate, and only repeat the first.
   */
  boolean queueAtOnce() {
    return waiter != null && !set && !unheard && queuedAs == null && masters.gateOf(key) >= 0;
  }

  /**
   * Its waiter cannot hear this resource's notices (past the bound on subscribed resources, {@link
   * Wakeups#MAX_GROUPS}): it no longer goes through the gate, where, queued, only a release that
   * names it would wake it, and first in the queue it would keep every other waiter out between its
   * timer's rounds. It polls, as without wake-ups.
   */
  void unheard() {
    unheard = true;
  }

  /**
   * The name this acquisition queues under at its gate, or null if it does not queue. Made when
   * first asked (a waiter is queued or a notice came), once, not for every acquisition.
   */
  String name() {
    String made = name;
    if (made == null && waiter != null) {
      made = new String(waiter, StandardCharsets.US_ASCII);
      name = made; // two threads may both make it: the same name
    }
    return made;
  }

  /**
   * Whether a release's {@code turn} names this acquisition: its waiter's name, whether or not its
   * queuing round's answer has come back yet (a release right after it queued may name it first).
   */
  boolean isNamedBy(String turn) {
    return waiter != null && turn.equals(name());
  }

  /**
   * The name this acquisition is queued under at its gate, if its last round was refused there in
   * turn (it waits for a release to name it); else null: it was not queued, or was granted, or the
   * gate did not answer (until it does: a refusal that comes after the round was decided queues it
   * too). Read by {@link Wakeups} as notices come.
   */
  String queuedAs() {
    return queuedAs;
  }

  /**
   * The gate of this acquisition's next round, or -1. Only a waiter's round has one: every round
   * after the first, and the first too after {@link #behindOthers}. A round without a gate asks
   * every master at once, as an uncontended acquire does.
   */
  int nextGate() {
    boolean gated = waiting;
    waiting = true; // every round after this one is a waiter's
    return gated && gating && !unheard ? masters.gateOf(key) : -1;
  }

  /**
   * Waiters are known to be queued for this resource (this client's last release of it was heard):
   * the first round, too, goes through the gate as theirs do, rather than past them.
   */
  void behindOthers() {
    waiting = true;
  }

  /**
   * Whether the acquisition still wants its rounds: a round whose gate did not answer in time asks
   * the others only if so (a cancelled asynchronous acquisition must not take the lock later).
   */
  boolean wanted() {
    return !left;
  }

  /**
   * A release named this waiter first in the queue at its gate ({@link Wakeups}). A set's waiter
   * then retries as after a plain notice ({@link #noticed}): the release that named it ran at one
   * resource's gate, and may not have reached the other masters yet.
   */
  void named() {
    naming.getAndUpdate(
        was -> new Naming(true, was.namedRound(), set ? SET_RETRIES : NAMED_RETRIES));
  }

  /**
   * A plain notice (a release that named no waiter) woke this acquisition's waiter. A set's next
   * round then asks every master at once, as a named waiter's does: the notice came from the gate
   * of one of its resources, which ran the release, while the set's own gate (chosen by the whole
   * set's hash) may not have run it yet, and a round refused there would ask no one else and sleep
   * until its timer. A single resource's waiter heeds only its naming ({@link #named}).
   */
  void noticed() {
    if (!set) {
      return;
    }
    naming.getAndUpdate(was -> new Naming(true, was.namedRound(), SET_RETRIES));
  }

  /**
   * Whether the next round may ask every master at once (still in turn at the gate, {@link
   * #acquire}) rather than the gate first: a release named this waiter first in the queue, so the
   * others that queue there sleep on and do not race it. Once per naming.
   */
  boolean takeNamed() {
    Naming was = naming.getAndUpdate(n -> n.named() ? new Naming(false, true, n.retries()) : n);
    return was.named();
  }

  /**
   * Whether a release named this waiter and it has not been granted, nor refused at its gate,
   * since: a round that failed then overtook that release on some masters (or met a slow gate), and
   * no other notice will come for it (the release was heard already; the next master's is quiet),
   * so it tries again after a short pause, doubling, rather than waiting for one. Refused at the
   * gate, it is queued there again, and the next release names it; it still tries again for up to
   * {@link #NAMED_RETRIES} rounds, as the key that refused it there may be a failed round's (a
   * client that was not waiting, or a set's waiter, asks the gate past the queue), whose cleanup is
   * quiet and names no one.
   */
  boolean wasNamed() {
    return naming.get().namedRound();
  }

  /**
   * The call to the gate master in a round gated by {@code gate}: queued, if this acquisition's key
   * is a single resource's; else the plain acquire.
   */
  CompletableFuture<NodeReply> acquire(NodeClient node, int gate, Command.Acquire acquire) {
    if (waiter == null || set) {
      return node.send(acquire);
    }
    if (left) {
      // Stopped (an asynchronous acquisition cancelled) after its round was built: queue nowhere.
      return CompletableFuture.failedFuture(
          new NodeUnavailableException("not asked: the acquisition stopped"));
    }
    queuedAt = gate;
    int round = gatedRound + 1; // its rounds run one after another: one writer
    gatedRound = round;
    passedRound = 0;
    CompletableFuture<NodeReply> reply =
        node.send(
            new Command.AcquireInTurn(
                key,
                acquire.token(),
                acquire.ttlMillis(),
                acquire.guardMillis(),
                waiter,
                staleMillis));
    reply.thenAccept(
        answer -> {
          if (answer.status() == Vote.TAKEN) {
            queuedLate(round);
          }
        });
    if (left) {
      // A leave that ran meanwhile may have read queuedAt before it was set, or sent its leave
      // ahead of this acquire: leave again, after it, so that no ghost is left at the gate.
      masters.leave(gate, key, waiter);
    }
    return reply;
  }

  /**
   * Notes how a round gated by {@code gate} ended: refused there, it is queued behind others.
   * Returns the attempt to report: a round refused at the gate asked no other master, so a refused
   * attempt shows, for each master it did not hear from (PENDING), the latest answer that master
   * gave in an earlier round of this acquisition, unless that was a grant (since released): an
   * exception that ends the wait then says what every master answered, not just the gate.
   */
  Attempt decided(int gate, Attempt attempt) {
    boolean inTurn = gate >= 0 && waiter != null && !set;
    Vote atGate = inTurn ? attempt.outcomes().get(gate).vote() : null;
    boolean queued = atGate == Vote.TAKEN;
    queuedAs = queued ? name() : null;
    if (atGate == Vote.PENDING && attempt.grant() == null) {
      // Decided without its gate (slow: passed by): it may have queued there all the same, which
      // the gate's answer says when it comes (queuedLate), or said already.
      int round = gatedRound;
      passedRound = round;
      if (queuedLate == round) {
        queuedAs = name();
      }
    } else {
      passedRound = 0;
    }
    if (attempt.grant() == null && (set || gate >= 0)) {
      // Named (or, a set's, noticed) and not granted: the round may have overtaken the release on
      // some masters (a round is decided once a majority refused, often before the master that ran
      // the release answers), or met a slow gate. It asks every master at once again, after the
      // retry's doubling pause: a set's, SET_RETRIES rounds on; a single resource's, until queued
      // again at its gate (the next release names it), and then while it has retries left
      // (NAMED_RETRIES), since the key that refused it there may be a failed round's, whose
      // cleanup releases quietly: a client not waiting and a set's waiter ask the gate past the
      // queue. Asking the gate first, a slow or paused gate's wait would lengthen every retry.
      naming.getAndUpdate(
          was -> {
            if (!was.namedRound()) {
              return was; // not named: nothing to decide
            }
            int left = Math.max(0, was.retries() - 1);
            boolean again = left > 0 || !set && !queued;
            // Named again for the retry; else a naming that came meanwhile is kept.
            return again ? new Naming(true, true, left) : new Naming(was.named(), false, left);
          });
    }
    if (attempt.grant() != null) {
      leave(); // before the caller has the lease: its release must name the next waiter
    } else if (set) {
      join();
    }
    return withLatest(attempt);
  }

  private Attempt withLatest(Attempt attempt) {
    List<Outcome> outcomes = attempt.outcomes();
    Outcome[] known = latest;
    if (known == null || known.length != outcomes.size()) {
      latest = outcomes.toArray(new Outcome[0]);
      return attempt;
    }
    List<Outcome> shown = new ArrayList<>(outcomes);
    boolean filled = false;
    for (int i = 0; i < shown.size(); i++) {
      Outcome outcome = outcomes.get(i);
      if (outcome.vote() != Vote.PENDING) {
        known[i] = outcome;
      } else if (known[i].vote() != Vote.PENDING && known[i].vote() != Vote.GRANTED) {
        shown.set(i, known[i]);
        filled = true;
      }
    }
    return filled && attempt.grant() == null
        ? new Attempt(null, List.copyOf(shown), attempt.unavailable(), attempt.heldBack())
        : attempt;
  }

  /**
   * A set's round was refused: its waiter queues, or asks again to stay queued (a waiter that stops
   * asking goes stale), at each of its resources' gates, without waiting for the answers. Not if it
   * hears no notice (it polls) or stopped.
   */
  private void join() {
    if (unheard || left) {
      return;
    }
    int[] was = joinedAt;
    int[] at = new int[members.size()];
    for (int i = 0; i < at.length; i++) {
      byte[] member = members.get(i);
      int gate = masters.gateOf(member);
      if (gate >= 0) {
        masters.join(gate, member, waiter, staleMillis);
      }
      at[i] = gate >= 0 ? gate : was == null ? -1 : was[i]; // an open breaker's: joined before
    }
    joinedAt = at;
    if (left) {
      leave(); // a leave that ran meanwhile may have missed these joins: leave after them
    }
  }

  /**
   * The gate answered this acquisition's {@code round} in turn: refused, it queued the waiter. If
   * that round was decided before the answer came (the gate was slow, and passed by), the waiter is
   * queued after all: it sleeps through notices that name others, and the next release there names
   * it, as when the gate answers in time. Without this, a slow gate's waiter took every other
   * waiter's turn notice for a plain one and asked again (a {@code WakeUpNoticesIT} flake under
   * load). Either order of the answer and the decision ends queued: each writes its mark before it
   * reads the other's.
   */
  private void queuedLate(int round) {
    queuedLate = round;
    if (passedRound == round && !left) {
      queuedAs = name();
    }
  }

  /**
   * The acquisition got its lease or stopped: if it queued at a gate (a set's, at its resources'),
   * it leaves, without waiting for the answer (sent before any later command of this RedLock to
   * that master, such as the lease's release). Idempotent.
   */
  void leave() {
    left = true;
    int[] joined = joinedAt;
    if (joined != null) {
      joinedAt = null;
      for (int i = 0; i < joined.length; i++) {
        if (joined[i] >= 0) {
          masters.leave(joined[i], members.get(i), waiter);
        }
      }
      return;
    }
    int gate = queuedAt;
    if (gate < 0) {
      return;
    }
    queuedAt = -1;
    masters.leave(gate, key, waiter);
  }
}
