package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.Percentiles.Summary;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * What the drill checks, as pure functions over what the workers recorded: no two validity windows
 * overlap, fencing tokens rise in acquisition order, no update was lost, some lease was granted.
 * The {@link Result} carries the figures and the verdict.
 */
final class DrillChecks {

  private DrillChecks() {}

  /**
   * Counts windows that begin before an earlier-beginning window has ended: for windows sorted by
   * start, every one whose start is before the latest end seen so far. A window is a pair {@code
   * [from, to]} of readings of one monotonic clock.
   */
  static long countOverlaps(List<Window> windows) {
    return handovers(windows).overlaps();
  }

  /** Sorts the windows and measures every hand-over from one holder to the next. */
  static Handovers handovers(List<Window> windows) {
    List<Window> sorted = new ArrayList<>(windows);
    sorted.sort(Comparator.comparingLong(Window::from));
    long overlaps = 0;
    long closest = Long.MAX_VALUE;
    long latestEnd = Long.MIN_VALUE;
    for (int i = 0; i < sorted.size(); i++) {
      Window window = sorted.get(i);
      if (i > 0) {
        long gap = window.from() - latestEnd;
        closest = Math.min(closest, gap);
        if (gap < 0) {
          overlaps++;
        }
      }
      latestEnd = Math.max(latestEnd, window.to());
    }
    return new Handovers(overlaps, sorted.size() < 2 ? 0 : closest);
  }

  /**
   * Checks that fencing tokens rise in acquisition order: per resource, with the grants sorted by
   * the moment they were acquired, each token must be greater than the one before it.
   */
  static FencingOrder fencingOrder(List<Grant> grants) {
    Map<String, List<Grant>> byResource = new TreeMap<>();
    for (Grant grant : grants) {
      byResource.computeIfAbsent(grant.resource(), r -> new ArrayList<>()).add(grant);
    }
    long notIncreasing = 0;
    Grant firstBefore = null;
    Grant firstAfter = null;
    for (List<Grant> leases : byResource.values()) {
      leases.sort(Comparator.comparingLong(Grant::acquiredAt));
      for (int i = 1; i < leases.size(); i++) {
        Grant before = leases.get(i - 1);
        Grant after = leases.get(i);
        if (after.token() <= before.token()) {
          notIncreasing++;
          if (firstAfter == null || after.acquiredAt() < firstAfter.acquiredAt()) {
            firstBefore = before;
            firstAfter = after;
          }
        }
      }
    }
    return new FencingOrder(
        grants.size(),
        notIncreasing,
        Optional.ofNullable(firstBefore),
        Optional.ofNullable(firstAfter));
  }

  /**
   * Why the workers' totals fail the drill, in the order the report lists them; empty if they pass.
   *
   * @param acquisitions leases granted
   * @param unavailableRounds tryAcquire calls that failed because too few masters answered
   * @param restartedRounds rounds in which some master answered RESTARTED
   * @param finalInventory the counter's value after every worker stopped
   * @param expectedInventory the counter's value if no update was lost
   * @param handovers the hand-overs between the validity windows
   * @param fencing whether the fencing tokens rose
   */
  static List<String> failures(
      long acquisitions,
      long unavailableRounds,
      long restartedRounds,
      long finalInventory,
      long expectedInventory,
      Handovers handovers,
      FencingOrder fencing) {
    List<String> failures =
        new ArrayList<>(availability(acquisitions, unavailableRounds, restartedRounds));
    failures.addAll(violations(finalInventory, expectedInventory, handovers, fencing));
    return failures;
  }

  /**
   * Why the drill measured nothing: no lease was granted. Empty if some was.
   *
   * @param acquisitions leases granted
   * @param unavailableRounds tryAcquire calls that failed because too few masters answered
   * @param restartedRounds rounds in which some master answered RESTARTED
   */
  static List<String> availability(
      long acquisitions, long unavailableRounds, long restartedRounds) {
    if (acquisitions > 0) {
      return List.of();
    }
    return List.of(
        "no lease was granted"
            + (unavailableRounds > 0
                ? " (" + unavailableRounds + " rounds: too few masters could vote)"
                : "")
            + (restartedRounds > 0 ? "; masters answered RESTARTED: see the hint above" : ""));
  }

  /**
   * The safety violations: a lost update, overlapping leases, fencing tokens that did not rise.
   * Empty if the lock did its job.
   *
   * @param finalInventory the counter's value after every worker stopped
   * @param expectedInventory the counter's value if no update was lost
   * @param handovers the hand-overs between the validity windows
   * @param fencing whether the fencing tokens rose
   */
  static List<String> violations(
      long finalInventory, long expectedInventory, Handovers handovers, FencingOrder fencing) {
    List<String> violations = new ArrayList<>();
    if (finalInventory != expectedInventory) {
      violations.add(
          "final inventory "
              + finalInventory
              + " but expected "
              + expectedInventory
              + ": "
              + Math.abs(expectedInventory - finalInventory)
              + " updates lost");
    }
    if (handovers.overlaps() > 0) {
      violations.add(handovers.overlaps() + " leases overlapped another");
    }
    if (!fencing.increasing()) {
      violations.add(
          fencing.notIncreasing()
              + " fencing tokens were not above the previous lease's (acquisition order)");
    }
    return violations;
  }

