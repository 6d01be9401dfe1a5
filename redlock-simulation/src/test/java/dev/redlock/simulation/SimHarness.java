package dev.redlock.simulation;

import dev.redlock.Lease;
import dev.redlock.LeaseLock;
import dev.redlock.LeaseLostException;
import dev.redlock.LockTakenException;
import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import dev.redlock.RedLockException;
import dev.redlock.RedLockListener;
import dev.redlock.SimRedLocks;
import dev.redlock.internal.transport.SimNodeClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

/**
 * One simulated run: five simulated masters, three RedLocks built from the public builder, one
 * resource taken and given back in turn, and the faults asked for, all on one seeded virtual clock;
 * the checker looks at each grant: no other client's lease may still be valid (on the simulation's
 * true time, which every clock here follows).
 */
final class SimHarness {

  /** The fault families a run can have. */
  enum Fault {
    /** A master cut off from one client for up to a second: messages wait for the heal. */
    PARTITION,
    /** A master restarted without its data (a new run, its connections reset): masters 2 to 4. */
    RESTART_EMPTY,
    /**
     * A master restarted from a lossless AOF ({@code appendonly yes}, {@code appendfsync always},
     * as masters 0 and 1 are configured): its keys kept, a new run.
     */
    RESTART_KEEPING_DATA,
    /**
     * A master (2 to 4) saves a snapshot ({@code BGSAVE}) half the time, and otherwise restarts
     * from its last one (empty if it saved none): the keys it had then, every later write lost (a
     * lock key, a queue, the fence counter gone back), a new run.
     */
    RESTART_FROM_SNAPSHOT,
    /** {@code SCRIPT FLUSH}: the master forgets the scripts (NOSCRIPT, then a reload). */
    SCRIPT_FLUSH,
    /**
     * A master's clock set to run up to 0.5% fast or slow from now on: within the drift the library
     * allows for ({@code driftFactor} 0.01).
     */
    CLOCK_DRIFT,
    /**
     * A master's wall clock stepped back by up to 10 s (an NTP step): its keys live longer, and its
     * TIME goes back, which fencing tokens must survive.
     */
    CLOCK_STEP_BACK,
    /**
     * A client's wake-up connection to a master dropped (as {@code CLIENT KILL TYPE pubsub}): the
     * notices published until it is back are lost to it.
     */
    SUBSCRIBER_RESET,
    /**
     * A client cut off from every master but one for 5 s (one client at a time), which then waits
     * for the lock (async, up to 5 s) and takes no other step until the heal: when the one it
     * reaches is the resource's gate, it is queued first there and cannot win, and the others must
     * still get the lock (the head yields after two stale windows). With it in a family, one wait
     * in eight lasts up to 3 s, long enough to outlast such a head.
     */
    ISOLATED_WAITER,
    /**
     * A client's process killed ({@code kill -9}) and started again: whatever it held stays on the
     * masters until its TTL, a queue entry of its wait until it goes stale, its connections gone.
     */
    CLIENT_CRASH,
    /**
     * An assumption broken on purpose: a master's clock set to run twice as fast from now on, far
     * beyond the drift factor, so its keys expire in half their TTL.
     */
    CLOCK_TOO_FAST,
    /**
     * A client's clock set to run up to 0.5% fast or slow from now on (its validity, deadlines and
     * timers measured with it): within the drift factor.
     */
    CLIENT_CLOCK_DRIFT,
    /**
     * An assumption broken on purpose: a client's clock set to run at half speed, so that it
     * believes its lease valid for twice as long as it is.
     */
    CLIENT_CLOCK_TOO_SLOW,
    /**
     * A master restarted without its data (masters 2 to 4), then admitted by an operator ({@code
     * admitFreshNodes}) at the first step when its Javadoc says that is safe: no lease valid then
     * was granted before the restart (its round begun up to two node timeouts earlier), and two
     * TTLs have passed since.
     */
    RESTART_THEN_ADMIT,
    /**
     * A master's process paused ({@code SIGSTOP}) for up to 2 s: every client's messages to it, and
     * its replies and notices, wait for it to go on; its clock (and its keys' expiry) runs on.
     */
    MASTER_PAUSE,
    /**
     * An assumption broken on purpose: a client that holds a lease checks that it is valid, then
     * its process pauses (a GC) past the lease's validity, then it writes to the fenced store.
     */
    CLIENT_PAUSE,
    /**
     * An assumption broken on purpose: masters 2 to 4 restarted without their data and admitted at
     * once, while a lease they held may still be valid.
     */
    ADMIT_TOO_SOON
  }

  /** A master's clock: microseconds since the epoch at a rate of the simulation's time. */
  private static final class MasterClock {
    private final Simulation sim;
    private double rate = 1;
    private double offsetMicros = Simulation.EPOCH_MICROS; // its reading at simulation time 0

