package dev.redlock.chaos;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Checks a run's history for what a lock must never allow, the way Jepsen's lock tests do:
 *
 * <ul>
 *   <li><b>Overlap</b>: a lease granted on a resource while another lease on the same resource was
 *       still valid (both on the shared monotonic clock). Each such lease is one violation.
 *   <li><b>Lost update</b>: every holder did a read-modify-write ({@code GET}, then {@code SET
 *       n+1}) of a counter guarded by the lock; a counter that ends below the number of increments
 *       its holders saw succeed lost the difference to an interleaving.
 * </ul>
 *
 * The report prints as one block of lines starting {@value #TAG}, so CI logs can be grepped.
 */
final class MutualExclusionChecker {

  static final String TAG = "CHECKER";
  private static final int SHOWN_OVERLAPS = 5;

  private MutualExclusionChecker() {}

  /** Two leases on one resource whose validity windows overlap; {@code second} began later. */
  record Overlap(LeaseRecord first, LeaseRecord second) {
    /** How long both were valid at once, in nanoseconds. */
    long nanos() {
      return Math.min(first.validUntil(), second.validUntil()) - second.acquiredAt();
    }

    @Override
    public String toString() {
      return String.format(
          "resource=%s %s held it until %.1f ms after %s was granted it (overlap %.1f ms)",
          first.resource(),
          first.client(),
          (first.validUntil() - second.acquiredAt()) / 1e6,
          second.client(),
          nanos() / 1e6);
    }
  }

  /**
   * Every lease that was granted while another lease on its resource was valid, paired with the
   * lease it overlapped (the one valid longest at that moment). Leases that were already expired
   * when they were returned never count.
   */
  static List<Overlap> overlaps(Collection<LeaseRecord> leases) {
    Map<String, List<LeaseRecord>> byResource =
        leases.stream()
            .filter(lease -> lease.lengthNanos() > 0)
            .collect(
                Collectors.groupingBy(LeaseRecord::resource, TreeMap::new, Collectors.toList()));
    List<Overlap> found = new ArrayList<>();
    for (List<LeaseRecord> ofOne : byResource.values()) {
      ofOne.sort(Comparator.comparingLong(LeaseRecord::acquiredAt));
      LeaseRecord longest = null;
      for (LeaseRecord lease : ofOne) {
        if (longest != null && lease.acquiredAt() - longest.validUntil() < 0) {
          found.add(new Overlap(longest, lease));
        }
        if (longest == null || lease.validUntil() - longest.validUntil() > 0) {
          longest = lease;
        }
      }
    }
    return found;
  }

  /**
   * A grant that came within the exposure window after an earlier lease's deadline, and before that
   * lease's holder let go of it ({@code ended} was kept past its deadline, so {@code next} got in
   * only because the masters' keys expired): had the library's deadline been later by more than
   * {@link #gapNanos}, this grant would be an overlap.
   */
  record Exposure(LeaseRecord ended, LeaseRecord next) {
    /** From the earlier lease's deadline to the grant, in nanoseconds. */
    long gapNanos() {
      return next.acquiredAt() - ended.validUntil();
    }
  }

  /**
   * The grants that came less than {@code windowNanos} after the deadline of the lease valid
   * longest before them on their resource, where that lease was kept past its deadline ({@link
   * LeaseRecord#atDeadline}) and not yet released when the grant came. A run with them catches a
   * validity that outlives the masters' keys by {@code windowNanos} by design, not by chance: each
   * of these grants would be an overlap. Leases already expired when returned never count, as in
   * {@link #overlaps}.
   */
  static List<Exposure> exposures(Collection<LeaseRecord> leases, long windowNanos) {
    Map<String, List<LeaseRecord>> byResource =
        leases.stream()
            .filter(lease -> lease.lengthNanos() > 0)
            .collect(
                Collectors.groupingBy(LeaseRecord::resource, TreeMap::new, Collectors.toList()));
    List<Exposure> found = new ArrayList<>();
    for (List<LeaseRecord> ofOne : byResource.values()) {
      ofOne.sort(Comparator.comparingLong(LeaseRecord::acquiredAt));
      LeaseRecord longest = null;
      for (LeaseRecord lease : ofOne) {
        if (longest != null
            && longest.atDeadline()
            && lease.acquiredAt() - longest.releasedAt() < 0) {
          long gap = lease.acquiredAt() - longest.validUntil();
          if (gap >= 0 && gap < windowNanos) {
            found.add(new Exposure(longest, lease));
          }
        }
        if (longest == null || lease.validUntil() - longest.validUntil() > 0) {
          longest = lease;
        }
      }
    }
    return found;
  }

  /**
   * Checks a run.
   *
   * @param label what ran, for the printed block
   * @param clients how many clients contended
   * @param leases every lease granted
   * @param increments per resource, the increments whose {@code SET} succeeded (empty with {@code
   *     counters} when the scenario keeps no counter)
   * @param counters per resource, the counter's final value
   * @param faults per kind, how many faults were injected (empty without a nemesis)
   * @param notes further {@code key=value} facts to print, in order
   */
  static Report check(
      String label,
      int clients,
      Collection<LeaseRecord> leases,
      Map<String, Long> increments,
      Map<String, Long> counters,
      Map<String, Long> faults,
      List<String> notes) {
    long lost = 0;
    long unconfirmed = 0;
    long incrementTotal = 0;
    long counterTotal = 0;
    Set<String> resources = new TreeSet<>(increments.keySet());
    resources.addAll(counters.keySet());
    for (String resource : resources) {
      long done = increments.getOrDefault(resource, 0L);
      long value = counters.getOrDefault(resource, 0L);
      incrementTotal += done;
      counterTotal += value;
      if (done > value) {
        lost += done - value;
      } else {
        unconfirmed += value - done;
      }
    }
    return new Report(
        label,
        clients,
        !(increments.isEmpty() && counters.isEmpty()),
        List.copyOf(leases),
        overlaps(leases),
        incrementTotal,
        counterTotal,
        lost,
        unconfirmed,
        new TreeMap<>(faults),
        List.copyOf(notes));
  }

  /**
   * The outcome of a check.
   *
   * @param guarded whether the run kept guarded counters (false: lost updates are not measured)
   * @param lostUpdates increments the counters do not show
   * @param unconfirmedUpdates counter increments beyond those reported successful (a {@code SET}
   *     applied whose reply was lost); not a safety violation
   */
  record Report(
      String label,
      int clients,
      boolean guarded,
      List<LeaseRecord> leases,
      List<Overlap> overlaps,
      long increments,
      long counters,
      long lostUpdates,
      long unconfirmedUpdates,
      Map<String, Long> faults,
      List<String> notes) {

    int acquisitions() {
      return leases.size();
    }

    int violations() {
      return overlaps.size();
    }

    long faultTotal() {
      return faults.values().stream().mapToLong(Long::longValue).sum();
    }

    long distinctHolders() {
      return leases.stream().map(LeaseRecord::client).distinct().count();
    }

    /** Prints the block, every line starting {@value MutualExclusionChecker#TAG}. */
    void print(PrintStream out) {
      StringBuilder block = new StringBuilder();
      line(block, "==== " + label + " ====");
      line(
          block,
          "clients="
              + clients
              + " acquisitions="
              + acquisitions()
              + " holders="
              + distinctHolders());
      StringBuilder kinds = new StringBuilder("faults total=" + faultTotal());
      faults.forEach((kind, count) -> kinds.append(' ').append(kind).append('=').append(count));
      line(block, kinds.toString());
      line(block, "violations=" + violations() + " (leases granted while another was valid)");
      for (int i = 0; i < Math.min(SHOWN_OVERLAPS, overlaps.size()); i++) {
        line(block, "  violation " + overlaps.get(i));
      }
      if (overlaps.size() > SHOWN_OVERLAPS) {
        line(block, "  ... and " + (overlaps.size() - SHOWN_OVERLAPS) + " more");
      }
      if (!guarded) {
        line(block, "lost_updates=n/a (no guarded counter in this scenario)");
      } else {
        line(
            block,
            "lost_updates="
                + lostUpdates
                + " (increments="
                + increments
                + " counters="
                + counters
                + " unconfirmed="
                + unconfirmedUpdates
                + ")");
      }
      for (String note : notes) {
        line(block, note);
      }
      out.print(block);
      out.flush();
    }

    private static void line(StringBuilder block, String text) {
      block.append(TAG).append(' ').append(text).append(System.lineSeparator());
    }
  }
}
