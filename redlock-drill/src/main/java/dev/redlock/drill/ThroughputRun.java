package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.drill.Benchmark.Config;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;

/**
 * Section 2 of the benchmark: acquire+release throughput of the default and the plain RedLock, with
 * {@link #THREAD_COUNTS} threads sharing one RedLock, each thread on keys of its own. After a
 * warm-up, each client and thread count runs {@value #ROUNDS} blocks, alternating like the latency
 * blocks. Not thread-safe: one thread runs it (and starts the measuring threads).
 */
final class ThroughputRun {

  /** How many blocks each client and thread count runs. */
  static final int ROUNDS = 3;

  /** How many threads share one RedLock. */
  static final List<Integer> THREAD_COUNTS = List.of(8, 32);

  private long blocks; // numbers each block's keys apart

  private ThroughputRun() {}

  /** Measures and prints the throughput section; returns each client's totals. */
  static List<Throughput> measure(
      Config config, RedLock defaults, RedLock plain, BenchmarkReport report)
      throws InterruptedException {
    ThroughputRun run = new ThroughputRun();
    List<Run> runs = new ArrayList<>();
    for (int threads : THREAD_COUNTS) {
      runs.add(new Run("default RedLock", defaults, threads));
      runs.add(new Run("plain RedLock", plain, threads));
    }
    Duration block = config.throughputTime().dividedBy(ROUNDS);
    Duration warmUp = block.compareTo(Duration.ofMillis(500)) < 0 ? block : Duration.ofMillis(500);
    report.throughputStart(warmUp, block);
    for (Run r : runs) {
      run.block(r.redlock(), r.threads(), warmUp);
    }
    report.throughputHeading(runs);
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
        Run r = runs.get(i);
        blocks.get(i).add(run.block(r.redlock(), r.threads(), block));
      }
      report.throughputRound(round, blocks);
    }
    List<Throughput> totals = new ArrayList<>();
    for (int i = 0; i < runs.size(); i++) {
      Run r = runs.get(i);
      totals.add(Throughput.sum(r.name(), r.threads(), blocks.get(i)));
    }
    return totals;
  }

  /** {@code threads} threads acquire and release new keys of their own for {@code time}. */
  private Throughput block(RedLock redlock, int threads, Duration time)
      throws InterruptedException {
    CountDownLatch ready = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    long[] startAndEnd = new long[2]; // written before go.countDown(), read after go.await()
    List<Loop> loops = new ArrayList<>();
    List<Thread> running = new ArrayList<>();
    long block = blocks++;
    for (int t = 0; t < threads; t++) {
      Loop loop = new Loop(redlock, "bench:tp:" + block + ":" + t + ":", ready, go, startAndEnd);
      Thread thread = new Thread(loop, "bench-" + threads + "-" + t);
      thread.setDaemon(true);
      loops.add(loop);
      running.add(thread);
      thread.start();
    }
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
   * One throughput measurement: a client and a thread count.
   *
   * @param name the client's name in the report
   * @param redlock the client
   * @param threads how many threads share it
   */
  record Run(String name, RedLock redlock, int threads) {
    Run {
      requireNonNull(name, "name");
      requireNonNull(redlock, "redlock");
    }
  }

  /**
   * What one or more throughput blocks did.
   *
   * @param client which RedLock
   * @param threads how many threads shared it
   * @param ops acquire+release cycles completed
   * @param failed attempts that got no lease (too few masters answered in time)
   * @param elapsedNanos wall time of the blocks
   * @param latency the completed cycles' durations, in nanoseconds
   */
  record Throughput(
      String client, int threads, long ops, long failed, long elapsedNanos, Samples latency) {

    double opsPerSecond() {
      return ops * 1e9 / elapsedNanos;
    }

    static Throughput sum(String client, int threads, List<Throughput> blocks) {
      long ops = 0;
      long failed = 0;
      long elapsed = 0;
      Samples latency = new Samples();
      for (Throughput b : blocks) {
        ops += b.ops();
        failed += b.failed();
        elapsed += b.elapsedNanos();
        latency.addAll(b.latency());
      }
      return new Throughput(client, threads, ops, failed, elapsed, latency);
    }
  }

  /** One throughput thread. Its fields are read after it was joined. */
  private static final class Loop implements Runnable {
    final RedLock redlock;
    final String prefix;
    final CountDownLatch ready;
    final CountDownLatch go;
    final long[] startAndEnd;
    final Samples latency = new Samples();
    long ops;
    long failed;
    long finishedAt;
    Throwable error;

    Loop(RedLock redlock, String prefix, CountDownLatch ready, CountDownLatch go, long[] times) {
      this.redlock = redlock;
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
          Optional<Lease> lease;
          try {
            lease = redlock.tryAcquire(prefix + i++, Benchmark.TTL);
          } catch (QuorumUnavailableException e) {
            lease = Optional.empty();
          }
          if (lease.isPresent()) {
            lease.get().close();
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