    MasterClock(Simulation sim) {
      this.sim = sim;
    }

    long micros() {
      return (long) (offsetMicros + rate * sim.now() / 1000.0);
    }

    /** Steps the clock by {@code micros} (back if negative). */
    void step(long micros) {
      offsetMicros += micros;
    }

    /** From now on, {@code newRate} times the simulation's rate, with no jump. */
    void rate(double newRate) {
      long now = micros();
      rate = newRate;
      offsetMicros = now - newRate * sim.now() / 1000.0;
    }
  }

  /**
   * A run's trace and figures; its first violation of mutual exclusion (or null); its first fencing
   * token that did not rise above every earlier grant's (or null); its first wait that outlasted
   * its {@code maxWait} by more than {@link #OVERRUN_BOUND_NANOS} (or null); the step of the first
   * of these (or -1).
   *
   * @param tries acquisitions tried (a wait of many rounds is one)
   * @param contended tries made while another client held a valid lease or was waiting
   * @param nearFault tries made within a second of a fault
   * @param notices wake-up notices that reached a client
   * @param worstOverrunNanos the longest a wait lasted past its {@code maxWait}
   * @param longestUnservedNanos the longest some client waited while no client held the resource
   */
  record Run(
      List<String> trace,
      int tries,
      int contended,
      int nearFault,
      int grants,
      int faults,
      long notices,
      long events,
      String violation,
      String fencing,
      String liveness,
      String state,
      long worstOverrunNanos,
      long longestUnservedNanos,
      int failedAt) {

    /** The first failure of any checker, or null. */
    String failure() {
      return violation != null
          ? violation
          : fencing != null ? fencing : liveness != null ? liveness : state;
    }
  }

  /** What a client does at its step when it holds nothing. */
  enum Op {
    /** {@code tryAcquire}: one round. */
    TRY,
    /** {@code acquire} with a {@code maxWait}: the calling (simulation's) thread blocked. */
    WAIT,
    /**
     * {@code acquireAsync} with a {@code maxWait}: the client's next step with {@code release}
     * cancels it if it is still waiting.
     */
    ASYNC,
    /**
     * {@code withLock} with a {@code maxWait}: the body holds the lease for up to four gaps (past
     * its TTL: renewal keeps it), then the lease is released.
     */
    WITH_LOCK
  }

  /**
   * One step of a run's schedule: a fault to inject first (or null) with its random choices, then
   * an operation: client {@code client} acquires by {@code op} (waiting up to {@code waitNanos}) if
   * it holds nothing, else releases if {@code release} (else holds on), or cancels its async wait
   * if {@code release}; then {@code gapNanos} pass. Drawn up front from the seed, apart from the
   * network's delays, so that a schedule can be shrunk one step or fault at a time.
   */
  record Step(
      Fault fault,
      int master,
      int other,
      double value,
      int client,
      Op op,
      long waitNanos,
      boolean release,
      long gapNanos,
      int target) {
    Step withoutFault() {
      return new Step(null, master, other, value, client, op, waitNanos, release, gapNanos, target);
    }

    /** The resources this step's acquire asks for: {@link #TARGETS}. */
    List<String> resources() {
      return TARGETS.get(target);
    }
  }

  /** The resources of a run: the first is the one most steps want. */
  static final List<String> RESOURCES = List.of("resource", "other", "third");

  /**
   * What an acquire asks for, one drawn per step: one resource in six steps of ten, a set in three
   * (overlapping each other and the single resources), the second resource alone in one. Sets are
   * taken by {@code tryAcquireAll}, {@code acquireAll} and {@code withLock} on a collection; the
   * async calls take one resource, so an async step on a set takes its first.
   */
  static final List<List<String>> TARGETS =
      List.of(
          List.of("resource"),
          List.of("resource"),
          List.of("resource"),
          List.of("resource"),
          List.of("resource"),
          List.of("resource"),
          List.of("resource", "other"),
          List.of("other", "third"),
          List.of("third", "other", "resource"),
          List.of("other"));

  /** The bits of {@code names} among {@link #RESOURCES}. */
  static int mask(List<String> names) {
    int mask = 0;
    for (String name : names) {
      mask |= 1 << RESOURCES.indexOf(name);
    }
    return mask;
  }

