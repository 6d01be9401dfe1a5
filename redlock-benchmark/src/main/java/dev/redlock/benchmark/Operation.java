package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.Percentiles.Summary;
import dev.redlock.drill.Samples;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One measured operation of the benchmark: its label, what it does once (or, for a client in
 * another process, a whole block at a time), its samples, its per-block summaries and its failures;
 * and the two ways operations are run, warm-up and interleaved blocks. Not thread-safe: one thread
 * measures.
 */
final class Operation {

  /** What one operation does once: returns its timed part in nanoseconds. */
  @FunctionalInterface
  interface Body {
    long once(Operation self) throws IOException, InterruptedException;
  }

  /**
   * What one operation does {@code count} times in a row, timed by itself (a client in another
   * process): returns each completed operation's duration in nanoseconds, and counts its failures
   * on {@code self}.
   */
  @FunctionalInterface
  interface BlockBody {
    Samples block(int count, Operation self) throws IOException, InterruptedException;
  }

  /** Told after each round of an interleaved measurement. */
  @FunctionalInterface
  interface RoundListener {
    void roundDone(int round, int rounds);
  }

  final String label;
  final Samples samples = new Samples();
  final List<Summary> blocks = new ArrayList<>();
  long failures;
  private final BlockBody body;

  Operation(String label, Body body) {
    requireNonNull(body, "body");
    this.label = requireNonNull(label, "label");
    this.body =
        (count, self) -> {
          Samples samples = new Samples();
          for (int i = 0; i < count; i++) {
            samples.add(body.once(self));
          }
          return samples;
        };
  }

  private Operation(String label, BlockBody body) {
    this.label = requireNonNull(label, "label");
    this.body = requireNonNull(body, "body");
  }

  /** An operation that runs (and times) a block at a time, such as a client in another process. */
  static Operation ofBlocks(String label, BlockBody body) {
    return new Operation(label, body);
  }

  /**
   * Runs the operation once; returns its timed part in nanoseconds (for a block body, its only).
   */
  long once() throws IOException, InterruptedException {
    Samples one = block(1);
    return one.size() == 0 ? 0 : one.get(0);
  }

  /** Runs the operation {@code count} times; returns the durations of those that completed. */
  Samples block(int count) throws IOException, InterruptedException {
    return body.block(count, this);
  }

  /** Counts a failure (no lease, no quorum) if {@code failed}. */
  void failedIf(boolean failed) {
    if (failed) {
      failures++;
    }
  }

  /** Counts {@code count} failures (reported by a client in another process). */
  void addFailures(long count) {
    if (count < 0) {
      throw new IllegalArgumentException("count must not be negative: " + count);
    }
    failures += count;
  }

  /** The summary of every sample. */
  Summary summary() {
    return samples.summary();
  }

  /** The summary of the latest block. */
  Summary lastBlock() {
    return blocks.get(blocks.size() - 1);
  }

  /** Ratios of this operation's block medians to {@code other}'s, round by round. */
  List<Double> blockRatios(Operation other) {
    List<Double> ratios = new ArrayList<>();
    for (int i = 0; i < blocks.size() && i < other.blocks.size(); i++) {
      ratios.add(BenchmarkChecks.ratio(blocks.get(i).p50(), other.blocks.get(i).p50()));
    }
    return ratios;
  }

  /** Runs each operation {@code count} times, in blocks of up to 500, unmeasured. */
  static void warmUp(List<Operation> ops, int count) throws IOException, InterruptedException {
    int block = Math.max(1, Math.min(500, count));
    for (int done = 0; done < count; done += block) {
      for (Operation op : ops) {
        op.block(Math.min(block, count - done));
      }
    }
    for (Operation op : ops) {
      op.failures = 0;
    }
  }

  /**
   * Runs every operation {@code iterations} times in {@code rounds} blocks: one block of each per
   * round, in reverse order every other round; tells {@code afterRound} after each round.
   */
  static void interleave(List<Operation> ops, int iterations, int rounds, RoundListener afterRound)
      throws IOException, InterruptedException {
    int block = (iterations + rounds - 1) / rounds;
    int remaining = iterations;
    for (int round = 0; round < rounds && remaining > 0; round++) {
      int count = Math.min(block, remaining);
      remaining -= count;
      List<Operation> order = new ArrayList<>(ops);
      if (round % 2 == 1) {
        Collections.reverse(order);
      }
      for (Operation op : order) {
        Samples samples = op.block(count);
        op.blocks.add(samples.summary());
        op.samples.addAll(samples);
      }
      afterRound.roundDone(round, rounds);
    }
  }
}
