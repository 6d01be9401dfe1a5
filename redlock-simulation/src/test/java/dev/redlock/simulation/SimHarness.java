package dev.redlock.simulation;

import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import dev.redlock.RedLockException;
import dev.redlock.SimRedLocks;
import dev.redlock.internal.transport.SimNodeClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
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
    CLIENT_CLOCK_TOO_SLOW
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
   * A run's trace, figures, first violation of mutual exclusion (or null), and first fencing token
   * that did not rise above every earlier grant's (or null).
   */
  record Run(
      List<String> trace,
      int grants,
      int faults,
      long events,
      String violation,
      String fencing,
      int failedAt) {}

  /**
   * One step of a run's schedule: a fault to inject first (or null) with its random choices, then
   * an operation: client {@code client} acquires if it holds nothing, else releases if {@code
   * release} (else holds on); then {@code gapNanos} pass. Drawn up front from the seed, apart from
   * the network's delays, so that a schedule can be shrunk one step or fault at a time.
   */
  record Step(
      Fault fault,
      int master,
      int other,
      double value,
      int client,
      boolean release,
      long gapNanos) {
    Step withoutFault() {
      return new Step(null, master, other, value, client, release, gapNanos);
    }
  }

  /**
   * A schedule of {@code steps} steps, a fault of {@code faults} one step in {@code faultEvery}.
   */
  static List<Step> schedule(long seed, int steps, Set<Fault> faults, int faultEvery) {
    java.util.Random random = new java.util.Random(~seed * 0x9E3779B97F4A7C15L);
    List<Fault> kinds = new ArrayList<>(faults);
    List<Step> schedule = new ArrayList<>(steps);
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
              random.nextBoolean(),
              random.nextInt(80_000_000)));
    }
    return schedule;
  }

  static final int MASTERS = 5;
  static final int CLIENTS = 3;
  static final Duration TTL = Duration.ofMillis(200);

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
    List<SimMaster> masters = new ArrayList<>();
    List<MasterClock> clocks = new ArrayList<>();
    for (int i = 0; i < MASTERS; i++) {
      MasterClock clock = new MasterClock(sim);
      clocks.add(clock);
      masters.add(new SimMaster(clock::micros, runId(i, 0)));
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
    List<String> trace = new ArrayList<>();
    int grants = 0;
    int injected = 0;
    long lastToken = 0;
    String fencing = null;
    int fencingAt = -1;
    try {
      for (int c = 0; c < CLIENTS; c++) {
        int client = c;
        ClientClock clock = new ClientClock(sim);
        clientClocks.add(clock);
        clients.add(
            SimRedLocks.build(
                settings.apply(
                    RedLock.builder().nodes(nodes).wakeUps(false).excludeUnfitMasters(false)),
                clock,
                i ->
                    new SimNodeClient(
                        sim,
                        masters.get(i),
                        clock,
                        Duration.ofMillis(50).toNanos(),
                        () -> 50_000 + sim.random().nextInt(450_000),
                        () -> healsAt[client][i]),
                new SimLoop(sim, clock),
                SimLoop.timing(sim, clock)));
      }
      clients.get(0).admitFreshNodes();
      Lease[] held = new Lease[CLIENTS];
      long[] validUntil = new long[CLIENTS];
      for (int step = 0; step < schedule.size(); step++) {
        Step next = schedule.get(step);
        if (next.fault() != null) {
          Fault fault = next.fault();
          int m = next.master();
          injected++;
          switch (fault) {
            case PARTITION ->
                healsAt[next.other()][m] = sim.now() + (long) (next.value() * 1_000_000_000);
            case RESTART_EMPTY -> {
              m = 2 + m % 3;
              masters.get(m).restart(false, runId(m, step + 1));
            }
            case RESTART_KEEPING_DATA -> {
              m = m % 2;
              masters.get(m).restart(true, runId(m, step + 1));
            }
            case SCRIPT_FLUSH -> masters.get(m).execute("SCRIPT", "FLUSH");
            case CLOCK_DRIFT -> clocks.get(m).rate(0.995 + 0.01 * next.value());
            case CLOCK_TOO_FAST -> clocks.get(m).rate(2);
            case CLOCK_STEP_BACK -> clocks.get(m).step(-(long) (next.value() * 10_000_000));
            case CLIENT_CLOCK_DRIFT ->
                clientClocks.get(next.other()).rate(0.995 + 0.01 * next.value());
            case CLIENT_CLOCK_TOO_SLOW -> clientClocks.get(next.other()).rate(0.5);
          }
          trace.add(sim.now() + " " + fault + " master " + m);
        }
        int c = next.client();
        if (held[c] == null) {
          Optional<Lease> lease;
          try {
            lease = clients.get(c).tryAcquire("resource", TTL);
          } catch (QuorumUnavailableException e) { // too few masters answered: no one holds it
            trace.add(sim.now() + " " + c + " unavailable");
            sim.runFor(next.gapNanos());
            continue;
          }
          trace.add(sim.now() + " " + c + (lease.isPresent() ? " granted" : " refused"));
          if (lease.isPresent()) {
            for (int other = 0; other < CLIENTS; other++) {
              if (other != c && held[other] != null && validUntil[other] > sim.now()) {
                return new Run(
                    trace,
                    grants,
                    injected,
                    sim.eventsRun(),
                    String.format(
                        "seed %d step %d: client %d granted at %d ns while client %d's lease is"
                            + " valid until %d ns",
                        seed, step, c, sim.now(), other, validUntil[other]),
                    fencing,
                    step);
              }
            }
            held[c] = lease.get();
            try { // the token, chosen during the acquire: above every earlier grant's
              long token = lease.get().fencingToken();
              trace.add(sim.now() + " " + c + " token " + token);
              if (token <= lastToken && fencing == null) {
                fencingAt = step;
                fencing =
                    String.format(
                        "seed %d step %d: client %d's token %d after a grant's %d",
                        seed, step, c, token, lastToken);
              }
              lastToken = Math.max(lastToken, token);
            } catch (RedLockException e) { // lost meanwhile, or no quorum to store it
              trace.add(sim.now() + " " + c + " no token");
            }
            // Until when the client believes it holds the lease, on the simulation's true time.
            ClientClock clock = clientClocks.get(c);
            validUntil[c] =
                clock.toSimulation(clock.read() + lease.get().remainingValidity().toNanos());
            grants++;
          }
        } else if (next.release()) { // else it holds on, maybe past its validity
          held[c].close();
          held[c] = null;
          trace.add(sim.now() + " " + c + " released");
        }
        sim.runFor(next.gapNanos());
      }
      return new Run(trace, grants, injected, sim.eventsRun(), null, fencing, fencingAt);
    } finally {
      // Every command answered before the clients close: a close waits for replies in flight,
      // and on virtual time only the simulation's events bring them.
      for (long[] row : healsAt) {
        java.util.Arrays.fill(row, 0);
      }
      sim.runFor(Duration.ofSeconds(5).toNanos());
      for (RedLock client : clients) {
        client.close();
      }
    }
  }

  static Run run(long seed, int steps) throws Exception {
    return run(seed, steps, EnumSet.noneOf(Fault.class), 1, b -> b, source -> source);
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

  private static String runId(int master, int run) {
    return String.format("%040x", master * 1_000_000L + run);
  }
}
