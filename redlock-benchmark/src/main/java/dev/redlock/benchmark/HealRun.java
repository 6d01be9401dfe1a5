package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.drill.Harness.CannotRun;
import dev.redlock.drill.Masters;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Section 5 of the benchmark, "heal": how soon the default RedLock grants a lease again once hung
 * masters are healthy.
 *
 * <p>On the local masters, each repetition takes a new default RedLock (fencing, restart guard,
 * circuit breakers) and gets one lease to warm it up. Then {@value #HUNG} masters are hung with
 * {@code SIGSTOP} while it calls {@code tryAcquire} {@value #HANG_ROUNDS} times (each should fail
 * with {@link QuorumUnavailableException}), and resumed with {@code SIGCONT}. From the moment the
 * last of them runs again, the same RedLock calls {@code tryAcquire} on a new key every {@value
 * #PAUSE_MILLIS} ms, releasing nothing in between, until one is granted or {@link #LIMIT} has
 * passed: the first figure. The second is the outcome of the {@code tryAcquire} made {@link #LATER}
 * after that moment. The goal the figures are held against is a first lease within {@link #GOAL}.
 * Each repetition also records the circuit-breaker transitions its RedLock reported, with their
 * times after the heal.
 *
 * <p>The masters are child processes of this JVM (see {@link Masters}); a repetition that fails
 * resumes them before it ends. Not thread-safe: one thread runs it.
 */
final class HealRun {

  /** How many of the masters are hung. */
  static final int HUNG = 3;

  /** How many failing tryAcquire calls are made while they hang. */
  static final int HANG_ROUNDS = 15;

  /** How long after the heal the first lease is waited for. */
  static final Duration LIMIT = Duration.ofSeconds(5);

  /** When after the heal the second figure's tryAcquire is made. */
  static final Duration LATER = Duration.ofMillis(1_500);

  /** The goal: the first lease within this of every master being healthy again. */
  static final Duration GOAL = Duration.ofMillis(100);

  /** The pause between two tryAcquire calls after the heal, so a failing call does not spin. */
  static final long PAUSE_MILLIS = 1;

  private final Masters masters;
  private final Duration nodeTimeout;
  private long keys;

  private HealRun(Masters masters, Duration nodeTimeout) {
    this.masters = masters;
    this.nodeTimeout = nodeTimeout;
  }

  /**
   * Measures and prints the heal section on {@code masters}, {@code repeats} times.
   *
   * @throws IllegalStateException if the masters are not local, or a master cannot be paused or
   *     resumed
   * @throws CannotRun if the default RedLock gets no lease on the healthy masters
   */
  static Heal measure(Masters masters, int repeats, Duration nodeTimeout, HealReport report)
      throws CannotRun {
    requireNonNull(masters, "masters");
    requireNonNull(nodeTimeout, "nodeTimeout");
    requireNonNull(report, "report");
    if (repeats < 1) {
      throw new IllegalArgumentException("repeats must be at least 1: " + repeats);
    }
    List<RedisProcess> hung = masters.processes().subList(0, HUNG);
    String admission;
    try (RedLock admitting = newRedLock(masters, nodeTimeout, new BreakerLog())) {
      admission = BenchmarkRun.admit(admitting);
    }
    report.start(masters, hung, repeats, nodeTimeout, admission);
    HealRun run = new HealRun(masters, nodeTimeout);
    List<Repeat> done = new ArrayList<>();
    for (int i = 0; i < repeats; i++) {
      Repeat repeat = run.once(hung);
      report.repeat(i, repeats, repeat);
      done.add(repeat);
    }
    Heal heal = new Heal(done);
    report.summary(heal);
    return heal;
  }

  /** One repetition, with a RedLock of its own. */
  private Repeat once(List<RedisProcess> hung) throws CannotRun {
    BreakerLog breakers = new BreakerLog();
    try (RedLock redlock = newRedLock(masters, nodeTimeout, breakers)) {
      warmUp(redlock);
      int unavailable = 0;
      long healedAt;
      try {
        for (RedisProcess master : hung) {
          master.pause();
        }
        for (int i = 0; i < HANG_ROUNDS; i++) {
          if (tryOnce(redlock).unavailable()) {
            unavailable++;
          }
        }
      } finally {
        for (RedisProcess master : hung) {
          master.resume();
        }
        healedAt = System.nanoTime();
      }
      return afterHeal(redlock, healedAt, unavailable, breakers);
    }
  }

  private Repeat afterHeal(RedLock redlock, long healedAt, int unavailable, BreakerLog breakers) {
    long giveUp = healedAt + LIMIT.toNanos();
    long laterAt = healedAt + LATER.toNanos();
    Optional<Duration> firstLease = Optional.empty();
    Optional<Attempt> later = Optional.empty();
    int calls = 0;
    while (System.nanoTime() - giveUp < 0) {
      boolean isLater = later.isEmpty() && System.nanoTime() - laterAt >= 0;
      Attempt attempt = tryOnce(redlock);
      calls++;
      if (isLater) {
        later = Optional.of(attempt);
      }
      if (attempt.granted()) {
        firstLease = Optional.of(Duration.ofNanos(attempt.returnedAt() - healedAt));
        break;
      }
      pause();
    }
    if (later.isEmpty()) {
      parkUntil(laterAt);
      later = Optional.of(tryOnce(redlock));
    }
    return new Repeat(
        HANG_ROUNDS,
        unavailable,
        breakers.openedBefore(healedAt),
        firstLease,
        calls,
        later.get().outcome(),
        later.get().granted(),
        Duration.ofNanos(later.get().madeAt() - healedAt),
        breakers.since(healedAt).stream()
            .map(t -> new BreakerChange(t.node(), t.state(), Duration.ofNanos(t.at() - healedAt)))
            .toList());
  }

  /** Gets one lease on the healthy masters, so connections and breakers are warm. */
  private void warmUp(RedLock redlock) throws CannotRun {
    long giveUp = System.nanoTime() + LIMIT.toNanos();
    Attempt attempt;
    do {
      attempt = tryOnce(redlock);
      if (attempt.granted()) {
        return;
      }
      pause();
    } while (System.nanoTime() - giveUp < 0);
    throw new CannotRun(
        "heal: the default RedLock got no lease on the healthy masters within "
            + LIMIT.toSeconds()
            + " s: "
            + attempt.outcome());
  }

  /** One tryAcquire on a new key; a lease granted is released at once. */
  private Attempt tryOnce(RedLock redlock) {
    String key = "bench:heal:" + keys++;
    long madeAt = System.nanoTime();
    Optional<Lease> lease;
    try {
      lease = redlock.tryAcquire(key, Benchmark.TTL);
    } catch (QuorumUnavailableException e) {
      String why = e.getClass().getSimpleName() + ": " + e.getMessage();
      return new Attempt(madeAt, System.nanoTime(), false, true, why);
    }
    long returnedAt = System.nanoTime();
    lease.ifPresent(Lease::close);
    String outcome = lease.isPresent() ? "granted" : "refused: taken";
    return new Attempt(madeAt, returnedAt, lease.isPresent(), false, outcome);
  }

  private static RedLock newRedLock(Masters masters, Duration nodeTimeout, BreakerLog breakers) {
    return RedLock.builder()
        .nodes(masters.uris())
        .nodeTimeout(nodeTimeout)
        .listener(breakers)
        .build();
  }

  /**
   * Waits {@value #PAUSE_MILLIS} ms. Parks until a deadline rather than once: a late reply to an
   * earlier round may leave the library's unpark on this thread, and a single park would return at
   * once.
   */
  private static void pause() {
    parkUntil(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(PAUSE_MILLIS));
  }

  /** Parks until {@code deadline} on {@link System#nanoTime()}: a measurement made on time. */
  private static void parkUntil(long deadline) {
    for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }

  /**
   * One tryAcquire.
   *
   * @param madeAt when it was called, on {@link System#nanoTime()}
   * @param returnedAt when it returned
   * @param granted whether it got a lease
   * @param unavailable whether it threw {@link QuorumUnavailableException}
   * @param outcome {@code "granted"}, or why not: the exception with its message
   */
  private record Attempt(
      long madeAt, long returnedAt, boolean granted, boolean unavailable, String outcome) {}

  /**
   * One repetition's figures.
   *
   * @param hangRounds tryAcquire calls made while the masters hung
   * @param hangUnavailable how many of them threw {@link QuorumUnavailableException}
   * @param breakersOpened circuit breakers reported OPEN before the heal
   * @param firstLease from the heal to the first lease; empty if none came within {@link #LIMIT}
   * @param calls tryAcquire calls made after the heal until the first lease (or the limit)
   * @param later the outcome of the tryAcquire made {@link #LATER} after the heal
   * @param laterGranted whether that one got a lease
   * @param laterMadeAt when that one was called, after the heal (late if the machine stalled)
   * @param afterHeal circuit-breaker transitions reported after the heal, in order
   */
  record Repeat(
      int hangRounds,
      int hangUnavailable,
      long breakersOpened,
      Optional<Duration> firstLease,
      int calls,
      String later,
      boolean laterGranted,
      Duration laterMadeAt,
      List<BreakerChange> afterHeal) {

    Repeat {
      requireNonNull(firstLease, "firstLease");
      requireNonNull(later, "later");
      requireNonNull(laterMadeAt, "laterMadeAt");
      afterHeal = List.copyOf(afterHeal);
    }
  }

  /**
   * One circuit-breaker transition after the heal.
   *
   * @param node the master, {@code host:port}
   * @param state the state the breaker went to
   * @param sinceHeal when it was reported, after the heal
   */
  record BreakerChange(String node, RedLockListener.CircuitState state, Duration sinceHeal) {
    BreakerChange {
      requireNonNull(node, "node");
      requireNonNull(state, "state");
      requireNonNull(sinceHeal, "sinceHeal");
    }
  }

  /**
   * The heal section's figures.
   *
   * @param repeats each repetition, in order
   */
  record Heal(List<Repeat> repeats) {
    Heal {
      repeats = List.copyOf(repeats);
    }

    /** Each repetition's first-lease figure; empty where none came within {@link #LIMIT}. */
    List<Optional<Duration>> firstLeases() {
      return repeats.stream().map(Repeat::firstLease).toList();
    }
  }
}
