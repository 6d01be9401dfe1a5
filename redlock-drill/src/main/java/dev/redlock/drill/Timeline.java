package dev.redlock.drill;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.DrillChecks.Window;
import dev.redlock.drill.FaultPlan.Interval;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import dev.redlock.drill.RoundLog.Rounds;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Everything a drill recorded over time, on one clock (nanoseconds since the workers started, read
 * from {@link System#nanoTime()}): each worker's lease windows, each successful tryAcquire with its
 * latency, each acquire round's answers per master, and each fault as it ran. What the HTML report
 * draws. Immutable once built.
 *
 * @param elapsedNanos how long the workers ran
 * @param masters the masters' names, {@code host:port}, in configuration order
 * @param leases per worker, its lease windows in the order it held them
 * @param grantTimes per worker, when each successful tryAcquire returned
 * @param grantLatencies per worker, how long each took, in the order of {@code grantTimes}
 * @param rounds per worker, its acquire rounds
 * @param faults the faults as they ran, in order of their begin
 * @param breaking the planned intervals in which more than a minority of masters was faulted
 */
record Timeline(
    long elapsedNanos,
    List<String> masters,
    List<List<Window>> leases,
    List<long[]> grantTimes,
    List<long[]> grantLatencies,
    List<Rounds> rounds,
    List<FaultWindow> faults,
    List<Interval> breaking) {

  Timeline {
    masters = List.copyOf(masters);
    leases = leases.stream().map(List::copyOf).toList();
    grantTimes = List.copyOf(grantTimes);
    grantLatencies = List.copyOf(grantLatencies);
    rounds = List.copyOf(rounds);
    faults = List.copyOf(faults);
    breaking = List.copyOf(breaking);
    if (grantTimes.size() != leases.size()
        || grantLatencies.size() != leases.size()
        || rounds.size() != leases.size()) {
      throw new IllegalArgumentException("one list per worker expected");
    }
  }

  int workers() {
    return leases.size();
  }

  /** Per master, how often it answered each status in the acquire rounds after the start. */
  List<Map<Status, Long>> outcomeCounts() {
    List<Map<Status, Long>> counts = new ArrayList<>();
    for (int m = 0; m < masters.size(); m++) {
      Map<Status, Long> perStatus = new EnumMap<>(Status.class);
      for (Status status : Status.values()) {
        perStatus.put(status, 0L);
      }
      counts.add(perStatus);
    }
    for (Rounds r : rounds) {
      for (int i = 0; i < r.size(); i++) {
        if (r.time(i) < 0) {
          continue;
        }
        for (int m = 0; m < masters.size(); m++) {
          counts.get(m).merge(r.status(i, m), 1L, Long::sum);
        }
      }
    }
    return counts;
  }

  /**
   * The pairs of overlapping lease windows: for windows sorted by start, each one that begins
   * before the latest end so far, with the worker whose window reaches that end.
   */
  List<Overlap> overlaps() {
    List<long[]> all = new ArrayList<>(); // from, to, worker
    for (int w = 0; w < leases.size(); w++) {
      for (Window window : leases.get(w)) {
        all.add(new long[] {window.from(), window.to(), w});
      }
    }
    all.sort((a, b) -> Long.compare(a[0], b[0]));
    List<Overlap> overlaps = new ArrayList<>();
    long latestEnd = Long.MIN_VALUE;
    int latestWorker = -1;
    for (long[] window : all) {
      if (latestWorker >= 0 && window[0] < latestEnd) {
        overlaps.add(
            new Overlap(window[0], Math.min(latestEnd, window[1]), latestWorker, (int) window[2]));
      }
      if (window[1] > latestEnd) {
        latestEnd = window[1];
        latestWorker = (int) window[2];
      }
    }
    return overlaps;
  }

  /**
   * Two leases held at once.
   *
   * @param from when the later one began
   * @param to when the first of the two ended
   * @param earlierWorker the worker that held the lease first
   * @param laterWorker the worker whose lease began inside it
   */
  record Overlap(long from, long to, int earlierWorker, int laterWorker) {}
}
