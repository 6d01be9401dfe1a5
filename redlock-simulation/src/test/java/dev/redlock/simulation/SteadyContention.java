package dev.redlock.simulation;

import static dev.redlock.simulation.SimHarness.CLIENTS;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.simulation.Workload.Op;
import dev.redlock.simulation.Workload.Step;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * {@link Fault#STEADY_CONTENTION}: a set's waiter among single waiters that never let the resource
 * go unasked. The two other clients take the first resource in turn, each holding it 1 to 10 ms and
 * asking again (async) as soon as its release is answered, for as long as this step's client waits
 * (blocking, up to {@link #WAIT_NANOS}) for a set that includes it. Under a set's waiter that never
 * queues (R6), every release names a queued single waiter, and the set's rounds, at its timer, find
 * the resource taken again and again; the checker counts the grants to others of the resources a
 * set waits for ({@link Checker#OVERTAKEN_BOUND}).
 */
final class SteadyContention {

  /** How long the set's waiter waits: the burst lasts as long. */
  static final long WAIT_NANOS = 1_000_000_000L;

  /** The targets that are sets including the first resource ({@link Workload#TARGETS}). */
  private static final int[] SETS =
      java.util.stream.IntStream.range(0, Workload.TARGETS.size())
          .filter(
              t ->
                  Workload.TARGETS.get(t).size() > 1
                      && Workload.TARGETS.get(t).contains(Workload.RESOURCES.get(0)))
          .toArray();

  private final Simulation sim;
  private final Checker check;
  private final List<RedLock> clients;
  private boolean over;

  private SteadyContention(Simulation sim, Checker check, List<RedLock> clients) {
    this.sim = sim;
    this.check = check;
    this.clients = clients;
  }

  /**
   * Runs a burst for client {@code c}, which then waits for a set (the {@code value}'s half picks
   * which): what the clients hold is released first, as their programs would; the burst does not
   * start while a client waits, is cut off or paused ({@code busy}).
   */
  static void run(
      Simulation sim,
      Checker check,
      List<RedLock> clients,
      int c,
      int master,
      double value,
      java.util.function.IntPredicate busy,
      java.util.function.IntConsumer release) {
    for (int x = 0; x < CLIENTS; x++) {
      if (busy.test(x)) {
        check.trace.add(sim.now() + " steady contention not started: client " + x + " busy");
        return;
      }
    }
    for (int x = 0; x < CLIENTS; x++) {
      if (check.held[x] != null) {
        release.accept(x);
      }
    }
    SteadyContention burst = new SteadyContention(sim, check, clients);
    for (int w = 0; w < CLIENTS; w++) {
      if (w != c) {
        burst.ask(w, clients.get(w));
      }
    }
    int set = SETS[value < 0.5 ? 0 : 1];
    Workload.acquire(
        clients.get(c),
        c,
        new Step(null, master, c, 0, c, Op.WAIT, WAIT_NANOS, false, 0, set),
        check);
    burst.over = true; // what the workers hold or wait for now is theirs, as after any async step
  }

  /** Worker {@code w} asks for the first resource, async, unless the burst is over. */
  private void ask(int w, RedLock client) {
    if (over || clients.get(w) != client || check.held[w] != null || check.pending.get(w) != null) {
      return; // over, or its client crashed or closed, or a step of its own took over
    }
    Workload.acquire(
        client, w, new Step(null, 0, w, 0, w, Op.ASYNC, WAIT_NANOS, false, 0, 0), check);
    CompletableFuture<Lease> waiting = check.pending.get(w);
    if (waiting == null) {
      return;
    }
    waiting.whenComplete(
        (lease, failure) -> {
          if (waiting.isCancelled()) {
            return;
          }
          if (lease == null) {
            sim.after(0, () -> ask(w, client)); // refused or out of time: asks again
            return;
          }
          long hold = 1_000_000 + sim.random().nextInt(9_000_000);
          sim.after(hold, () -> releaseAndAsk(w, client, lease));
        });
  }

  private void releaseAndAsk(int w, RedLock client, Lease lease) {
    if (over || check.held[w] != lease) {
      return; // over (it holds it on, as after any async grant), or lost, or released by a step
    }
    check.releasing(w);
    check.trace.add(sim.now() + " " + w + " releases (steady contention)");
    lease.releaseAsync().whenComplete((done, failure) -> sim.after(0, () -> ask(w, client)));
  }
}