  /**
   * A schedule of {@code steps} steps, a fault of {@code faults} one step in {@code faultEvery}.
   */
  static List<Step> schedule(long seed, int steps, Set<Fault> faults, int faultEvery) {
    java.util.Random random = new java.util.Random(~seed * 0x9E3779B97F4A7C15L);
    List<Fault> kinds = new ArrayList<>(faults);
    List<Step> schedule = new ArrayList<>(steps);
    boolean longWaits = faults.contains(Fault.ISOLATED_WAITER);
    // Three in ten each of TRY, WAIT and ASYNC, one in ten WITH_LOCK: its body holds the lease
    // while the other clients' steps wait for it, so it adds no contention.
    Op[] ops = {
      Op.TRY, Op.TRY, Op.TRY, Op.WAIT, Op.WAIT, Op.WAIT, Op.ASYNC, Op.ASYNC, Op.ASYNC, Op.WITH_LOCK
    };
    for (int i = 0; i < steps; i++) {
      Fault fault =
          !kinds.isEmpty() && random.nextInt(faultEvery) == 0
              ? kinds.get(random.nextInt(kinds.size()))
              : null;
      schedule.add(
          new Step(
              fault,
              random.nextInt(MASTERS),
              random.nextInt(CLIENTS),
              random.nextDouble(),
              random.nextInt(CLIENTS),
              ops[random.nextInt(ops.length)],
              // With isolated waiters, one wait in eight up to 3 s: long enough to outlast a head
              // that cannot win (drawn only then: the other families' schedules stay as they were).
              longWaits && random.nextInt(8) == 0
                  ? 1_000_000 + random.nextLong(3_000_000_000L)
                  : 1_000_000 + random.nextInt(300_000_000),
              random.nextBoolean(),
              random.nextInt(80_000_000),
              random.nextInt(TARGETS.size())));
    }
    return schedule;
  }

  static final int MASTERS = 5;
  static final int CLIENTS = 3;
  static final Duration TTL = Duration.ofMillis(200);
  static final long NODE_TIMEOUT_NANOS = Duration.ofMillis(50).toNanos();

  /**
   * How long past its {@code maxWait} a wait may last, on its client's clock: the round under way
   * when the time runs out (its replies waited for up to the node timeout), and the cleanup of a
   * round that granted nothing (its releases, up to the node timeout again).
   */
  static final long OVERRUN_BOUND_NANOS = 2 * NODE_TIMEOUT_NANOS;

  /**
   * With every master healthy, the longest a free resource may go to no waiter: the longest pause
   * between a waiter's rounds (a retry delay and a half; a wake-up ends it sooner), then one round
   * (its replies waited for up to the node timeout). Every waiter that stops leaves its queue at
   * the gate at once, so no one's turn is held by a waiter that is gone. Checked in runs without
   * faults.
   */
  static final long UNSERVED_BOUND_NANOS =
      3 * RedLock.DEFAULT_RETRY_DELAY.toNanos() / 2 + NODE_TIMEOUT_NANOS;

  /**
   * The faults under which the progress checker still judges a run: none keeps a majority of
   * masters from any client for long (a partition, a restart without data behind the restart guard,
   * and a clock stepped back can, as the clock faults beyond the drift factor can).
   */
  static final Set<Fault> CALM =
      EnumSet.of(
          Fault.SCRIPT_FLUSH,
          Fault.SUBSCRIBER_RESET,
          Fault.CLIENT_CRASH,
          Fault.CLOCK_DRIFT,
          Fault.CLIENT_CLOCK_DRIFT,
          Fault.RESTART_KEEPING_DATA);

  /** How long {@link Fault#ISOLATED_WAITER} cuts its client off, and how long it then waits. */
  static final long ISOLATION_NANOS = 5_000_000_000L;

  /**
   * How long a waiter's place in a queue at the gate outlives its last ask: two retry delays and
   * two node timeouts (docs/fairness.md), then the next script that reads the queue drops it.
   */
  static final long STALE_NANOS =
      2 * RedLock.DEFAULT_RETRY_DELAY.toNanos() + 2 * NODE_TIMEOUT_NANOS;

  private SimHarness() {}

  /**
   * Runs {@code steps} operations.
   *
   * @param seed the seed
   * @param steps how many operations
   * @param faults the fault families to inject
   * @param faultEvery one step in this many, on average, starts a fault
   * @param settings more settings for every client (e.g. the restart guard off)
   * @param bug rewrites the masters' scripts: a bug put back on purpose, or the identity
   */
  static Run run(
      long seed,
      int steps,
      Set<Fault> faults,
      int faultEvery,
      UnaryOperator<RedLockBuilder> settings,
      UnaryOperator<String> bug)
      throws Exception {
    return run(seed, schedule(seed, steps, faults, faultEvery), settings, bug);
  }

