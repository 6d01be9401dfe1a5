package dev.redlock.simulation;

import static dev.redlock.simulation.SimHarness.CLIENTS;
import static dev.redlock.simulation.SimHarness.OVERRUN_BOUND_NANOS;
import static dev.redlock.simulation.SimHarness.TTL;

import dev.redlock.Lease;
import dev.redlock.RedLockException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What the checkers know: who holds a lease until when (on the simulation's true time), the highest
 * token granted, and the first failure of each property. Grants come from the harness's own calls
 * and from async completions, all on the simulation's thread.
 */
final class Checker {
  final long seed;
  final Simulation sim;
  final List<ClientClock> clocks;
  final List<String> trace;
  final Lease[] held = new Lease[CLIENTS];
  final long[] validUntil = new long[CLIENTS];
  final int[] heldMask = new int[CLIENTS]; // the resources of each client's last lease
  final long[] grantedAt = new long[CLIENTS]; // when each client's last lease was granted
  // A store that checks fencing tokens: the highest token it accepted per resource; each
  // client's tokens (per resource, 0 for none) of its last lease; the writes it made after its
  // lease was overtaken (a newer grant on one of its resources), and how many the store accepted.
  final long[] storeToken = new long[Workload.RESOURCES.size()];
  final long[][] tokens = new long[CLIENTS][Workload.RESOURCES.size()];
  int staleWrites;
  int staleAccepted;
  final dev.redlock.LeaseLock[] locks = new dev.redlock.LeaseLock[CLIENTS]; // held through one

  final List<CompletableFuture<Lease>> pending =
      new ArrayList<>(java.util.Collections.nCopies(CLIENTS, null));

  // For the progress checker, on the simulation's time: when resources were held (from a grant
  // to its release's start, or to its keys' expiry at the latest), and when clients waited, each
  // {from, to, mask of the resources}.
  final List<long[]> busy = new ArrayList<>();
  final long[][] holding = new long[CLIENTS][];
  final List<long[]> waits = new ArrayList<>(); // {from, to, mask, client}
  // A set's waiter's place first in a queue, counted as a hold: {from, to, mask, client}.
  final List<long[]> reservations = new ArrayList<>();
  // Turn notices, as published for a client that could hear them: {when, client, resource}.
  final List<long[]> namings = new ArrayList<>();
  // Rounds denied because too few masters could vote for their client: {when, client}.
  final List<long[]> unavailable = new ArrayList<>();
  final long[] asyncFrom = new long[CLIENTS];
  final int[] blockingMask = new int[CLIENTS]; // the resources of a blocking wait under way
  long waitsEndBy; // when every async wait begun so far has ended, at the latest
  final int[] asyncMask = new int[CLIENTS];
  final List<long[]> isolations = new ArrayList<>(); // {client, from, until}
  int step;
  int grants;
  final long[] lastToken = new long[Workload.RESOURCES.size()]; // per resource
  long lastFault = Long.MIN_VALUE / 2;
  long worstOverrun;
  String violation;
  String fencing;
  String liveness;
  String state; // bounded state: what a master kept past its bound
  int failedAt = -1;
  // Since when each master is unfit (an evicting maxmemory-policy), or -1; and whether every
  // fault so far was calm, a partition or a master's pause, so that a vote's timing is judged.
  final long[] unfitSince = new long[SimHarness.MASTERS];
  boolean fitnessJudged = true;
  // Whether token order is judged: not once a majority of masters lost its fence counters while
  // a master's clock had stepped back, which the tokens' guarantee excludes (docs/safety.md).
  boolean fencingJudged = true;

  /**
   * When an unfit master's vote for a client is late: past the fitness re-check's interval (with
   * the client's clock's drift, 1%) and a round. The first late vote comes in the round that starts
   * the re-check (its client's first use of the master after the interval, however long after), and
   * still counts; the re-check's answers come within a node timeout.
   */
  static final long UNFIT_LATE_NANOS =
      dev.redlock.RedLock.PREFLIGHT_INTERVAL.toNanos() * 101 / 100 + SimHarness.NODE_TIMEOUT_NANOS;

  // Each client's first late vote from each unfit master (-1: none yet).
  final long[][] firstLateVote = new long[CLIENTS][SimHarness.MASTERS];

  /**
   * How long after a master's restart, or the end of a partition between it and a client, its votes
   * for that client are not judged late: a re-check that reached nothing leaves the last verdict
   * standing and is made again at the master's next use a tenth of the interval later (with the
   * client's clock's drift), then answers within a node timeout.
   */
  static final long RECHECK_AFTER_RESTART_NANOS =
      dev.redlock.RedLock.PREFLIGHT_INTERVAL.toNanos() / 10 * 101 / 100
          + SimHarness.NODE_TIMEOUT_NANOS;

  // Per client and master: votes before this are not judged late (a restart or a partition cut
  // a re-check off).
  final long[][] lateFrom = new long[CLIENTS][SimHarness.MASTERS];

  Checker(long seed, Simulation sim, List<ClientClock> clocks, List<String> trace) {
    this.seed = seed;
    this.sim = sim;
    this.clocks = clocks;
    this.trace = trace;
    java.util.Arrays.fill(unfitSince, -1);
    for (long[] row : firstLateVote) {
      java.util.Arrays.fill(row, -1);
    }
  }

  /**
   * Client {@code c} was granted a lease with these outcomes. An unfit master (excluded by default)
   * may vote for it until the client re-checks it: in rounds begun up to a node timeout after its
   * first late vote (see {@link #UNFIT_LATE_NANOS}), never after.
   */
  void voted(int c, List<dev.redlock.NodeOutcome> outcomes) {
    for (int m = 0; m < outcomes.size(); m++) {
      if (outcomes.get(m).status() != dev.redlock.NodeOutcome.Status.GRANTED
          || unfitSince[m] < 0
          || sim.now() - unfitSince[m] <= UNFIT_LATE_NANOS
          || sim.now() < lateFrom[c][m]) {
        continue;
      }
      if (firstLateVote[c][m] < 0) {
        firstLateVote[c][m] = sim.now(); // the round that starts the re-check
      } else if (sim.now() - firstLateVote[c][m] > 2 * SimHarness.NODE_TIMEOUT_NANOS
          && fitnessJudged
          && liveness == null) {
        failedHere();
        liveness =
            String.format(
                "seed %d step %d: master %d, unfit for %d ms, voted for client %d %d ms after its"
                    + " re-check began",
                seed,
                step,
                m,
                (sim.now() - unfitSince[m]) / 1_000_000,
                c,
                (sim.now() - firstLateVote[c][m]) / 1_000_000);
      }
    }
  }

  // Per client and master: when the client last sent the master a command that carries a vote
  // while its own fitness checks excluded that master (-1: never).
  final long[][] voteWhileExcluded = new long[CLIENTS][SimHarness.MASTERS];

  {
    for (long[] row : voteWhileExcluded) {
      java.util.Arrays.fill(row, -1);
    }
  }

  /**
   * Client {@code c} sent master {@code m} a command past its fitness decorator: one that carries a
   * vote ({@code vote}), while its fitness checks excluded {@code m} ({@code excluded}), is noted.
   */
  void sent(int c, int m, boolean vote, boolean excluded) {
    if (vote && excluded) {
      voteWhileExcluded[c][m] = sim.now();
    }
  }

  /**
   * Client {@code c} was granted a lease by a round of {@code elapsedNanos}: no master that client
   * excluded as unfit may have voted in it (an excluded master refuses every vote, a waiter's
   * acquire in turn at its gate included: R4). A grant whose round sent such a master a vote is
   * one.
   */
  void votedAfterExclusion(int c, List<dev.redlock.NodeOutcome> outcomes, long elapsedNanos) {
    long began = sim.now() - elapsedNanos - 1_000_000; // and a millisecond: the client's clock
    for (int m = 0; m < outcomes.size(); m++) {
      if (outcomes.get(m).status() == dev.redlock.NodeOutcome.Status.GRANTED
          && voteWhileExcluded[c][m] >= began
          && liveness == null) {
        failedHere();
        liveness =
            String.format(
                "seed %d step %d: master %d voted for client %d, which excluded it as unfit (its"
                    + " vote sent %d us before the grant)",
                seed, step, m, c, (sim.now() - voteWhileExcluded[c][m]) / 1_000);
      }
    }
  }

  // Per client, the masters each token of its rounds in flight was sent an acquire (a bit per
  // master), the latest rounds' only; and those of its async acquisition's rounds when it was
  // cancelled, with when.
  private final List<java.util.Map<String, Integer>> asked = askedPerClient();
  private final List<java.util.Map<String, Integer>> askedBeforeCancel = askedPerClient();
  private final long[] cancelledAt = new long[CLIENTS];

  private static List<java.util.Map<String, Integer>> askedPerClient() {
    List<java.util.Map<String, Integer>> maps = new ArrayList<>();
    for (int c = 0; c < CLIENTS; c++) {
      maps.add(
          new java.util.LinkedHashMap<>() {
            @Override
            protected boolean removeEldestEntry(java.util.Map.Entry<String, Integer> eldest) {
              return size() > 64; // a client's rounds in flight are a handful
            }
          });
    }
    return maps;
  }

  /**
   * Client {@code c} sent master {@code m} an acquire of its round with token {@code token}. A
   * round of an acquisition cancelled since asks no master it had not asked before the cancel (R7:
   * a gate that answers after the cancel must not open the round to the others; docs/fairness.md):
   * it would only take a lock no one wants, for about a round. Sent again to a master it asked
   * before (a script reloaded) is the same ask.
   */
  void acquireSent(int c, int m, String token) {
    Integer before = askedBeforeCancel.get(c).get(token);
    if (before != null) {
      if ((before >> m & 1) == 0 && liveness == null) {
        failedHere();
        liveness =
            String.format(
                "seed %d step %d: client %d's async acquisition, cancelled %d us before, sent master"
                    + " %d an acquire (token %s) that it had not sent before the cancel: a lock no"
                    + " one wants",
                seed,
                step,
                c,
                (sim.now() - cancelledAt[c]) / 1_000,
                m,
                token.substring(0, Math.min(8, token.length())));
      }
      return;
    }
    asked.get(c).merge(token, 1 << m, (a, b) -> a | b);
  }

  /**
   * Client {@code c}'s async acquisition was cancelled: the rounds it had sent are its (a client
   * waiting asynchronously runs no other acquisition).
   */
  void cancelled(int c) {
    askedBeforeCancel.get(c).clear();
    askedBeforeCancel.get(c).putAll(asked.get(c));
    asked.get(c).clear();
    cancelledAt[c] = sim.now();
  }

  /** Client {@code c} is cut off from master {@code m} until {@code until}. */
  void cutOff(int c, int m, long until) {
    lateFrom[c][m] = Math.max(lateFrom[c][m], until + RECHECK_AFTER_RESTART_NANOS);
  }

  /** Master {@code m} restarted: a re-check it cut off is made again later. */
  void restarted(int m) {
    restarts.add(new long[] {sim.now(), m});
    for (long[] row : lateFrom) {
      row[m] = Math.max(row[m], sim.now() + RECHECK_AFTER_RESTART_NANOS);
    }
    for (long[] row : firstLateVote) {
      row[m] = -1;
    }
  }

  /** Master {@code m} is fit again. */
  void fit(int m) {
    unfitSince[m] = -1;
    fitAt[m] = sim.now();
    for (long[] row : firstLateVote) {
      row[m] = -1;
    }
  }

  boolean failed() {
    return violation != null || fencing != null || liveness != null || order != null;
  }

  /**
   * Client {@code c}'s process died: its lease (if any) stays valid by its own measure and its keys
   * live their TTL, but it holds nothing now; its async wait ends with it.
   */
  void crashed(int c) {
    if (pending.get(c) != null) {
      pending.set(c, null);
      endWait(c, asyncFrom[c], asyncMask[c]);
    }
    gone(c);
    trace.add(sim.now() + " " + c + " crashed");
  }

  /**
   * Client {@code c}'s RedLock closed by its program (a shutdown), a new one in its place: as after
   * a crash, a lease it still held stays valid by its own measure, its keys live their TTL, and its
   * lock is gone; but its async wait must have ended at the close (failed): a caller's future left
   * pending would wait for ever.
   */
  void closed(int c) {
    if (pending.get(c) != null && liveness == null) {
      failedHere();
      liveness =
          String.format(
              "seed %d step %d: client %d's async wait still pending after its RedLock closed",
              seed, step, c);
    }
    gone(c);
    trace.add(sim.now() + " " + c + " closed");
  }

  /** Client {@code c}'s RedLock gone, holding nothing (what it held lives on to its expiry). */
  private void gone(int c) {
    held[c] = null; // validUntil stays: no one else may be granted before it
    java.util.Arrays.fill(firstLateVote[c], -1); // a new RedLock checks every master at its start
    java.util.Arrays.fill(voteWhileExcluded[c], -1); // its votes were the old RedLock's
    locks[c] = null; // its RedLock's lock, gone with it
    queued.values().removeIf(entry -> entry[2] == c); // its waiters went with it
    latestWaiter[c] = null;
    holding[c] = null; // its interval runs to its keys' expiry
  }

  /**
   * The end of the schedule: held leases are left to expire (none is released), but a held {@link
   * dev.redlock.LeaseLock} is unlocked, as its program would: it renews its lease until then.
   */
  void releasingAll() {
    for (int c = 0; c < CLIENTS; c++) {
      dev.redlock.LeaseLock lock = locks[c];
      if (lock != null) {
        releasing(c);
        try {
          lock.unlock();
        } catch (dev.redlock.LeaseLostException e) { // lost while held: released all the same
          trace.add(sim.now() + " " + c + " lock lost");
        }
        trace.add(sim.now() + " " + c + " unlocked at the end");
      }
    }
    java.util.Arrays.fill(holding, null);
  }

  /** A liveness failure found once the run is over, at its last step, unless one came before. */
  void lateAtTheEnd(int lastStep, String why) {
    if (liveness == null) {
      step = lastStep;
      failedHere();
      liveness = why;
    }
  }

  void failedHere() {
    if (failedAt < 0) {
      failedAt = step;
    }
  }

  /** Whether another client than {@code c} holds a valid lease or waits. */
  boolean contended(int c) {
    for (int other = 0; other < CLIENTS; other++) {
      if (other != c
          && ((held[other] != null && validUntil[other] > sim.now())
              || pending.get(other) != null)) {
        return true;
      }
    }
    return false;
  }

  /** A wait of {@code waitNanos} by client {@code c}, begun at {@code startedAt} on its clock. */
  void waited(int c, long startedAt, long waitNanos) {
    long overrun = clocks.get(c).waitReading() - startedAt - waitNanos;
    worstOverrun = Math.max(worstOverrun, overrun);
    if (overrun > OVERRUN_BOUND_NANOS && liveness == null) {
      failedHere();
      liveness =
          String.format(
              "seed %d step %d: client %d's wait of %d ms ended %d ms late",
              seed, step, c, waitNanos / 1_000_000, overrun / 1_000_000);
    }
  }

  /**
   * Client {@code c}'s lease was extended (by {@code extend} or by renewal): no other client may
   * hold a valid lease now, and its validity and its keys' life run from now.
   */
  void renewed(int c) {
    Lease lease = held[c];
    if (lease == null || !lease.isValid()) {
      return;
    }
    trace.add(sim.now() + " " + c + " renewed");
    aloneNow(c, "extended");
    ClientClock clock = clocks.get(c);
    validUntil[c] = clock.toSimulation(clock.read() + lease.remainingValidity().toNanos());
    if (holding[c] != null) {
      holding[c][1] = Math.max(holding[c][1], sim.now() + TTL.toNanos());
    }
  }

  /**
   * Client {@code c}'s wait since {@code from} for the resources of {@code mask} ended now: counted
   * for progress unless the client was cut off from its majority meanwhile ({@link
   * Fault#ISOLATED_WAITER}): it cannot win; and from its last round that too few masters could vote
   * for, if any.
   */
  void endWait(int c, long from, int mask) {
    long began = from;
    if (Integer.bitCount(blockingMask[c]) > 1) {
      trace.add(sim.now() + " " + c + " overtaken " + overtaken[c]);
    }
    blockingMask[c] = 0;
    for (long[] reservation : reservations) {
      if (reservation[3] == c && reservation[1] > sim.now()) {
        reservation[1] = sim.now(); // its wait is over: it keeps no place
      }
    }
    for (long[] isolation : isolations) { // any of its isolations, not only the last
      if (isolation[0] == c && from < isolation[2] && sim.now() >= isolation[1]) {
        return;
      }
    }
    // Counted from its last round that too few masters could vote for, if any: until then it was
    // a matter of availability (a client started after a master's restart keeps it out for the
    // restart guard's time), not of who waits for whom.
    for (long[] denial : unavailable) {
      if (denial[1] == c && denial[0] >= from && denial[0] <= sim.now()) {
        from = denial[0];
      }
    }
    waits.add(new long[] {from, sim.now(), mask, c, began});
  }

  boolean spun; // the simulation wedged: its clients cannot be closed

  /** A spin of the simulation ({@link Simulation#SPIN_LIMIT}) is a liveness failure. */
  void spin(IllegalStateException e) {
    if (e.getMessage() == null || !e.getMessage().startsWith("a spin")) {
      throw e;
    }
    spun = true;
    failedHere();
    if (liveness == null) {
      liveness = String.format("seed %d step %d: %s", seed, step, e.getMessage());
    }
    trace.add(sim.now() + " " + e.getMessage());
  }

  /**
   * Client {@code c} writes to the fenced store with its last lease's tokens: the store accepts a
   * token at least as high as every one it accepted on that resource. A write made after a newer
   * grant on one of its resources is stale: the critical section overlapped another's (mutual
   * exclusion broken, a violation); and since every holder writes as it is granted, the store must
   * refuse it (accepted, a fencing failure).
   */
  void write(int c) {
    for (int r = 0; r < storeToken.length; r++) {
      long token = tokens[c][r];
      if ((heldMask[c] >> r & 1) == 0 || token == 0) {
        continue; // not its resource, or its token unknown: a careful client does not write
      }
      int newer = -1;
      for (int other = 0; other < CLIENTS; other++) {
        if (other != c && (heldMask[other] >> r & 1) == 1 && grantedAt[other] > grantedAt[c]) {
          newer = other;
        }
      }
      boolean accepted = token >= storeToken[r];
      if (accepted) {
        storeToken[r] = token;
      }
      if (newer >= 0) {
        staleWrites++;
        staleAccepted += accepted ? 1 : 0;
        trace.add(
            sim.now() + " " + c + " stale write, " + (accepted ? "accepted" : "refused by token"));
        if (violation == null) {
          failedHere();
          violation =
              String.format(
                  "seed %d step %d: client %d wrote %s at %d ns after client %d was granted it",
                  seed, step, c, Workload.RESOURCES.get(r), sim.now(), newer);
        }
        if (accepted && fencing == null) {
          failedHere();
          fencing =
              String.format(
                  "seed %d step %d: the store accepted client %d's stale write (token %d)",
                  seed, step, c, token);
        }
      }
    }
  }

  /**
   * Whether an operator may admit a master restarted without its data at {@code restartedAt}, by
   * {@code admitFreshNodes}'s rule: no lease valid now can have had a key on it before the restart
   * (each was granted more than two node timeouts after it: its round began after it), and two TTLs
   * have passed.
   */
  boolean safeToAdmit(long restartedAt) {
    if (restartedAt == Long.MIN_VALUE / 2) {
      return true; // an admission at once, unsafe on purpose (ADMIT_TOO_SOON), still to be made
    }
    if (sim.now() - restartedAt <= 2 * TTL.toNanos()) {
      return false;
    }
    for (int c = 0; c < CLIENTS; c++) {
      if (validUntil[c] > sim.now()
          && grantedAt[c] - 2 * SimHarness.NODE_TIMEOUT_NANOS <= restartedAt) {
        return false;
      }
    }
    return true;
  }

  /** Whether a client is cut off now ({@link Fault#ISOLATED_WAITER}). */
  boolean isolatedNow() {
    for (int c = 0; c < CLIENTS; c++) {
      if (isolated(c)) {
        return true;
      }
    }
    return false;
  }

  /** Whether client {@code c} is cut off now. */
  boolean isolated(int c) {
    for (long[] isolation : isolations) {
      if (isolation[0] == c && isolation[1] <= sim.now() && isolation[2] > sim.now()) {
        return true;
      }
    }
    return false;
  }

  /**
   * The library found client {@code c}'s {@code lease} lost (an extend or a renewal that a majority
   * refused): from now on the client knows it holds nothing ({@code isValid()} is false, {@code
   * onLost()} has completed), and the library releases what is left of it.
   */
  void lost(int c, Lease lease) {
    if (held[c] == lease) {
      trace.add(sim.now() + " " + c + " lost");
      validUntil[c] = Math.min(validUntil[c], sim.now());
      if (holding[c] != null) {
        holding[c][1] = Math.min(holding[c][1], sim.now());
        holding[c] = null;
      }
    }
  }

  /** Client {@code c} starts releasing its lease: from now on it no longer holds it. */
  void releasing(int c) {
    if (holding[c] != null) {
      holding[c][1] = Math.min(holding[c][1], sim.now());
      holding[c] = null;
    }
    held[c] = null;
    locks[c] = null;
    validUntil[c] = 0;
  }

  /**
   * The longest time during which some client waited (a blocking or async acquire with a {@code
   * maxWait}) while every resource it waited for was free (no lease on it granted and neither
   * released nor expired), on the simulation's time: how long free resources went to no waiter.
   */
  long longestFrom = -1; // when the longest unserved wait began

  long longestUnservedWait() {
    int names = Workload.RESOURCES.size();
    List<long[]> changes = new ArrayList<>(); // {time, +1 or -1, mask, 0 busy or 1 waiting}
    List<long[]> held = new ArrayList<>(busy);
    held.addAll(reservations);
    for (long[] b : held) {
      changes.add(new long[] {b[0], 1, b[2], 0});
      changes.add(new long[] {b[1], -1, b[2], 0});
    }
    for (long[] w : waits) {
      changes.add(new long[] {w[0], 1, w[2], 1});
      changes.add(new long[] {w[1], -1, w[2], 1});
    }
    changes.sort((x, y) -> Long.compare(x[0], y[0]));
    long longest = 0;
    long since = -1; // when a waiter was last seen with all its resources free, or -1
    int[] holders = new int[names]; // per resource
    int[] waiting = new int[1 << names]; // per mask
    for (int i = 0; i < changes.size(); ) {
      long at = changes.get(i)[0];
      for (; i < changes.size() && changes.get(i)[0] == at; i++) {
        long[] change = changes.get(i);
        int mask = (int) change[2];
        if (change[3] == 1) {
          waiting[mask] += (int) change[1];
        } else {
          for (int r = 0; r < names; r++) {
            holders[r] += (mask >> r & 1) * (int) change[1];
          }
        }
      }
      int busyMask = 0;
      for (int r = 0; r < names; r++) {
        busyMask |= holders[r] > 0 ? 1 << r : 0;
      }
      boolean unserved = false;
      for (int mask = 1; mask < waiting.length; mask++) {
        unserved |= waiting[mask] > 0 && (mask & busyMask) == 0;
      }
      if (unserved && since < 0) {
        since = at;
      } else if (!unserved && since >= 0) {
        if (at - since > longest) {
          longest = at - since;
          longestFrom = since;
        }
        since = -1;
      }
    }
    return longest;
  }

  /**
   * The most grants to other clients of the resources a set's blocking wait asks for, during that
   * wait, with wake-ups (polling has no turns: a set's waiter may lose every round) and no fault
   * but {@link Fault#STEADY_CONTENTION}. A set's waiter queues at each of its resources' gates
   * after its first refused round, behind at most one waiter of each other client
   * (docs/fairness.md); four grants were the most seen in 100 seeds of 1,000 steps of that family
   * (5,706 set waits), and the bound is twice that. A set's waiter that never queues (R6) saw up to
   * 150.
   */
  static final int OVERTAKEN_BOUND = 8;

  final int[] overtaken = new int[CLIENTS]; // per client: grants to others during its set's wait
  boolean overtakenJudged = true; // until a fault other than steady contention

  /** Client {@code c} was granted {@link #heldMask}: a grant to others for a set's waiter. */
  private void overtook(int c) {
    for (int w = 0; w < CLIENTS; w++) {
      if (w == c || Integer.bitCount(blockingMask[w]) < 2 || (blockingMask[w] & heldMask[c]) == 0) {
        continue;
      }
      overtaken[w]++;
      if (overtaken[w] > OVERTAKEN_BOUND
          && overtakenJudged
          && SimHarness.wakeUps(seed)
          && liveness == null) {
        failedHere();
        liveness =
            String.format(
                "seed %d step %d: client %d's wait for a set saw %d grants of its resources to"
                    + " others (bound %d)",
                seed, step, w, overtaken[w], OVERTAKEN_BOUND);
      }
    }
  }

  /** A release (or a yield) at a gate named client {@code c}'s waiter on resource {@code r}. */
  void named(int c, int r, String waiter) {
    // A waiter whose ask no observer saw is taken for the wait under way: judged, as before.
    namings.add(new long[] {sim.now(), c, r, firstAsked.getOrDefault(waiter, Long.MAX_VALUE)});
    if (Integer.bitCount(blockingMask[c]) > 1 && (blockingMask[c] >> r & 1) == 1) {
      // A set's waiter first in the queue of r keeps its place there (r free, the waiters behind
      // it refused) while another of its resources is taken, until it has them all or yields
      // (docs/fairness.md): r counts as held meanwhile, for the yield's bound at most.
      reservations.add(new long[] {sim.now(), sim.now() + SimHarness.SET_HOLD_NANOS, 1L << r, c});
    }
    trace.add(sim.now() + " " + c + " named for " + Workload.RESOURCES.get(r));
    inOrder(c, r, waiter);
  }

  // Order at the gates: each waiter that asked at its gate (queue.lua's acquire, or a set's join at
  // each of its resources' gates) and has not left, per resource, with when it first asked there,
  // its resource and its client; and each client's latest waiter.
  private final java.util.Map<String, long[]> queued = new java.util.HashMap<>();
  private final String[] latestWaiter = new String[CLIENTS];
  boolean orderJudged = true; // until the first fault: then a waiter may lose its place by rule
  String order; // the first waiter named before one that asked earlier and still waits

  /** The key of {@code waiter}'s place in the queue of resource {@code r}. */
  private static String placeOf(String waiter, int r) {
    return waiter + '@' + r;
  }

  // When each waiter first asked at a gate: a naming is of the wait under way only if its waiter
  // first asked after that wait began (a client whose wait ended may start the next at once, and
  // a naming of the one that ended may come after).
  private final java.util.Map<String, Long> firstAsked = new java.util.HashMap<>();

  /** Client {@code c}'s {@code waiter} asked at the gate of resource {@code r}. */
  void queueAsk(int c, int r, String waiter) {
    firstAsked.putIfAbsent(waiter, sim.now());
    queued.putIfAbsent(placeOf(waiter, r), new long[] {sim.now(), r, c});
    latestWaiter[c] = waiter;
  }

  /** {@code waiter} left the queue of resource {@code r} (granted, or its wait ended). */
  void queueLeave(int r, String waiter) {
    queued.remove(placeOf(waiter, r));
  }

  // Per master, the tokens of the leases whose release ran there. A connection's commands reach
  // the master in order, and what a closed one carried is lost (the library's links close with
  // SO_LINGER 0), so a lease's acquire can reach a master after its release only if the client
  // sent it again (after a NOSCRIPT) although its release had run: it sets a key no one will
  // release, which keeps every other client out for a TTL.
  private final List<java.util.Set<String>> released = perMaster();

  /** A release of the lease whose token is {@code token} ran on master {@code m} (no NOSCRIPT). */
  void releaseRan(int m, String token) {
    released.get(m).add(token);
  }

  // Per master, the tokens of the leases whose acquire ran there.
  private final List<java.util.Set<String>> acquired = perMaster();

  private static List<java.util.Set<String>> perMaster() {
    List<java.util.Set<String>> sets = new ArrayList<>();
    for (int m = 0; m < SimHarness.MASTERS; m++) {
      sets.add(new java.util.HashSet<>());
    }
    return sets;
  }

  /**
   * Client {@code c} released the lease whose token is {@code token}, then closed its RedLock, with
   * every master healthy and reachable: a close waits for the commands in flight (up to the node
   * timeout), so the release ran on every master where the lease's acquire ran.
   */
  void releasedBeforeClose(int c, String token) {
    for (int m = 0; m < SimHarness.MASTERS && state == null; m++) {
      if (acquired.get(m).contains(token) && !released.get(m).contains(token)) {
        failedHere();
        state =
            String.format(
                "seed %d step %d: client %d released a lease and closed its RedLock, and the"
                    + " release never ran on master %d, where its acquire had (token %s): its key"
                    + " stays for a TTL",
                seed, step, c, m, token.substring(0, Math.min(8, token.length())));
      }
    }
  }

  /** An acquire of the lease whose token is {@code token} ran on master {@code m}. */
  void acquireRan(int m, String token) {
    acquired.get(m).add(token);
    if (state == null && released.get(m).contains(token)) {
      failedHere();
      state =
          String.format(
              "seed %d step %d: an acquire ran on master %d at %d ns after its own lease's"
                  + " release had run there (token %s): a key no one will release",
              seed, step, m, sim.now(), token.substring(0, Math.min(8, token.length())));
    }
  }

  /** Whether client {@code c} waits for resource {@code r} now. */
  private boolean waitingFor(int c, int r) {
    int mask = blockingMask[c] | (pending.get(c) != null ? asyncMask[c] : 0);
    return (mask >> r & 1) == 1;
  }

  /**
   * The gate's queue is first come, first served (docs/fairness.md): a waiter is named only when no
   * waiter that first asked at that gate before it still waits there (its client alive, waiting for
   * the resource with that waiter, never left). Judged in runs without faults, where no rule lets a
   * live waiter lose its place (it goes stale by its own window only once its client stops asking),
   * but a set's: first in a queue while another of its resources stays taken, it yields its place
   * by rule (docs/fairness.md), so a waiter on a set is never the one that asked before.
   */
  private void inOrder(int c, int r, String waiter) {
    long[] named = queued.get(placeOf(waiter, r));
    if (!orderJudged || order != null || named == null) {
      return;
    }
    for (java.util.Map.Entry<String, long[]> entry : queued.entrySet()) {
      long[] other = entry.getValue();
      int client = (int) other[2];
      if (other[1] == r
          && other[0] < named[0]
          && client != c
          && Integer.bitCount(blockingMask[client]) < 2
          && entry.getKey().equals(placeOf(latestWaiter[client], r))
          && waitingFor(client, r)) {
        failedHere();
        order =
            String.format(
                "seed %d step %d: client %d's waiter named for %s at %d ns while client %d's,"
                    + " which asked at the gate %d ms earlier, still waited",
                seed,
                step,
                c,
                Workload.RESOURCES.get(r),
                sim.now(),
                client,
                (named[0] - other[0]) / 1_000_000);
        return;
      }
    }
  }

  /**
   * How long a restarted master may be kept from voting by a client that did not see the run before
   * (it cannot tell that run lost nothing): the restart guard's time, the longest lease stretched
   * by the drift factor, and a second more.
   */
  static final long GUARDED_NANOS = 62_000_000_000L;

  final List<long[]> restarts = new ArrayList<>(); // {when, master} of every restart
  final long[] fitAt = new long[SimHarness.MASTERS]; // when each was last made fit again

  {
    java.util.Arrays.fill(fitAt, Long.MIN_VALUE / 2);
  }

  /**
   * A round of client {@code c} was denied: too few masters could vote for it. Noted if a majority
   * was out then for reasons of their own (unfit, or made fit again since the client's last
   * re-check, or restarted within the guard's time), which excuses the wait that far.
   */
  void unavailable(int c) {
    int out = 0;
    for (int m = 0; m < SimHarness.MASTERS; m++) {
      out +=
          unfitSince[m] >= 0
                  || sim.now() - fitAt[m] <= UNFIT_LATE_NANOS
                  || restartedWithin(m, GUARDED_NANOS)
              ? 1
              : 0;
    }
    if (2 * out >= SimHarness.MASTERS) {
      unavailable.add(new long[] {sim.now(), c});
    }
  }

  /** Whether master {@code m} restarted within the last {@code nanos}. */
  private boolean restartedWithin(int m, long nanos) {
    for (long[] restart : restarts) {
      if (restart[1] == m && sim.now() - restart[0] < nanos) {
        return true;
      }
    }
    return false;
  }

  long longestNamedFrom = -1; // when the naming that waited longest came
  int longestNamedClient = -1;

  /**
   * The longest a waiter named by a turn notice went without the resource, on the simulation's
   * time: from the notice's publishing, while that client still waited for the resource, to the
   * first of its wait's end (granted, run out, cancelled, crashed) and a grant of the resource to
   * anyone. A notice for a client not waiting for the resource is not counted, nor one that names
   * the waiter of an earlier wait of that client (a wait that ended just before the next began: the
   * steady contention's workers ask again at once), nor one after which the client's rounds found
   * too few masters able to vote for it (a matter of availability, not of turns: a client started
   * after a master's restart cannot tell that the run before lost nothing, and keeps it out for the
   * restart guard's time). Only waiters on one resource: a set's waiter named may find another of
   * its resources taken, and keeps its place meanwhile (a reservation, judged by {@link
   * #longestUnservedWait}).
   */
  long longestNamedWait() {
    long longest = 0;
    for (long[] naming : namings) {
      long at = naming[0];
      int c = (int) naming[1];
      int bit = 1 << naming[2];
      long served = Long.MAX_VALUE;
      boolean set = false;
      for (long[] w : waits) {
        if (w[3] == c && (w[2] & bit) != 0 && w[0] <= at && at < w[1] && naming[3] >= w[4]) {
          served = w[1];
          set = Long.bitCount(w[2]) > 1;
        }
      }
      if (served == Long.MAX_VALUE || set) {
        continue; // not waiting for it then, or not such a waiter
      }
      for (long[] b : busy) {
        if (((int) b[2] & bit) != 0 && b[1] > at) {
          served = Math.min(served, Math.max(b[0], at));
        }
      }
      boolean excused = false;
      for (long[] denial : unavailable) {
        excused |= denial[1] == c && at <= denial[0] && denial[0] <= served;
      }
      for (long[] restart : restarts) { // a release it cut off is sent again 100 ms later
        excused |=
            at - 2 * SimHarness.NODE_TIMEOUT_NANOS <= restart[0]
                && restart[0] <= at + SimHarness.NAMED_BOUND_NANOS;
      }
      if (excused) {
        continue;
      }
      if (served - at > longest) {
        longest = served - at;
        longestNamedFrom = at;
        longestNamedClient = c;
      }
    }
    return longest;
  }

  /**
   * Mutual exclusion, as client {@code c} is {@code what} (granted, extended) a lease on the
   * resources of {@code heldMask[c]}: no other client's lease on any of them may be valid now. The
   * first failure is kept.
   */
  private void aloneNow(int c, String what) {
    for (int other = 0; other < CLIENTS; other++) {
      if (other != c
          && (heldMask[other] & heldMask[c]) != 0
          && validUntil[other] > sim.now()
          && violation == null) {
        failedHere();
        violation =
            String.format(
                "seed %d step %d: client %d %s at %d ns while client %d's lease is valid until"
                    + " %d ns",
                seed, step, c, what, sim.now(), other, validUntil[other]);
      }
    }
  }

  void granted(int c, Lease lease) {
    trace.add(sim.now() + " " + c + " granted " + lease.resource());
    heldMask[c] = Workload.mask(lease.resources());
    grantedAt[c] = sim.now();
    overtook(c);
    aloneNow(c, "granted");
    held[c] = lease;
    // Its keys were set before now.
    holding[c] = new long[] {sim.now(), sim.now() + TTL.toNanos(), heldMask[c]};
    busy.add(holding[c]);
    try { // the token, chosen during the acquire: above every earlier grant's on each resource
      for (String name : lease.resources()) {
        int r = Workload.RESOURCES.indexOf(name);
        long token = lease.fencingToken(name);
        trace.add(sim.now() + " " + c + " token " + token + " " + name);
        if (token <= lastToken[r] && fencingJudged && fencing == null) {
          failedHere();
          fencing =
              String.format(
                  "seed %d step %d: client %d's token %d of %s after a grant's %d",
                  seed, step, c, token, name, lastToken[r]);
        }
        lastToken[r] = Math.max(lastToken[r], token);
        tokens[c][r] = token;
      }
    } catch (RedLockException e) { // lost meanwhile, or no quorum to store it
      trace.add(sim.now() + " " + c + " no token");
      java.util.Arrays.fill(tokens[c], 0);
    }
    write(c); // the holder's work begins at once
    lease.onLost().thenRun(() -> lost(c, lease));
    // Until when the client believes it holds the lease, on the simulation's true time.
    ClientClock clock = clocks.get(c);
    validUntil[c] = clock.toSimulation(clock.read() + lease.remainingValidity().toNanos());
    grants++;
  }
}
