package dev.redlock.simulation;

import static dev.redlock.simulation.SimHarness.CLIENTS;
import static dev.redlock.simulation.SimHarness.MASTERS;
import static dev.redlock.simulation.SimHarness.OVERRUN_BOUND_NANOS;
import static dev.redlock.simulation.SimHarness.TTL;

import dev.redlock.Lease;
import dev.redlock.LeaseLock;
import dev.redlock.LockTakenException;
import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * What the simulated clients do: a run's schedule of steps drawn from its seed (each a fault, then
 * an operation of one client), the resources they ask for, and how a client carries out its
 * operation through the public API and tells the {@link Checker}.
 */
final class Workload {

  private Workload() {}

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

    /** The resources this step's acquire asks for: {@link Workload#TARGETS}. */
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

  /**
   * An operator admits the masters from {@code client} ({@code admitFreshNodes}); whether master
   * {@code m} is admitted now (it may be cut off from that client).
   */
  static boolean admit(RedLock client, int m, Checker check) {
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
  static void acquire(RedLock client, int c, Step step, Checker check) {
    Simulation sim = check.sim;
    ClientClock clock = check.clocks.get(c);
    long startedAt = clock.waitReading();
    Duration maxWait = Duration.ofNanos(step.waitNanos());
    List<String> names = step.resources();
    boolean set = names.size() > 1;
    int mask = mask(names);
    if (step.op() == Op.WAIT || step.op() == Op.WITH_LOCK) {
      check.blockingMask[c] = mask; // waiting until its wait ends
      check.overtaken[c] = 0;
    }
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
          // It may outlast the schedule: the quiet at the end starts after it (a slowed clock's
          // wait lasts up to twice as long in true time).
          check.waitsEndBy =
              Math.max(check.waitsEndBy, sim.now() + 2 * step.waitNanos() + OVERRUN_BOUND_NANOS);
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
}