  /**
   * One lease's validity window, in nanoseconds since the drill started.
   *
   * @param from when tryAcquire returned the lease
   * @param to the earlier of the start of the release and the lease's deadline
   */
  record Window(long from, long to) {}

  /**
   * The hand-overs between consecutive windows.
   *
   * @param overlaps how many windows began before an earlier one ended; must be zero
   * @param closestNanos the shortest gap between one window's end and the next one's start
   *     (negative if some overlapped; zero with fewer than two windows)
   */
  record Handovers(long overlaps, long closestNanos) {}

  /**
   * One granted lease's fencing token.
   *
   * @param resource the resource locked
   * @param acquiredAt when tryAcquire returned the lease, in nanoseconds since the drill started
   * @param token the lease's fencing token
   */
  record Grant(String resource, long acquiredAt, long token) {
    Grant {
      requireNonNull(resource, "resource");
    }
  }

  /**
   * Whether the fencing tokens rose in acquisition order.
   *
   * @param leases how many leases were checked
   * @param notIncreasing how many tokens were not greater than the previous lease's on the same
   *     resource; must be zero
   * @param firstBefore the earlier lease of the earliest such pair, if any
   * @param firstAfter the later lease of the earliest such pair, if any
   */
  record FencingOrder(
      long leases, long notIncreasing, Optional<Grant> firstBefore, Optional<Grant> firstAfter) {

    FencingOrder {
      requireNonNull(firstBefore, "firstBefore");
      requireNonNull(firstAfter, "firstAfter");
    }

    /** Whether every token was greater than the one before it. */
    boolean increasing() {
      return notIncreasing == 0;
    }
  }

  /**
   * The outcome of a drill.
   *
   * @param acquisitions leases granted
   * @param decrements counter writes made under a lease
   * @param failedRounds tryAcquire calls refused because another worker held the lock
   * @param unavailableRounds tryAcquire calls that failed because too few masters answered
   * @param longWaits waits for a lease longer than {@link Drill#MAX_WAIT}
   * @param expiredBeforeWrite leases found invalid before the write
   * @param perWorker acquisitions of each worker
   * @param initialInventory the counter's initial value
   * @param finalInventory the counter's value after every worker stopped
   * @param soldOut whether a worker found the counter at zero
   * @param windows how many validity windows were recorded
   * @param violations overlapping windows; see {@link #countOverlaps}
   * @param closestHandoverNanos the shortest gap between consecutive windows
   * @param acquireLatency durations of the successful tryAcquire calls, in nanoseconds
   * @param waitLatency from the first try to the lease, backoff included, in nanoseconds
   * @param elapsedNanos how long the workers ran
   * @param fencing whether the fencing tokens rose in acquisition order
   * @param restartedRounds rounds in which some master answered RESTARTED
   * @param breakersOpened the masters whose circuit breaker opened, in any worker's RedLock
   * @param failures why the drill failed; empty if it passed
   * @param assumptionBroken whether the fault plan broke the quorum assumption on purpose ({@code
   *     --allow-breaking}), so that violations are reported, not failed
   * @param tolerated the violations seen under such a plan (see {@link #violations}); empty
   *     otherwise
   */
  record Result(
      long acquisitions,
      long decrements,
      long failedRounds,
      long unavailableRounds,
      long longWaits,
      long expiredBeforeWrite,
      List<Long> perWorker,
      long initialInventory,
      long finalInventory,
      boolean soldOut,
      long windows,
      long violations,
      long closestHandoverNanos,
      Summary acquireLatency,
      Summary waitLatency,
      long elapsedNanos,
      FencingOrder fencing,
      long restartedRounds,
      List<String> breakersOpened,
      List<String> failures,
      boolean assumptionBroken,
      List<String> tolerated) {

    Result {
      perWorker = List.copyOf(perWorker);
      breakersOpened = List.copyOf(breakersOpened);
      failures = List.copyOf(failures);
      tolerated = List.copyOf(tolerated);
      requireNonNull(acquireLatency, "acquireLatency");
      requireNonNull(waitLatency, "waitLatency");
      requireNonNull(fencing, "fencing");
    }

    /** Returns a copy with one more failure. */
    Result withFailure(String failure) {
      List<String> more = new ArrayList<>(failures);
      more.add(requireNonNull(failure, "failure"));
      return new Result(
          acquisitions,
          decrements,
          failedRounds,
          unavailableRounds,
          longWaits,
          expiredBeforeWrite,
          perWorker,
          initialInventory,
          finalInventory,
          soldOut,
          windows,
          violations,
          closestHandoverNanos,
          acquireLatency,
          waitLatency,
          elapsedNanos,
          fencing,
          restartedRounds,
          breakersOpened,
          more,
          assumptionBroken,
          tolerated);
    }

    /** Whether the drill passed: no failures. */
    boolean passed() {
      return failures.isEmpty();
    }

    /** The counter's value if no update was lost. */
    long expectedInventory() {
      return initialInventory - decrements;
    }

    long fewestPerWorker() {
      return perWorker.stream().mapToLong(Long::longValue).min().orElse(0);
    }

    long mostPerWorker() {
      return perWorker.stream().mapToLong(Long::longValue).max().orElse(0);
    }
  }
}
