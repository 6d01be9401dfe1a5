package dev.redlock.testkit;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * N independent Redis masters on local ports: not a Redis Cluster, no replication, each node knows
 * nothing of the others, which is what Redlock expects.
 *
 * <p>Each node is a {@link RedisProcess}, so tests kill, pause or restart single nodes through
 * {@link #node(int)}; {@link #reset()} brings every node back and empties it.
 *
 * <p>Thread-safe as far as its nodes are.
 */
public final class RedisCluster implements AutoCloseable {
  private final List<RedisProcess> nodes;
  private final List<String> uris;

  private RedisCluster(List<RedisProcess> nodes) {
    this.nodes = List.copyOf(nodes);
    this.uris = this.nodes.stream().map(RedisProcess::uri).toList();
  }

  /**
   * Starts {@code n} servers in parallel, each on a free port, without persistence.
   *
   * @param n the number of nodes, at least 1
   * @return the running cluster
   * @throws IllegalArgumentException if {@code n} is less than 1
   * @throws IllegalStateException if any node fails to start; the others are closed
   */
  public static RedisCluster start(int n) {
    return start(n, i -> RedisProcess.builder());
  }

  /**
   * Starts {@code n} servers in parallel, node {@code i} from {@code nodeBuilder.apply(i)}, for
   * persistence or clock skew on some or all nodes, e.g. {@code start(5, i -> i == 0 ?
   * RedisProcess.builder().clockRate("+0 x2") : RedisProcess.builder())}. The builders should not
   * set a port unless each sets a different one.
   *
   * @param n the number of nodes, at least 1
   * @param nodeBuilder the builder for node {@code i}, {@code 0 <= i < n}
   * @return the running cluster
   * @throws IllegalArgumentException if {@code n} is less than 1
   * @throws IllegalStateException if any node fails to start; the others are closed
   */
  public static RedisCluster start(int n, IntFunction<RedisProcess.Builder> nodeBuilder) {
    if (n < 1) {
      throw new IllegalArgumentException("n must be at least 1, was " + n);
    }
    requireNonNull(nodeBuilder, "nodeBuilder");
    List<RedisProcess.Builder> builders = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      builders.add(requireNonNull(nodeBuilder.apply(i), "nodeBuilder returned null for " + i));
    }
    AtomicInteger threads = new AtomicInteger();
    ExecutorService executor =
        Executors.newFixedThreadPool(
            n,
            task -> {
              Thread t = new Thread(task, "redlock-testkit-start-" + threads.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    try {
      List<Callable<RedisProcess>> starts = new ArrayList<>(n);
      for (RedisProcess.Builder builder : builders) {
        starts.add(builder::start);
      }
      // Each start is bounded by its own start timeout, so invokeAll is too.
      List<Future<RedisProcess>> futures = executor.invokeAll(starts);
      List<RedisProcess> started = new ArrayList<>(n);
      RuntimeException failure = null;
      for (Future<RedisProcess> future : futures) {
        try {
          started.add(future.get());
        } catch (ExecutionException e) {
          RuntimeException cause =
              e.getCause() instanceof RuntimeException r
                  ? r
                  : new IllegalStateException(e.getCause());
          if (failure == null) {
            failure = cause;
          } else {
            failure.addSuppressed(cause);
          }
        }
      }
      if (failure != null) {
        started.forEach(RedisProcess::close);
        throw failure;
      }
      return new RedisCluster(started);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting redis-server nodes", e);
    } finally {
      executor.shutdownNow();
    }
  }

  /**
   * The nodes, in start order.
   *
   * @return an unmodifiable list of the nodes
   */
  public List<RedisProcess> nodes() {
    return nodes;
  }

  /**
   * One node.
   *
   * @param i the index, {@code 0 <= i < nodes().size()}
   * @return node {@code i}
   * @throws IndexOutOfBoundsException if {@code i} is out of range
   */
  public RedisProcess node(int i) {
    return nodes.get(i);
  }

  /**
   * The nodes' URIs, in start order. Ports never change, so neither do these.
   *
   * @return an unmodifiable list of {@code "redis://127.0.0.1:<port>"}
   */
  public List<String> uris() {
    return uris;
  }

  /**
   * Brings every node back to a clean, running state: resumes paused nodes, restarts killed or
   * stopped ones, then runs {@code FLUSHALL} and {@code SCRIPT FLUSH} on each.
   *
   * @throws IllegalStateException if the cluster was closed or a node cannot be restarted
   * @throws RuntimeException if a node does not answer the flushes
   */
  public void reset() {
    for (RedisProcess node : nodes) {
      node.resume();
      if (!node.isRunning()) {
        node.restart();
      }
      RedisAdmin admin = node.admin();
      admin.flushAll();
      admin.scriptFlush();
    }
  }

  /** Closes every node (see {@link RedisProcess#close()}). Idempotent. */
  @Override
  public void close() {
    RuntimeException failure = null;
    for (RedisProcess node : nodes) {
      try {
        node.close();
      } catch (RuntimeException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  @Override
  public String toString() {
    return "RedisCluster" + uris;
  }
}