  /**
   * Runs {@code schedule}; the network's delays and the library's randomness follow {@code seed}.
   */
  static Run run(
      long seed,
      List<Step> schedule,
      UnaryOperator<RedLockBuilder> settings,
      UnaryOperator<String> bug)
      throws Exception {
    Simulation sim = new Simulation(seed);
    List<String> trace = new ArrayList<>();
    List<SimMaster> masters = new ArrayList<>();
    List<SimPubSub> pubsubs = new ArrayList<>();
    List<MasterClock> clocks = new ArrayList<>();
    for (int i = 0; i < MASTERS; i++) {
      MasterClock clock = new MasterClock(sim);
      clocks.add(clock);
      masters.add(new SimMaster(clock::micros, runId(i, 0)));
      pubsubs.add(new SimPubSub(sim, masters.get(i)));
      if (TRACE_MASTERS) {
        int master = i;
        masters
            .get(i)
            .observe(
                (args, reply) -> trace.add(sim.now() + " m" + master + " " + brief(args, reply)));
      }
      masters.get(i).editScripts(bug);
      if (i < 2) {
        masters.get(i).config("appendonly", "yes");
        masters.get(i).config("appendfsync", "always");
      }
    }
    List<String> nodes = new ArrayList<>();
    for (int i = 0; i < MASTERS; i++) {
      nodes.add("redis://master-" + i + ":6379");
    }
    long[][] healsAt = new long[CLIENTS][MASTERS];
    List<ClientClock> clientClocks = new ArrayList<>();
    List<RedLock> clients = new ArrayList<>();
    Checker check = new Checker(seed, sim, clientClocks, trace);
    int injected = 0;
    int crashes = 0;
    int isolations = 0;
    boolean unjudged = false; // a fault that may keep a majority away: progress not judged
    long steppedBack = 0; // microseconds, over every master
    boolean slowed = false;
    int tries = 0;
    int contended = 0;
    int nearFault = 0;
    try {
      SimProcess[] processes = new SimProcess[CLIENTS];
      // Client c's RedLock, in a new process: at the start, and after a crash.
      java.util.function.IntFunction<RedLock> start =
          client -> {
            SimProcess process = new SimProcess();
            processes[client] = process;
            ClientClock clock = clientClocks.get(client);
            LongSupplier delay = () -> 50_000 + sim.random().nextInt(450_000);
            return SimRedLocks.build(
                settings.apply(
                    RedLock.builder()
                        .nodes(nodes)
                        .wakeUps(wakeUps(seed))
                        .excludeUnfitMasters(false)
                        .listener(
                            new RedLockListener() {
                              @Override
                              public void extended(
                                  String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                                check.renewed(client); // a renewal, or an extend
                              }
                            })),
                clock,
                i ->
                    new SimNodeClient(
                        sim,
                        masters.get(i),
                        clock,
                        NODE_TIMEOUT_NANOS,
                        delay,
                        () -> healsAt[client][i],
                        process),
                new SimLoop(sim, clock),
                SimLoop.timing(sim, clock, process),
                (i, listener) ->
                    pubsubs.get(i).link(listener, delay, () -> healsAt[client][i], process));
          };
      for (int c = 0; c < CLIENTS; c++) {
        clientClocks.add(new ClientClock(sim));
        clients.add(start.apply(c));
      }
      clients.get(0).admitFreshNodes();
      SimMaster.Snapshot[] saved = new SimMaster.Snapshot[MASTERS]; // each master's last snapshot
      int awaitingAdmission = -1; // a master restarted empty, to admit once that is safe
      long restartedAt = 0;
      for (int step = 0; step < schedule.size() && !check.failed(); step++) {
        try {
          check.step = step;
          Step next = schedule.get(step);
          if (awaitingAdmission >= 0 && check.safeToAdmit(restartedAt)) {
            if (admit(clients.get(0), awaitingAdmission, check)) {
              awaitingAdmission = -1;
            }
          }
          Fault fault = next.fault();
          if (fault == Fault.ISOLATED_WAITER && check.isolatedNow()) {
            fault = null; // one client cut off at a time: the other two keep the lock in use
          }
          if (fault != null) {
            int m = next.master();
            injected++;
            check.lastFault = sim.now();
            unjudged |= !CALM.contains(fault) && fault != Fault.ISOLATED_WAITER;
            switch (fault) {
              case PARTITION ->
                  healsAt[next.other()][m] = sim.now() + (long) (next.value() * 1_000_000_000);
              case MASTER_PAUSE -> {
                long until = sim.now() + (long) (next.value() * 2_000_000_000L);
                for (long[] row : healsAt) {
                  row[m] = Math.max(row[m], until);
                }
              }
              case CLIENT_PAUSE -> {
                int c = next.other();
                Lease lease = check.held[c];
                if (lease != null && check.locks[c] == null && lease.isValid()) { // checked
                  long pause =
                      lease.remainingValidity().toNanos() + (long) (next.value() * 300_000_000);
                  trace.add(sim.now() + " " + c + " paused for " + pause + " ns");
                  sim.runFor(pause); // its process stopped: others go on, it sends nothing
                  check.write(c); // then it writes, believing it still holds the lease
                }
                m = c;
              }
              case ISOLATED_WAITER -> {
                int c = next.other();
                long until = sim.now() + ISOLATION_NANOS;
                for (int other = 0; other < MASTERS; other++) {
                  if (other != m) {
                    healsAt[c][other] = Math.max(healsAt[c][other], until);
                  }
                }
                check.isolations.add(new long[] {c, sim.now(), until});
                isolations++;
                if (check.held[c] == null && check.pending.get(c) == null) {
                  acquire(
                      clients.get(c),
                      c,
                      new Step(null, m, c, 0, c, Op.ASYNC, ISOLATION_NANOS, false, 0, 0),
                      check);
                }
              }
              case RESTART_EMPTY -> {
                m = 2 + m % 3;
                masters.get(m).restart(false, runId(m, step + 1));
                pubsubs.get(m).restarted();
              }
              case ADMIT_TOO_SOON -> {
                for (m = 2; m < MASTERS; m++) { // a majority's worth of keys lost at once
                  masters.get(m).restart(false, runId(m, step + 1));
                  pubsubs.get(m).restarted();
                }
                m = 2;
                if (!admit(clients.get(0), m, check)) { // not reachable yet: at the next steps
                  awaitingAdmission = m;
                  restartedAt = Long.MIN_VALUE / 2; // as if long ago: admitted regardless
                }
              }
              case RESTART_THEN_ADMIT -> {
                m = 2 + m % 3;
                masters.get(m).restart(false, runId(m, step + 1));
                pubsubs.get(m).restarted();
                if (awaitingAdmission < 0) {
                  awaitingAdmission = m;
                  restartedAt = sim.now();
                } else {
                  restartedAt = sim.now(); // the earlier one is admitted with it, once safe
                }
              }
              case RESTART_FROM_SNAPSHOT -> {
                m = 2 + m % 3;
                if (next.value() < 0.5) {
                  saved[m] = masters.get(m).snapshot();
                  trace.add(sim.now() + " master " + m + " saved a snapshot");
                } else {
                  if (saved[m] == null) {
                    masters.get(m).restart(false, runId(m, step + 1));
                  } else {
                    masters.get(m).restart(saved[m], runId(m, step + 1));
                  }
                  pubsubs.get(m).restarted();
                }
              }
              case RESTART_KEEPING_DATA -> {
                m = m % 2;
                masters.get(m).restart(true, runId(m, step + 1));
                pubsubs.get(m).restarted();
              }
              case SUBSCRIBER_RESET -> pubsubs.get(m).reset(processes[next.other()]);
              case CLIENT_CRASH -> {
                int c = next.other();
                processes[c].crash();
                crashes++;
                for (SimPubSub pubsub : pubsubs) {
                  pubsub.crashed();
                }
                check.crashed(c);
                clients.set(c, start.apply(c)); // a new process, holding nothing
                m = c;
              }
              case SCRIPT_FLUSH -> masters.get(m).execute("SCRIPT", "FLUSH");
              case CLOCK_DRIFT -> clocks.get(m).rate(0.995 + 0.01 * next.value());
              case CLOCK_TOO_FAST -> clocks.get(m).rate(2);
              case CLOCK_STEP_BACK -> {
                long micros = (long) (next.value() * 10_000_000);
                clocks.get(m).step(-micros);
                steppedBack += micros;
              }
              case CLIENT_CLOCK_DRIFT ->
                  clientClocks.get(next.other()).rate(0.995 + 0.01 * next.value());
              case CLIENT_CLOCK_TOO_SLOW -> {
                clientClocks.get(next.other()).rate(0.5);
                slowed = true;
              }
            }
            trace.add(sim.now() + " " + fault + " master " + m);
          }
          int c = next.client();
          if (check.isolated(c)) {
            // Cut off: its steps wait for the heal, so its isolated wait runs to its end.
            trace.add(sim.now() + " " + c + " isolated");
          } else if (check.pending.get(c) != null) {
            if (next.release()) { // the async wait, cancelled: what it was granted is released
              check.pending.get(c).cancel(true);
              check.pending.set(c, null);
              check.endWait(c, check.asyncFrom[c], check.asyncMask[c]);
              trace.add(sim.now() + " " + c + " cancelled");
            }
          } else if (check.held[c] == null) {
            tries++;
            contended += check.contended(c) ? 1 : 0;
            nearFault += sim.now() - check.lastFault < 1_000_000_000 ? 1 : 0;
            acquire(clients.get(c), c, next, check);
          } else if (!next.release() && next.op() == Op.WAIT && check.locks[c] == null) {
            // extends it (a LeaseLock's lease is its lock's to extend: it renews it)
            boolean extended;
            try {
              extended = check.held[c].extend(TTL);
            } catch (RedLockException e) { // no quorum answered in time
              extended = false;
            }
            trace.add(sim.now() + " " + c + (extended ? " extended" : " not extended"));
            if (extended) {
              check.renewed(c);
            }
          } else if (next.release()) { // else it holds on, maybe past its validity
            // Given up from the moment its release starts: other clients' async waits may be
            // granted while this one waits for the release's replies.
            Lease lease = check.held[c];
            LeaseLock lock = check.locks[c];
            check.releasing(c);
            trace.add(sim.now() + " " + c + " releases");
            if (lock == null) {
              lease.close();
            } else {
              try {
                lock.unlock(); // its renewal stopped, its lease released
              } catch (LeaseLostException e) { // lost while held: released all the same
                trace.add(sim.now() + " " + c + " lock lost");
              }
            }
            trace.add(sim.now() + " " + c + " released");
          }
          if (!check.failed()) {
            sim.runFor(next.gapNanos());
          }
        } catch (IllegalStateException e) {
          check.spin(e);
        }
      }
      if (!check.failed()) {
        try {
          quiet(sim, masters, pubsubs, check, healsAt, slowed, steppedBack);
        } catch (IllegalStateException e) {
          check.spin(e);
        }
      }
      long unserved = check.longestUnservedWait();
      if (unserved > 0) {
        trace.add(check.longestFrom + " longest unserved wait begins: " + unserved + " ns");
      }
      // Judged without faults and with calm ones only: a crashed waiter's place in a queue holds
      // the others back until it goes stale, and up to two of the three clients can be crashed
      // waiters queued ahead of a live one (the second may crash just before the first is dropped);
      // a waiter that cannot win, until it yields (two stale
      // windows after its first grant at the gate); any other calm fault may cost a round.
      long bound =
          UNSERVED_BOUND_NANOS
              + Math.min(crashes, CLIENTS - 1) * STALE_NANOS
              + (isolations > 0 ? 2 * STALE_NANOS : 0)
              + (injected > crashes ? NODE_TIMEOUT_NANOS : 0);
      if (!unjudged && unserved > bound && check.liveness == null) {
        check.step = schedule.size() - 1;
        check.failedHere();
        check.liveness =
            String.format(
                "seed %d: from %d ns the resource was free while a client waited, for %d ms (bound"
                    + " %d ms)",
                seed, check.longestFrom, unserved / 1_000_000, bound / 1_000_000);
      }
      return new Run(
          trace,
          tries,
          contended,
          nearFault,
          check.grants,
          injected,
          pubsubs.stream().mapToLong(SimPubSub::delivered).sum(),
          sim.eventsRun(),
          check.violation,
          check.fencing,
          check.liveness,
          check.state,
          check.worstOverrun,
          unserved,
          check.failedAt);
    } finally {
      // Every command answered before the clients close: a close waits for replies in flight,
      // and on virtual time only the simulation's events bring them.
      for (long[] row : healsAt) {
        java.util.Arrays.fill(row, 0);
      }
      // Unless wedged: no event would move the time then, and a close would wait for ever; the
      // clients are left to the GC (they hold no thread and no socket).
      if (!check.spun) {
        sim.runFor(Duration.ofSeconds(5).toNanos());
        for (RedLock client : clients) {
          client.close();
        }
      }
    }
  }

