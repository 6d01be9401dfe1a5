package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import dev.redlock.testkit.TestCertificates;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLContext;

/**
 * The Redis masters a run uses: those given by {@code --nodes}, or {@value #LOCAL_COUNT} local
 * {@code redis-server} processes started through redlock-testkit. Local masters are child processes
 * of this JVM, never daemonized, so a measurement's servers share its fate; {@link #close()} stops
 * them. Masters given by {@code --nodes} are left alone.
 *
 * <p>Not thread-safe; the local processes themselves are.
 */
public final class Masters implements AutoCloseable {

  /** How many local masters are started when {@code --nodes} is not given. */
  public static final int LOCAL_COUNT = 5;

  private final List<String> uris;
  private final RedisCluster cluster; // null: the masters were given by --nodes
  private final Duration startTime;
  private final TestCertificates certificates; // null: no TLS port
  private final List<String> tlsUris;

  private Masters(
      List<String> uris,
      RedisCluster cluster,
      Duration startTime,
      TestCertificates certificates,
      List<String> tlsUris) {
    this.uris = List.copyOf(uris);
    this.cluster = cluster;
    this.startTime = startTime;
    this.certificates = certificates;
    this.tlsUris = List.copyOf(tlsUris);
  }

  /**
   * Returns the masters {@code nodes} names, or, if it is empty, starts {@value #LOCAL_COUNT} local
   * ones (with TLS ports too if {@code tls}, see {@link #start}) and says so on {@code out}.
   *
   * @throws IllegalStateException if the local masters cannot be started
   */
  public static Masters open(List<String> nodes, boolean tls, PrintStream out) {
    requireNonNull(nodes, "nodes");
    requireNonNull(out, "out");
    if (!nodes.isEmpty()) {
      return new Masters(nodes, null, Duration.ZERO, null, List.of());
    }
    return start(tls, out);
  }

  /**
   * Starts {@value #LOCAL_COUNT} local masters, each also with a TLS port (a private CA made with
   * openssl) when {@code tls} is asked for and openssl is on the PATH.
   */
  public static Masters start(boolean tls, PrintStream out) {
    TestCertificates certificates = tls ? TestCertificates.create().orElse(null) : null;
    out.printf(
        "Starting %d local redis-server masters%s...%n",
        LOCAL_COUNT, certificates == null ? "" : ", each with a TLS port too");
    long began = System.nanoTime();
    List<Integer> tlsPorts = new ArrayList<>();
    RedisCluster cluster;
    try {
      cluster =
          RedisCluster.start(
              LOCAL_COUNT,
              i -> {
                RedisProcess.Builder builder = RedisProcess.builder();
                if (certificates != null) {
                  int port = freePort();
                  tlsPorts.add(port);
                  builder.arguments(certificates.serverArguments(port));
                }
                return builder;
              });
    } catch (RuntimeException e) {
      if (certificates != null) {
        certificates.close();
      }
      throw e;
    }
    List<String> tlsUris = tlsPorts.stream().map(port -> "rediss://127.0.0.1:" + port).toList();
    return new Masters(
        cluster.uris(),
        cluster,
        Duration.ofNanos(System.nanoTime() - began),
        certificates,
        tlsUris);
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The same masters' TLS ports ({@code rediss://127.0.0.1:port}, in the order of {@link #uris()}),
   * or empty: masters given by {@code --nodes}, or no openssl to make certificates.
   */
  public List<String> tlsUris() {
    return tlsUris;
  }

  /** Why there are no {@link #tlsUris()}, or null if there are. */
  public String noTls() {
    if (!tlsUris.isEmpty()) {
      return null;
    }
    return cluster == null
        ? "needs the local masters (leave out --nodes)"
        : "needs openssl on the PATH to make a private CA";
  }

  /**
   * A TLS context that trusts the masters' private CA.
   *
   * @throws IllegalStateException if the masters have no TLS port
   */
  public SSLContext sslContext() {
    if (certificates == null) {
      throw new IllegalStateException("no TLS port: " + noTls());
    }
    return certificates.trustingCa();
  }

  /** Whether the masters are local processes this run started (and may pause). */
  public boolean local() {
    return cluster != null;
  }

  /** The masters' URIs. */
  public List<String> uris() {
    return uris;
  }

  /** How many masters make a majority. */
  public int quorum() {
    return uris.size() / 2 + 1;
  }

  /**
   * The local processes, in the order of {@link #uris()}.
   *
   * @throws IllegalStateException if the masters were given by {@code --nodes}
   */
  public List<RedisProcess> processes() {
    if (cluster == null) {
      throw new IllegalStateException("the masters were given by --nodes, not started here");
    }
    return cluster.nodes();
  }

  /** Where the masters came from, for a report: {@code "given by --nodes"} or the local kind. */
  public String origin() {
    return cluster == null ? "given by --nodes" : "local redis-server processes";
  }

  /** How long starting the local masters took; zero for masters given by {@code --nodes}. */
  public Duration startTime() {
    return startTime;
  }

  /** Stops the local masters; does nothing to masters given by {@code --nodes}. */
  @Override
  public void close() {
    if (cluster != null) {
      cluster.close();
    }
    if (certificates != null) {
      certificates.close();
    }
  }

  /** Hides the password (and user) of a URI such as {@code redis://user:secret@host:6379}. */
  public static String redact(String uri) {
    int scheme = uri.indexOf("://");
    int at = uri.lastIndexOf('@');
    if (scheme < 0 || at < scheme) {
      return uri;
    }
    return uri.substring(0, scheme + 3) + "***" + uri.substring(at);
  }
}
