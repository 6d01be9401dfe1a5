package dev.redlock.simulation;

import dev.redlock.Lease;
import dev.redlock.LeaseLock;
import dev.redlock.LeaseLostException;
import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import dev.redlock.RedLockException;
import dev.redlock.RedLockListener;
import dev.redlock.SimRedLocks;
import dev.redlock.internal.transport.SimNodeClient;
import dev.redlock.simulation.Workload.Op;
import dev.redlock.simulation.Workload.Step;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

/**
 * One simulated run: five simulated masters, three RedLocks built from the public builder, one
 * resource taken and given back in turn, and the faults asked for, all on one seeded virtual clock;
 * the checker looks at each grant: no other client's lease may still be valid (on the simulation's
 * true time, which every clock here follows).
 */
final class SimHarness {

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
          Fault.CLIENT_CLOSE,
          Fault.CLOCK_DRIFT,
          Fault.CLIENT_CLOCK_DRIFT,
          Fault.RESTART_KEEPING_DATA,
          Fault.CLIENT_CLOCK_JUMP,
          Fault.UNFIT_MASTER,
          Fault.STEADY_CONTENTION);

  /** The longest one-way delay of a message on the simulated network. */
  static final long MAX_DELAY_NANOS = 500_000;

  /**
   * With a majority able to vote for it, the longest a waiter named by a turn notice (a release at
   * the gate naming it first in the queue) may go without the resource: its round (a round trip),
   * and, had that round overtaken the release on some masters, its retry after a pause of two
   * rounds' time (docs/fairness.md); a reconnection's handshake to a restarted master in between:
   * 20 of the network's longest one-way delays, 10 ms (2.9 ms seen in 200 seeds with the calm
   * faults together, 1.8 ms without faults). A notice lost or not heeded costs the waiter its
   * timer, up to a retry delay and a half (75 ms). Checked where {@link #UNSERVED_BOUND_NANOS} is.
   */
  static final long NAMED_BOUND_NANOS = 20 * MAX_DELAY_NANOS;

  /** How long {@link Fault#ISOLATED_WAITER} cuts its client off, and how long it then waits. */
  static final long ISOLATION_NANOS = 5_000_000_000L;

  /**
   * How long a waiter's place in a queue at the gate outlives its last ask: two retry delays and
   * two node timeouts (docs/fairness.md), then the next script that reads the queue drops it.
   */
  static final long STALE_NANOS =
      2 * RedLock.DEFAULT_RETRY_DELAY.toNanos() + 2 * NODE_TIMEOUT_NANOS;

  /**
   * The longest a waiter on a set of resources, named first in the queue of one of them, may keep
   * its place there (the resource free, the waiters behind it refused) while another of its
   * resources is taken: until its first turn there is two stale windows old and it asks again (a
   * retry delay and a half at most), when it yields its place (queue.lua, docs/fairness.md).
   */
  static final long SET_HOLD_NANOS =
      2 * STALE_NANOS + 3 * RedLock.DEFAULT_RETRY_DELAY.toNanos() / 2;

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
    return run(seed, Workload.schedule(seed, steps, faults, faultEvery), settings, bug);
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
    return runEach(seed, schedule, c -> settings, bug);
  }

  /**
   * Runs {@code schedule} with each client's own settings ({@code settingsOf} of its number):
   * clients that differ, as a deployment's may.
   */
  static Run runEach(
      long seed,
      List<Step> schedule,
      java.util.function.IntFunction<UnaryOperator<RedLockBuilder>> settingsOf,
      UnaryOperator<String> bug)
      throws Exception {
    Simulation sim = new Simulation(seed);
    List<String> trace = new ArrayList<>();
    List<SimMaster> masters = new ArrayList<>();
    List<SimPubSub> pubsubs = new ArrayList<>();
    List<MasterClock> clocks = new ArrayList<>();
    List<ClientClock> clientClocks = new ArrayList<>();
    Checker check = new Checker(seed, sim, clientClocks, trace);
    for (int i = 0; i < MASTERS; i++) {
      MasterClock clock = new MasterClock(sim);
      clocks.add(clock);
      masters.add(new SimMaster(clock::micros, runId(i, 0)));
      pubsubs.add(new SimPubSub(sim, masters.get(i)));
      int master = i;
      masters
          .get(i)
          .observe(
              (args, reply) -> {
                Observers.leases(args, reply, check, master);
                if (Observers.TRACE_MASTERS) {
                  trace.add(sim.now() + " m" + master + " " + Observers.brief(args, reply));
                }
              });
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
    long[][] slowUntil = new long[CLIENTS][MASTERS]; // a link slowed (LATENCY) until then
    long[][] latency = new long[CLIENTS][MASTERS]; // and by so much each way
    SimNodeClient[][] nodeClients = new SimNodeClient[CLIENTS][MASTERS];
    // Turn notices: each waiter's name starts with its client's, as its queue acquires show.
    Map<String, SimProcess> waiters = new java.util.HashMap<>();
    SimNodeClient.Tamper[][] tampers = new SimNodeClient.Tamper[CLIENTS][MASTERS];
    for (SimNodeClient.Tamper[] row : tampers) {
      java.util.Arrays.fill(row, SimNodeClient.Tamper.NONE);
    }
    long pausedUntil = 0; // the end of the last client's pause, or of the last slowed link
    long[] unfitUntil = new long[MASTERS]; // when an unfit master is configured back
    List<RedLock> clients = new ArrayList<>();
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
            // Each message's delay to or from master i, and a slowed link's latency on top.
            java.util.function.IntFunction<LongSupplier> delay =
                i ->
                    () ->
                        50_000
                            + sim.random().nextInt((int) MAX_DELAY_NANOS - 50_000)
                            + (slowUntil[client][i] > sim.now() ? latency[client][i] : 0);
            // Which masters this RedLock's fitness checks exclude: read once it is built.
            java.util.function.IntPredicate[] excludes = {m -> false};
            RedLock built =
                SimRedLocks.build(
                    settingsOf
                        .apply(client)
                        .apply(
                            RedLock.builder()
                                .nodes(nodes)
                                .wakeUps(wakeUps(seed))
                                .listener(
                                    new RedLockListener() {
                                      @Override
                                      public void acquired(
                                          String resource,
                                          List<NodeOutcome> outcomes,
                                          Duration elapsed) {
                                        check.voted(client, outcomes);
                                        check.votedAfterExclusion(
                                            client, outcomes, elapsed.toNanos());
                                      }

                                      @Override
                                      public void denied(
                                          String resource,
                                          RedLockListener.Denial reason,
                                          List<NodeOutcome> outcomes,
                                          Duration elapsed) {
                                        if (reason == RedLockListener.Denial.UNAVAILABLE) {
                                          check.unavailable(client);
                                        }
                                        if (Observers.TRACE_MASTERS) {
                                          trace.add(
                                              sim.now() + " " + client + " denied " + outcomes);
                                        }
                                      }

                                      @Override
                                      public void extended(
                                          String resource,
                                          List<NodeOutcome> outcomes,
                                          Duration elapsed) {
                                        check.renewed(client); // a renewal, or an extend
                                      }
                                    })),
                    clock,
                    i ->
                        new dev.redlock.internal.transport.ObservedNodeClient(
                            Observers.observeQueueing(
                                nodeClients[client][i] =
                                    new SimNodeClient(
                                        sim,
                                        masters.get(i),
                                        clock,
                                        NODE_TIMEOUT_NANOS,
                                        delay.apply(i),
                                        () -> healsAt[client][i],
                                        process,
                                        () -> {
                                          SimNodeClient.Tamper next = tampers[client][i];
                                          tampers[client][i] = SimNodeClient.Tamper.NONE;
                                          return next;
                                        }),
                                waiters,
                                check,
                                client),
                            command -> {
                              check.sent(
                                  client,
                                  i,
                                  command.kind().role()
                                      == dev.redlock.internal.transport.Command.Role.VOTE,
                                  excludes[0].test(i));
                              String token =
                                  dev.redlock.internal.transport.ObservedNodeClient.acquireToken(
                                      command);
                              if (token != null) {
                                check.acquireSent(client, i, token);
                              }
                            }),
                    new SimLoop(sim, clock, process),
                    SimLoop.timing(sim, clock, process),
                    (i, listener) ->
                        pubsubs
                            .get(i)
                            .link(listener, delay.apply(i), () -> healsAt[client][i], process));
            excludes[0] = SimRedLocks.excluded(built);
            return built;
          };
      for (int c = 0; c < CLIENTS; c++) {
        clientClocks.add(new ClientClock(sim));
        clients.add(start.apply(c));
      }
      for (SimPubSub pubsub : pubsubs) {
        Observers.observeTurns(pubsub, waiters, processes, check);
      }
      clients.get(0).admitFreshNodes();
      SimMaster.Snapshot[] saved = new SimMaster.Snapshot[MASTERS]; // each master's last snapshot
      // Which masters are configured to lose nothing on a restart (appendfsync always): 0 and 1,
      // and a master of 2 to 4 while RESTART_FSYNC_SWITCHED has it so; a restart keeps its data.
      boolean[] lossless = {true, true, false, false, false};
      boolean[] lostCounter = new boolean[MASTERS]; // restarted with an older fence counter
      // With RESTART_FSYNC_SWITCHED, masters 2 to 4 run appendfsync everysec: their AOF on disk,
      // as of their last fsync, at most a second old.
      boolean everysec = schedule.stream().anyMatch(s -> s.fault() == Fault.RESTART_FSYNC_SWITCHED);
      // Whether a client's close is the only fault: then every master stays healthy and reachable.
      boolean closesOnly =
          schedule.stream().allMatch(s -> s.fault() == null || s.fault() == Fault.CLIENT_CLOSE);
      SimMaster.Snapshot[] fsynced = new SimMaster.Snapshot[MASTERS];
      long[] fsyncedAt = new long[MASTERS];
      int awaitingAdmission = -1; // a master restarted empty, to admit once that is safe
      long restartedAt = 0;
      for (int step = 0; step < schedule.size() && !check.failed(); step++) {
        try {
          check.step = step;
          Step next = schedule.get(step);
          for (int m = 2; everysec && m < MASTERS; m++) {
            if (!lossless[m]
                && (fsynced[m] == null || sim.now() - fsyncedAt[m] >= 1_000_000_000L)) {
              fsynced[m] = masters.get(m).snapshot();
              fsyncedAt[m] = sim.now();
            }
          }
          if (awaitingAdmission >= 0 && check.safeToAdmit(restartedAt)) {
            if (Workload.admit(clients.get(0), awaitingAdmission, check)) {
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
            check.orderJudged = false;
            check.overtakenJudged &= fault == Fault.STEADY_CONTENTION; // contention, not a fault
            unjudged |= !CALM.contains(fault) && fault != Fault.ISOLATED_WAITER;
            check.fitnessJudged &=
                CALM.contains(fault)
                    || fault == Fault.PARTITION
                    || fault == Fault.MASTER_PAUSE
                    || fault == Fault.UNFIT_ROLLOUT;
            switch (fault) {
              case PARTITION -> {
                healsAt[next.other()][m] = sim.now() + (long) (next.value() * 1_000_000_000);
                check.cutOff(next.other(), m, healsAt[next.other()][m]);
              }
              case LATENCY -> {
                int c = next.other();
                latency[c][m] = 1_000_000 + (long) (next.value() * 59_000_000);
                slowUntil[c][m] = sim.now() + 1_000_000_000L;
                pausedUntil = Math.max(pausedUntil, slowUntil[c][m]); // the quiet comes after it
                trace.add(
                    sim.now() + " link " + c + "-" + m + " slowed by " + latency[c][m] + " ns");
              }
              case MASTER_PAUSE -> {
                long until = sim.now() + (long) (next.value() * 2_000_000_000L);
                for (int c = 0; c < CLIENTS; c++) {
                  healsAt[c][m] = Math.max(healsAt[c][m], until);
                  check.cutOff(c, m, until);
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
                  Workload.acquire(
                      clients.get(c),
                      c,
                      new Step(null, m, c, 0, c, Op.ASYNC, ISOLATION_NANOS, false, 0, 0),
                      check);
                }
              }
              case RESTART_EMPTY -> {
                m = 2 + m % 3;
                lostCounter[m] |=
                    restartLosing(masters.get(m), lossless[m], null, runId(m, step + 1));
                pubsubs.get(m).restarted();
                check.restarted(m);
                for (SimNodeClient[] row : nodeClients) {
                  row[m].masterRestarted();
                }
              }
              case ADMIT_TOO_SOON -> {
                for (m = 2; m < MASTERS; m++) { // a majority's worth of keys lost at once
                  masters.get(m).restart(false, runId(m, step + 1));
                  pubsubs.get(m).restarted();
                  check.restarted(m);
                  for (SimNodeClient[] row : nodeClients) {
                    row[m].masterRestarted();
                  }
                }
                m = 2;
                if (!Workload.admit(
                    clients.get(0), m, check)) { // not reachable yet: at the next steps
                  awaitingAdmission = m;
                  restartedAt = Long.MIN_VALUE / 2; // as if long ago: admitted regardless
                }
              }
              case RESTART_THEN_ADMIT -> {
                m = 2 + m % 3;
                lostCounter[m] |=
                    restartLosing(masters.get(m), lossless[m], null, runId(m, step + 1));
                pubsubs.get(m).restarted();
                check.restarted(m);
                for (SimNodeClient[] row : nodeClients) {
                  row[m].masterRestarted();
                }
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
                  lostCounter[m] |=
                      restartLosing(masters.get(m), lossless[m], saved[m], runId(m, step + 1));
                  pubsubs.get(m).restarted();
                  check.restarted(m);
                  for (SimNodeClient[] row : nodeClients) {
                    row[m].masterRestarted();
                  }
                }
              }
              case RESTART_FSYNC_SWITCHED -> {
                m = 2 + m % 3;
                SimMaster master = masters.get(m);
                if (lossless[m]) { // back to everysec: a lossless run's restart keeps everything
                  master.config("appendfsync", "everysec");
                  master.restart(true, runId(m, step + 1));
                  lossless[m] = false;
                  fsynced[m] = master.snapshot();
                  fsyncedAt[m] = sim.now();
                } else { // the writes since its last fsync lost; back configured to lose nothing
                  master.config("appendonly", "yes");
                  master.config("appendfsync", "always");
                  lostCounter[m] |= restartLosing(master, false, fsynced[m], runId(m, step + 1));
                  lossless[m] = true;
                }
                pubsubs.get(m).restarted();
                check.restarted(m);
                for (SimNodeClient[] row : nodeClients) {
                  row[m].masterRestarted();
                }
              }
              case RESTART_KEEPING_DATA -> {
                m = m % 2;
                masters.get(m).restart(true, runId(m, step + 1));
                pubsubs.get(m).restarted();
                check.restarted(m);
                for (SimNodeClient[] row : nodeClients) {
                  row[m].masterRestarted();
                }
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
              case CLIENT_CLOSE -> {
                int c = next.other();
                m = c;
                if (check.isolated(c) || processes[c].pausedAt(sim.now())) {
                  trace.add(sim.now() + " " + c + " not closed: cut off or paused");
                  break; // its program takes no step now
                }
                String releasedToken = null;
                if (check.held[c] != null && next.value() < 0.5) {
                  releasedToken = SimRedLocks.token(check.held[c]);
                  release(sim, check, c); // else left to its TTL, as a program may
                }
                clients.get(c).close(); // its async wait, renewals and releases maybe in flight
                if (releasedToken != null && closesOnly) { // no other fault: every master reached
                  check.releasedBeforeClose(c, releasedToken);
                }
                check.closed(c);
                clients.set(c, start.apply(c)); // a new RedLock, holding nothing
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
              case CLIENT_CLOCK_JUMP -> {
                m = next.other();
                clientClocks.get(m).jump((long) (next.value() * 2_000_000_000L));
              }
              case CLIENT_GC -> {
                m = next.other();
                if (!processes[m].pausedAt(sim.now())) { // one pause at a time
                  long pause = (long) (next.value() * 1_000_000_000L);
                  processes[m].pauseUntil(sim.now() + pause);
                  clientClocks.get(m).paused(pause);
                  pausedUntil = Math.max(pausedUntil, sim.now() + pause);
                }
              }
              case UNFIT_MASTER -> {
                if (java.util.Arrays.stream(unfitUntil).anyMatch(t -> t > sim.now())) {
                  break; // one master unfit at a time: four still make a majority
                }
                long until = sim.now() + 1_000_000_000L + (long) (next.value() * 20_000_000_000L);
                unfit(sim, check, masters.get(m), m, unfitUntil, until, trace);
              }
              case UNFIT_ROLLOUT -> {
                if (java.util.Arrays.stream(unfitUntil).anyMatch(t -> t > sim.now())) {
                  break; // after the last unfit master is back
                }
                // Masters m, m + 1 and m + 2 in turn, half a second apart, each for 11 to 31 s.
                long lasts = 11_000_000_000L + (long) (next.value() * 20_000_000_000L);
                for (int k = 0; k < ROLLED_OUT; k++) {
                  int u = (m + k) % MASTERS;
                  long from = k * ROLLOUT_STEP_NANOS;
                  unfitUntil[u] = sim.now() + from + lasts; // no lone UNFIT_MASTER meanwhile
                  sim.after(
                      from,
                      () ->
                          unfit(
                              sim, check, masters.get(u), u, unfitUntil, sim.now() + lasts, trace));
                }
              }
              case REPLY_CUT ->
                  tampers[next.other()][m] =
                      next.value() < 0.5 ? SimNodeClient.Tamper.CUT : SimNodeClient.Tamper.STALL;
              case HOSTILE_REPLY ->
                  tampers[next.other()][m] =
                      SimNodeClient.Tamper.values()[
                          SimNodeClient.Tamper.ERROR.ordinal() + (int) (next.value() * 4)];
              case STEADY_CONTENTION -> {
                SteadyContention.run(
                    sim,
                    check,
                    clients,
                    next.other(),
                    m,
                    next.value(),
                    x ->
                        check.pending.get(x) != null
                            || check.isolated(x)
                            || processes[x].pausedAt(sim.now()),
                    x -> release(sim, check, x));
                m = next.other();
              }
              case MASTER_CLOCK_JUMP -> {
                for (m = 2; m < MASTERS; m++) { // a majority's clocks, stepped at once
                  clocks.get(m).step(1_000_000 + (long) (next.value() * 9_000_000));
                }
                m = 2;
              }
              case CLIENT_CLOCK_TOO_SLOW -> {
                clientClocks.get(next.other()).rate(0.5);
                slowed = true;
              }
            }
            trace.add(sim.now() + " " + fault + " master " + m);
            int lost = 0;
            for (boolean l : lostCounter) {
              lost += l ? 1 : 0;
            }
            if (check.fencingJudged && steppedBack > 0 && 2 * lost > MASTERS) {
              // Outside the tokens' guarantee (safety.md): a majority lost its fence counters,
              // and clocks that went back no longer carry the tokens past earlier ones.
              check.fencingJudged = false;
              trace.add(sim.now() + " fencing no longer judged: a majority lost its counters");
            }
          }
          int c = next.client();
          if (check.isolated(c)) {
            // Cut off: its steps wait for the heal, so its isolated wait runs to its end.
            trace.add(sim.now() + " " + c + " isolated");
          } else if (processes[c].pausedAt(sim.now())) {
            trace.add(sim.now() + " " + c + " paused"); // its thread stopped: no step of its own
          } else if (check.pending.get(c) != null) {
            if (next.release()) { // the async wait, cancelled: what it was granted is released
              check.pending.get(c).cancel(true);
              check.pending.set(c, null);
              check.cancelled(c);
              check.endWait(c, check.asyncFrom[c], check.asyncMask[c]);
              trace.add(sim.now() + " " + c + " cancelled");
            }
          } else if (check.held[c] == null) {
            tries++;
            contended += check.contended(c) ? 1 : 0;
            nearFault += sim.now() - check.lastFault < 1_000_000_000 ? 1 : 0;
            Workload.acquire(clients.get(c), c, next, check);
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
            release(sim, check, c);
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
          Quiet.quiet(sim, masters, pubsubs, check, healsAt, pausedUntil, slowed, steppedBack);
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
      // a waiter that cannot win, until it yields (two stale windows after its first grant at the
      // gate): a waiter cut off, or one whose client too few masters could vote for (kept out by
      // its restart guard, or unfit), up to two of them one after the other (seed 20 of the calm
      // faults and steady contention one step in 3: two such heads, 832 ms against 575); any other
      // calm fault may cost a round.
      long unwinnable =
          Math.min(
              CLIENTS - 1,
              (isolations > 0 ? 1 : 0)
                  + check.unavailable.stream().mapToLong(denial -> denial[1]).distinct().count());
      long bound =
          UNSERVED_BOUND_NANOS
              + Math.min(crashes, CLIENTS - 1) * STALE_NANOS
              + unwinnable * 2 * STALE_NANOS
              + (injected > crashes ? NODE_TIMEOUT_NANOS : 0);
      if (!unjudged && unserved > bound) {
        check.lateAtTheEnd(
            schedule.size() - 1,
            String.format(
                "seed %d: from %d ns the resource was free while a client waited, for %d ms (bound"
                    + " %d ms)",
                seed, check.longestFrom, unserved / 1_000_000, bound / 1_000_000));
      }
      long named = check.longestNamedWait();
      if (named > 0) {
        trace.add(
            check.longestNamedFrom
                + " longest named wait begins, client "
                + check.longestNamedClient
                + ": "
                + named
                + " ns");
      }
      if (!unjudged && named > NAMED_BOUND_NANOS) {
        check.lateAtTheEnd(
            schedule.size() - 1,
            String.format(
                "seed %d: from %d ns client %d, named by a turn notice, went without the resource"
                    + " for %.1f ms (bound %d ms)",
                seed,
                check.longestNamedFrom,
                check.longestNamedClient,
                named / 1e6,
                NAMED_BOUND_NANOS / 1_000_000));
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
          check.order,
          check.state,
          check.worstOverrun,
          unserved,
          named,
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
   * Client {@code c} releases what it holds: given up from the moment its release starts (other
   * clients' async waits may be granted while this one waits for the release's replies).
   */
  /** How many masters {@link Fault#UNFIT_ROLLOUT} makes unfit: a majority. */
  static final int ROLLED_OUT = MASTERS / 2 + 1;

  /** The time between two masters' turns in {@link Fault#UNFIT_ROLLOUT}. */
  static final long ROLLOUT_STEP_NANOS = 500_000_000L;

  /**
   * Makes master {@code m} unfit ({@code maxmemory} with {@code allkeys-lru}) until {@code until},
   * then fit again, unless a later fault moved its end.
   */
  private static void unfit(
      Simulation sim,
      Checker check,
      SimMaster master,
      int m,
      long[] unfitUntil,
      long until,
      List<String> trace) {
    check.unfitSince[m] = sim.now();
    unfitUntil[m] = until;
    master.config("maxmemory", "1073741824");
    master.config("maxmemory-policy", "allkeys-lru");
    sim.after(
        until - sim.now(),
        () -> {
          if (sim.now() >= unfitUntil[m]) { // fixed: no later fault extended it
            master.config("maxmemory", "0");
            master.config("maxmemory-policy", "noeviction");
            check.fit(m);
            trace.add(sim.now() + " master " + m + " fit again");
          }
        });
  }

  static void release(Simulation sim, Checker check, int c) {
    Lease lease = check.held[c];
    LeaseLock lock = check.locks[c];
    check.releasing(c);
    check.trace.add(sim.now() + " " + c + " releases");
    if (lock == null) {
      lease.close();
    } else {
      try {
        lock.unlock(); // its renewal stopped, its lease released
      } catch (LeaseLostException e) { // lost while held: released all the same
        check.trace.add(sim.now() + " " + c + " lock lost");
      }
    }
    check.trace.add(sim.now() + " " + c + " released");
  }

  static Run run(long seed, int steps) throws Exception {
    return run(seed, steps, EnumSet.noneOf(Fault.class), 1, b -> b, source -> source);
  }

  /**
   * Whether a run's clients have wake-ups (notices of releases, turns at a gate, hand-off) or poll:
   * each in every other seed, so that every family runs both wait engines.
   */
  static boolean wakeUps(long seed) {
    return (seed & 1) == 0;
  }

  /**
   * Restarts {@code master}: with every write if it is configured to lose nothing ({@code
   * lossless}), else from its last snapshot ({@code saved}), else empty.
   *
   * @return whether its fence counter went back (it lost writes)
   */
  private static boolean restartLosing(
      SimMaster master, boolean lossless, SimMaster.Snapshot saved, String runId) {
    if (lossless) {
      master.restart(true, runId);
    } else if (saved == null) {
      master.restart(false, runId);
    } else {
      master.restart(saved, runId);
    }
    return !lossless;
  }

  private static String runId(int master, int run) {
    return String.format("%040x", master * 1_000_000L + run);
  }
}