  /**
   * The end of a run: every partition healed, then {@link #leftAfterQuiet} (keys live longer on a
   * master whose clock stepped back by {@code steppedBackMicros}; a slowed client's timers and
   * waits last longer in true time).
   */
  private static void quiet(
      Simulation sim,
      List<SimMaster> masters,
      List<SimPubSub> pubsubs,
      Checker check,
      long[][] healsAt,
      boolean slowed,
      long steppedBackMicros) {
    long healed = 0;
    for (long[] row : healsAt) {
      for (long at : row) {
        healed = Math.max(healed, at);
      }
    }
    sim.runFor(Math.max(0, healed - sim.now()));
    long quiet = (long) (QUIET_NANOS * (slowed ? 2 : 1.01)) + steppedBackMicros * 1_000;
    leftAfterQuiet(sim, masters, pubsubs, check, quiet);
  }

  /** The keys every master keeps whatever the resources: the fence counter and the guard's. */
  static final Set<String> BOOKKEEPING =
      Set.of("redlock:fence", "redlock:dataset-born", "redlock:admitted");

  /**
   * How long after the last operation nothing of a resource may be left on a master: the lock's key
   * lives its TTL, a queue's keys until its last waiter goes stale (two retry delays and two node
   * timeouts after its last ask), a subscription until its last waiter leaves (at most a {@code
   * maxWait} and a round), all but the TTL since the waits began.
   */
  static final long QUIET_NANOS =
      TTL.toNanos()
          + 2 * RedLock.DEFAULT_RETRY_DELAY.toNanos()
          + 4 * NODE_TIMEOUT_NANOS
          + 300_000_000;

