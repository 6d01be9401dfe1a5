package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.benchmark.Benchmark.Config;
import dev.redlock.drill.Samples;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * Section 2 of the benchmark: acquire+release throughput of every measured {@link Contender}, with
 * {@link #THREAD_COUNTS} threads, each thread on keys of its own (the RedLocks and Redisson share
 * one client among the threads; the floor gives each thread its own sockets; node-redlock runs as
 * many async loops in its one process). After a warm-up, each contender and thread count runs
 * {@value #ROUNDS} blocks, one of each per round, in reverse order every other round, like the
 * latency blocks. Not thread-safe: one thread runs it (and starts the measuring threads).
 */
final class ThroughputRun {

  /** How many blocks each contender and thread count runs. */
  static final int ROUNDS = 3;

  /** How many threads (node-redlock: concurrent async loops) run at once. */
  static final List<Integer> THREAD_COUNTS = List.of(8, 32);

  /** How a contender runs one throughput block. */
  @FunctionalInterface
  interface Blocks {
    /**
     * Runs {@code threads} loops of acquire+release for {@code time}, each on keys of its own that
     * start with {@code prefix}; returns what they did.
     */
    Throughput block(int threads, Duration time, String prefix)
        throws IOException, InterruptedException;
  }

  private long blocks; // numbers each block's keys apart

  private ThroughputRun() {}

  /**
   * Measures and prints the throughput section; returns each run's totals, in the order of {@link
   * #runs}.
   */
  static List<Throughput> measure(Config config, List<Contender> contenders, BenchmarkReport report)
      throws IOException, InterruptedException {
    ThroughputRun run = new ThroughputRun();
    List<Run> runs = runs(contenders);
    Duration block = config.throughputTime().dividedBy(ROUNDS);
    Duration warmUp = block.compareTo(Duration.ofMillis(500)) < 0 ? block : Duration.ofMillis(500);
    report.throughputStart(warmUp, block);
    for (Run r : runs) {
      run.block(r, warmUp);
    }
    report.throughputHeading(contenders);
    List<List<Throughput>> blocks = new ArrayList<>();
    runs.forEach(r -> blocks.add(new ArrayList<>()));
    for (int round = 0; round < ROUNDS; round++) {
      List<Integer> order = new ArrayList<>();
      for (int i = 0; i < runs.size(); i++) {
        order.add(i);
      }
      if (round % 2 == 1) {
        Collections.reverse(order);
      }
      for (int i : order) {
        blocks.get(i).add(run.block(runs.get(i), block));
      }
      report.throughputRound(round, runs, blocks);
    }
    List<Throughput> totals = new ArrayList<>();
    for (int i = 0; i < runs.size(); i++) {
      Run r = runs.get(i);
      totals.add(Throughput.sum(r.contender().name(), r.threads(), blocks.get(i)));
    }
    return totals;
  }

  /** Every measured contender at every thread count, thread count first. */
  static List<Run> runs(List<Contender> contenders) {
    List<Run> runs = new ArrayList<>();
    for (int threads : THREAD_COUNTS) {
      for (Contender c : contenders) {
        if (c.runs()) {
          runs.add(new Run(c, threads));
        }
      }
    }
    return runs;
  }

  private Throughput block(Run run, Duration time) throws IOException, InterruptedException {
    String prefix = "bench:tp:" + run.contender().column() + ":" + blocks++ + ":";
    return run.contender().throughput().block(run.threads(), time, prefix);
  }

  /**
   * Throughput blocks run by threads of this JVM, thread {@code t} running {@code
   * cycles.forThread(t)} (asked for before the block's clock starts).
   */
  static Blocks onThreads(Cycle.PerThread cycles) {
    requireNonNull(cycles, "cycles");
    return (threads, time, prefix) -> onThreads(cycles, threads, time, prefix);
  }

  private static Throughput onThreads(
      Cycle.PerThread cycles, int threads, Duration time, String prefix)
      throws IOException, InterruptedException {
    CountDownLatch ready = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    long[] startAndEnd = new long[2]; // written before go.countDown(), read after go.await()
    List<Loop> loops = new ArrayList<>();
    List<Thread> running = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Loop loop = new Loop(cycles.forThread(t), prefix + t + ":", ready, go, startAndEnd);
      Thread thread = new Thread(loop, "bench-" + threads + "-" + t);
      thread.setDaemon(true);
      loops.add(loop);
      running.add(thread);
    }
    running.forEach(Thread::start);
    ready.await();
    startAndEnd[0] = System.nanoTime();
    startAndEnd[1] = startAndEnd[0] + time.toNanos();
    go.countDown();
    for (Thread thread : running) {
      thread.join();
    }
    long ops = 0;
    long failed = 0;
    long lastFinish = startAndEnd[1];
    Samples latency = new Samples();
    for (Loop loop : loops) {
      if (loop.error != null) {
        throw new IllegalStateException("throughput thread failed", loop.error);
      }
      ops += loop.ops;
      failed += loop.failed;
      lastFinish = Math.max(lastFinish, loop.finishedAt);
      latency.addAll(loop.latency);
    }
    return new Throughput("", threads, ops, failed, lastFinish - startAndEnd[0], latency);
  }

  /**
   * One throughput measurement: a contender and a thread count.
   *
   * @param contender the client
   * @param threads how many threads (or async loops) run it at once
   */
  record Run(Contender contender, int threads) {
    Run {
      requireNonNull(contender, "contender");
    }
  }

  /**
   * What one or more throughput blocks did.
   *
   * @param client which contender
   * @param threads how many threads (or async loops) ran it
   * @param ops acquire+release cycles completed
   * @param failed attempts that got no lease (too few masters answered in time)
   * @param elapsedNanos wall time of the blocks
   * @param latency the completed cycles' durations, in nanoseconds
   * @param rounds each block's ops/s, in the order they ran (empty for one block)
   */
  record Throughput(
      String client,
      int threads,
      long ops,
      long failed,
      long elapsedNanos,
      Samples latency,
      List<Double> rounds) {

    Throughput {
      requireNonNull(client, "client");
      requireNonNull(latency, "latency");
      rounds = List.copyOf(rounds);
    }

    /** One block's figures. */
    Throughput(
        String client, int threads, long ops, long failed, long elapsedNanos, Samples latency) {
      this(client, threads, ops, failed, elapsedNanos, latency, List.of());
    }

    double opsPerSecond() {
      return elapsedNanos <= 0 ? 0 : ops * 1e9 / elapsedNanos;
    }

    static Throughput sum(String client, int threads, List<Throughput> blocks) {
      long ops = 0;
      long failed = 0;
      long elapsed = 0;
      Samples latency = new Samples();
      List<Double> rounds = new ArrayList<>();
      for (Throughput b : blocks) {
        ops += b.ops();
        failed += b.failed();
        elapsed += b.elapsedNanos();
        latency.addAll(b.latency());
        rounds.add(b.opsPerSecond());
      }
      return new Throughput(client, threads, ops, failed, elapsed, latency, rounds);
    }
  }

  /** One throughput thread. Its fields are read after it was joined. */
  private static final class Loop implements Runnable {
    final Cycle cycle;
    final String prefix;
    final CountDownLatch ready;
    final CountDownLatch go;
    final long[] startAndEnd;
    final Samples latency = new Samples();
    long ops;
    long failed;
    long finishedAt;
    Throwable error;

    Loop(Cycle cycle, String prefix, CountDownLatch ready, CountDownLatch go, long[] times) {
      this.cycle = cycle;
      this.prefix = prefix;
      this.ready = ready;
      this.go = go;
      this.startAndEnd = times;
    }

    @Override
    public void run() {
      try {
        ready.countDown();
        go.await();
        long end = startAndEnd[1];
        long i = 0;
        long now = System.nanoTime();
        while (now - end < 0) {
          if (cycle.run(prefix + i++)) {
            long after = System.nanoTime();
            latency.add(after - now);
            ops++;
            now = after;
          } else {
            failed++;
            now = System.nanoTime();
          }
        }
        finishedAt = now;
      } catch (Throwable e) {
        error = e;
      }
    }
  }
}
