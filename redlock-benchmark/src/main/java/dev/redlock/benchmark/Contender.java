package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import java.util.Optional;

/**
 * One client the benchmark compares, a row of its table: the floor, a RedLock configuration,
 * Redisson's RedLock or node-redlock. It is measured two ways: {@code latency}, one thread timing
 * one acquire+release after another (interleaved in blocks with every other row's), and {@code
 * throughput}, blocks of 8 and 32 threads. A client that cannot run here (node missing, say) is a
 * row that says why instead.
 *
 * @param name the row's name, e.g. {@code "default RedLock"}
 * @param column its short name in the per-round tables, at most 8 characters
 * @param latency its one-thread operation; null when skipped
 * @param throughput how it runs a throughput block; null when skipped
 * @param skipped why it was not measured; null when it was
 */
record Contender(
    String name,
    String column,
    Operation latency,
    ThroughputRun.Blocks throughput,
    String skipped) {

  Contender {
    requireNonNull(name, "name");
    requireNonNull(column, "column");
    if ((skipped == null) == (latency == null || throughput == null)) {
      throw new IllegalArgumentException(
          "a contender is measured (latency and throughput) or skipped (a reason), not both");
    }
  }

  /** A row that is measured. */
  static Contender measured(
      String name, String column, Operation latency, ThroughputRun.Blocks throughput) {
    return new Contender(
        name,
        column,
        requireNonNull(latency, "latency"),
        requireNonNull(throughput, "throughput"),
        null);
  }

  /** A row that says why it was not measured. */
  static Contender skipped(String name, String column, String why) {
    return new Contender(name, column, null, null, requireNonNull(why, "why"));
  }

  /** Whether this row was measured. */
  boolean runs() {
    return skipped == null;
  }

  /** Why this row was not measured, if it was not. */
  Optional<String> whySkipped() {
    return Optional.ofNullable(skipped);
  }
}
