package dev.redlock.chaos;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The leases granted during a run, from any number of threads (and, merged from their output, of
 * worker JVMs). Thread-safe.
 */
final class LeaseHistory {

  private final ConcurrentLinkedQueue<LeaseRecord> records = new ConcurrentLinkedQueue<>();

  void add(LeaseRecord record) {
    records.add(record);
  }

  void addAll(Collection<LeaseRecord> more) {
    records.addAll(more);
  }

  int size() {
    return records.size();
  }

  /** A copy of every record so far, in no particular order. */
  List<LeaseRecord> records() {
    return new ArrayList<>(records);
  }
}
