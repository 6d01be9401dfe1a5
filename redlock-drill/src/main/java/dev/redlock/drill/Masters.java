package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.io.PrintStream;
import java.time.Duration;
import java.util.List;

/**
 * The Redis masters a run uses: those given by {@code --nodes}, or {@value #LOCAL_COUNT} local
 * {@code redis-server} processes started through redlock-testkit. Local masters are child processes
 * of this JVM, never daemonized, so a measurement's servers share its fate; {@link #close()} stops
 * them. Masters given by {@code --nodes} are left alone.
 *
 * <p>Not thread-safe; the local processes themselves are.
 */
final class Masters implements AutoCloseable {

  /** How many local masters are started when {@code --nodes} is not given. */
  static final int LOCAL_COUNT = 5;

  private final List<String> uris;
  private final RedisCluster cluster; // null: the masters were given by --nodes
  private final Duration startTime;

  private Masters(List<String> uris, RedisCluster cluster, Duration startTime) {
    this.uris = List.copyOf(uris);
    this.cluster = cluster;
    this.startTime = startTime;
  }

  /**
   * Returns the masters {@code nodes} names, or, if it is empty, starts {@value #LOCAL_COUNT} local
   * ones and says so on {@code out}.
   *
   * @throws IllegalStateException if the local masters cannot be started
   */
  static Masters open(List<String> nodes, PrintStream out) {
    requireNonNull(nodes, "nodes");
    requireNonNull(out, "out");
    if (!nodes.isEmpty()) {
      return new Masters(nodes, null, Duration.ZERO);
    }
    out.printf("Starting %d local redis-server masters...%n", LOCAL_COUNT);
    long began = System.nanoTime();
    RedisCluster cluster = RedisCluster.start(LOCAL_COUNT);
    return new Masters(cluster.uris(), cluster, Duration.ofNanos(System.nanoTime() - began));
  }

  /** Whether the masters are local processes this run started (and may pause). */
  boolean local() {
    return cluster != null;
  }

  /** The masters' URIs. */
  List<String> uris() {
    return uris;
  }

  /** How many masters make a majority. */
  int quorum() {
    return uris.size() / 2 + 1;
  }

  /**
   * The local processes, in the order of {@link #uris()}.
   *
   * @throws IllegalStateException if the masters were given by {@code --nodes}
   */
  List<RedisProcess> processes() {
    if (cluster == null) {
      throw new IllegalStateException("the masters were given by --nodes, not started here");
    }
    return cluster.nodes();
  }

  /** Where the masters came from, for a report: {@code "given by --nodes"} or the local kind. */
  String origin() {
    return cluster == null ? "given by --nodes" : "local redis-server processes";
  }

  /** How long starting the local masters took; zero for masters given by {@code --nodes}. */
  Duration startTime() {
    return startTime;
  }

  /** Stops the local masters; does nothing to masters given by {@code --nodes}. */
  @Override
  public void close() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** Hides the password (and user) of a URI such as {@code redis://user:secret@host:6379}. */
  static String redact(String uri) {
    int scheme = uri.indexOf("://");
    int at = uri.lastIndexOf('@');
    if (scheme < 0 || at < scheme) {
      return uri;
    }
    return uri.substring(0, scheme + 3) + "***" + uri.substring(at);
  }
}