  /**
   * Bounded state: {@code quietNanos} after the last operation, with every partition healed, every
   * master keeps only {@link #BOOKKEEPING}, and no channel is subscribed.
   */
  private static void leftAfterQuiet(
      Simulation sim,
      List<SimMaster> masters,
      List<SimPubSub> pubsubs,
      Checker check,
      long quietNanos) {
    check.releasingAll();
    sim.runFor(quietNanos);
    for (int m = 0; m < MASTERS; m++) {
      java.util.SortedSet<String> left = masters.get(m).keyNames();
      left.removeAll(BOOKKEEPING);
      Map<String, Integer> channels = pubsubs.get(m).channels();
      if ((!left.isEmpty() || !channels.isEmpty()) && check.state == null) {
        check.state =
            String.format(
                "seed %d: %d ms after the last operation master %d keeps %s and subscriptions %s",
                check.seed, quietNanos / 1_000_000, m, left, channels);
      }
    }
  }

  /**
   * Whether a run's trace shows every command the masters run for the clients, with its reply
   * ({@code -Dsimulation.traceMasters=true}): the timeline of a failure down to each master.
   */
  static final boolean TRACE_MASTERS = Boolean.getBoolean("simulation.traceMasters");

  /** A command and its reply on one line: tokens and long arguments cut to 8 characters. */
  private static String brief(List<String> args, Object reply) {
    String name = args.get(0).toUpperCase(java.util.Locale.ROOT);
    if (name.equals("INFO") || name.equals("CONFIG") || name.equals("SCRIPT")) {
      return name + " ...";
    }
    StringBuilder line = new StringBuilder();
    for (String arg : args) {
      line.append(arg.length() > 8 ? arg.substring(0, 8) : arg).append(' ');
    }
    String answer =
        reply instanceof byte[] bytes
            ? new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1)
            : reply instanceof List<?> list ? list.size() + " items" : String.valueOf(reply);
    return line.append("-> ")
        .append(answer.length() > 16 ? answer.substring(0, 16) : answer)
        .toString();
  }

  /**
   * An operator admits the masters from {@code client} ({@code admitFreshNodes}); whether master
   * {@code m} is admitted now (it may be cut off from that client).
   */
  private static boolean admit(RedLock client, int m, Checker check) {
    List<NodeOutcome> outcomes = client.admitFreshNodes();
    NodeOutcome.Status status = outcomes.get(m).status();
    check.trace.add(check.sim.now() + " admission of master " + m + ": " + status);
    return status == NodeOutcome.Status.GRANTED || status == NodeOutcome.Status.TAKEN;
  }

  /**
   * Client {@code c}, which holds nothing, acquires as {@code step} says: one resource or a set
   * ({@link Step#resources()}); a {@code WAIT} on one resource with {@code release} set goes
   * through a {@link LeaseLock} ({@code tryLock} with the wait; renewed while held).
   */
  private static void acquire(RedLock client, int c, Step step, Checker check) {
    Simulation sim = check.sim;
    ClientClock clock = check.clocks.get(c);
    long startedAt = clock.read();
    Duration maxWait = Duration.ofNanos(step.waitNanos());
    List<String> names = step.resources();
    boolean set = names.size() > 1;
    int mask = mask(names);
    try {
      switch (step.op()) {
        case TRY -> {
          Optional<Lease> lease =
              set ? client.tryAcquireAll(names, TTL) : client.tryAcquire(names.get(0), TTL);
          if (lease.isPresent()) {
            check.granted(c, lease.get());
          } else {
            check.trace.add(sim.now() + " " + c + " refused");
          }
        }
        case WAIT -> {
          Lease lease = null;
          long from = sim.now();
          try {
            if (set) {
              lease = client.acquireAll(names, TTL, maxWait);
            } else if (step.release()) {
              LeaseLock lock = client.newLock(names.get(0), TTL);
              if (lock.tryLock(step.waitNanos(), TimeUnit.NANOSECONDS)) {
                check.locks[c] = lock;
                lease = lock.lease();
              }
            } else {
              lease = client.acquire(names.get(0), TTL, maxWait);
            }
          } finally {
            check.waited(c, startedAt, step.waitNanos());
            check.endWait(c, from, mask);
          }
          if (lease != null) {
            check.granted(c, lease);
          } else {
            check.trace.add(sim.now() + " " + c + " refused (tryLock)");
          }
        }
        case WITH_LOCK -> {
          long from = sim.now();
          boolean[] ran = {false};
          java.util.function.Consumer<Lease> body =
              lease -> {
                ran[0] = true;
                check.waited(c, startedAt, step.waitNanos());
                check.endWait(c, from, mask);
                check.granted(c, lease);
                sim.runFor(4 * step.gapNanos()); // renewed meanwhile
                check.releasing(c);
                check.trace.add(sim.now() + " " + c + " releases (withLock)");
              };
          try {
            if (set) {
              client.withLock(names, TTL, maxWait, body);
            } else {
              client.withLock(names.get(0), TTL, maxWait, body);
            }
          } finally {
            if (!ran[0]) {
              check.waited(c, startedAt, step.waitNanos());
              check.endWait(c, from, mask);
            }
          }
        }
        case ASYNC -> {
          String name = names.get(0); // no async call takes a set
          CompletableFuture<Lease> future = client.acquireAsync(name, TTL, maxWait);
          check.pending.set(c, future);
          check.asyncFrom[c] = sim.now();
          check.asyncMask[c] = mask(List.of(name));
          check.trace.add(sim.now() + " " + c + " waits async");
          future.whenComplete(
              (lease, failure) -> {
                if (future.isCancelled()) {
                  return;
                }
                check.pending.set(c, null);
                check.waited(c, startedAt, step.waitNanos());
                check.endWait(c, check.asyncFrom[c], check.asyncMask[c]);
                if (lease != null) {
                  check.granted(c, lease);
                } else {
                  check.trace.add(sim.now() + " " + c + " async " + outcome(failure));
                }
              });
        }
      }
    } catch (QuorumUnavailableException e) { // too few masters answered: no one holds it
      check.trace.add(sim.now() + " " + c + " unavailable");
    } catch (LockTakenException e) {
      check.trace.add(sim.now() + " " + c + " refused");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static String outcome(Throwable failure) {
    Throwable cause =
        failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
            ? failure.getCause()
            : failure;
    return cause instanceof LockTakenException
        ? "refused"
        : cause instanceof QuorumUnavailableException ? "unavailable" : "failed: " + cause;
  }

  static Run run(long seed, int steps) throws Exception {
    return run(seed, steps, EnumSet.noneOf(Fault.class), 1, b -> b, source -> source);
  }

  /**
   * The first failure of seeds 1 to {@code seeds}, each of {@code steps} steps with {@code faults}
   * (names of {@link Fault}, comma-separated; empty: none) one step in {@code faultEvery}, or null:
   * what {@link PatchedCore} runs in a class loader of its own, so only strings cross.
   */
  static String hunt(String faults, int seeds, int steps, int faultEvery) throws Exception {
    Set<Fault> families = EnumSet.noneOf(Fault.class);
    for (String name : faults.split(",")) {
      if (!name.isBlank()) {
        families.add(Fault.valueOf(name.trim()));
      }
    }
    long first = Long.getLong("simulation.firstSeed", 1); // to replay one seed of a hunt
    return firstFailure(
        seeds,
        seed -> run(first - 1 + seed, steps, families, faultEvery, b -> b, s -> s).failure());
  }

  /** What one seed's run gave: a failure's description, or null. */
  @FunctionalInterface
  interface SeedRun {
    String failure(long seed) throws Exception;
  }

  /** The first failure of seeds 1 to {@code seeds}, or null if none failed. */
  static String firstFailure(int seeds, SeedRun run) throws Exception {
    for (long seed = 1; seed <= seeds; seed++) {
      String failure = run.failure(seed);
      if (failure != null) {
        return failure;
      }
    }
    return null;
  }

  /**
   * Shrinks a failing schedule: drops the steps after the failure, then each fault and each step
   * whose removal still fails, until removing any one more makes the run pass (or {@code budget}
   * runs were spent).
   *
   * @param fails whether a run fails as the original did
   * @return the shrunk schedule
   */
  static List<Step> shrink(
      long seed,
      List<Step> schedule,
      UnaryOperator<RedLockBuilder> settings,
      UnaryOperator<String> bug,
      java.util.function.Predicate<Run> fails,
      int budget)
      throws Exception {
    Run first = run(seed, schedule, settings, bug);
    if (!fails.test(first)) {
      throw new IllegalArgumentException("the schedule does not fail");
    }
    List<Step> current = new ArrayList<>(schedule.subList(0, first.failedAt() + 1));
    int runs = 1;
    boolean changed = true;
    while (changed && runs < budget) {
      changed = false;
      for (int i = current.size() - 1; i >= 0 && runs < budget; i--) {
        List<Step> candidate = new ArrayList<>(current);
        if (current.get(i).fault() != null) {
          candidate.set(i, current.get(i).withoutFault());
        } else {
          candidate.remove(i);
        }
        runs++;
        Run tried = run(seed, candidate, settings, bug);
        if (fails.test(tried)) {
          current = new ArrayList<>(candidate.subList(0, tried.failedAt() + 1));
          changed = true;
          i = Math.min(i, current.size());
        }
      }
    }
    return current;
  }

  /**
   * Whether a run's clients have wake-ups (notices of releases, turns at a gate, hand-off) or poll:
   * each in every other seed, so that every family runs both wait engines.
   */
  static boolean wakeUps(long seed) {
    return (seed & 1) == 0;
  }

  private static String runId(int master, int run) {
    return String.format("%040x", master * 1_000_000L + run);
  }
}
