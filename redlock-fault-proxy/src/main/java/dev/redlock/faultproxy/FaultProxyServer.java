package dev.redlock.faultproxy;

import static java.util.Objects.requireNonNull;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Toxiproxy-compatible fault proxy: serves the Toxiproxy v2 HTTP API on {@code 127.0.0.1} so that
 * {@code eu.rekawek.toxiproxy.ToxiproxyClient} drives it unchanged, and runs every proxy it is
 * asked for on loopback, with the latency, bandwidth, slow_close, timeout, reset_peer, slicer and
 * limit_data toxics.
 *
 * <pre>{@code
 * try (FaultProxyServer server = FaultProxyServer.start()) {
 *   ToxiproxyClient client = new ToxiproxyClient(server.host(), server.apiPort());
 *   Proxy redis = client.createProxy("redis", "127.0.0.1:0", "127.0.0.1:6379");
 *   redis.toxics().latency("slow", ToxicDirection.DOWNSTREAM, 200);
 * }
 * }</pre>
 *
 * <p>{@link #main} runs it as a standalone program, in place of the {@code toxiproxy-server}
 * binary.
 *
 * <p>Differences from Toxiproxy: proxies always listen on {@code 127.0.0.1} whatever host their
 * {@code listen} names; {@code /metrics} is not served; unknown routes get a JSON error body.
 *
 * <p>Thread-safe. The threads it starts are daemon threads named {@code fault-proxy-N-...}, plus
 * the JDK HTTP server's own dispatcher thread ({@code HTTP-Dispatcher}, which takes the daemon
 * status of the thread that called {@code start}); {@link #close()} stops them all.
 */
public final class FaultProxyServer implements AutoCloseable {
  /** The Toxiproxy server version whose API this server speaks, reported by {@code /version}. */
  public static final String TOXIPROXY_VERSION = "2.12.0";

  private static final Logger log = LoggerFactory.getLogger(FaultProxyServer.class);
  private static final AtomicInteger instances = new AtomicInteger();
  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

  private final HttpServer http;
  private final ExecutorService executor;
  private final ProxyRegistry registry;
  private final DaemonThreads threads;
  private final AtomicBoolean closed = new AtomicBoolean();

  private FaultProxyServer(
      HttpServer http, ExecutorService executor, ProxyRegistry registry, DaemonThreads threads) {
    this.http = http;
    this.executor = executor;
    this.registry = registry;
    this.threads = threads;
  }

  /**
   * Starts a server whose API listens on an ephemeral loopback port.
   *
   * @return the running server; see {@link #apiPort()}
   * @throws IOException if the API port cannot be bound
   */
  public static FaultProxyServer start() throws IOException {
    return start(0);
  }

  /**
   * Starts a server whose API listens on {@code 127.0.0.1:port}.
   *
   * @param port the API port, 0 for an ephemeral one (Toxiproxy's default is 8474)
   * @return the running server
   * @throws IllegalArgumentException if {@code port} is outside 0..65535
   * @throws IOException if the port cannot be bound
   */
  public static FaultProxyServer start(int port) throws IOException {
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port must be in 0..65535, got " + port);
    }
    DaemonThreads threads = new DaemonThreads("fault-proxy-" + instances.incrementAndGet() + "-");
    ProxyRegistry registry = new ProxyRegistry(threads);
    HttpServer http =
        HttpServer.create(
            new InetSocketAddress(InetAddress.getByName(FaultProxy.LOOPBACK_HOST), port), 0);
    ExecutorService executor = Executors.newCachedThreadPool(threads.factory("api"));
    http.setExecutor(executor);
    http.createContext("/", new ApiHandler(registry, TOXIPROXY_VERSION));
    http.start();
    FaultProxyServer server = new FaultProxyServer(http, executor, registry, threads);
    log.debug("Toxiproxy-compatible API listening on {}:{}", server.host(), server.apiPort());
    return server;
  }

  /**
   * Runs a server from the command line until the JVM stops (Ctrl-C or SIGTERM close it through a
   * shutdown hook). The API listens on {@code 127.0.0.1:8474}, Toxiproxy's default, unless {@code
   * --port PORT} names another port (0 for an ephemeral one); once it listens, one line with its
   * address goes to standard output. {@code --help} prints the usage. Exits with status 2 for bad
   * arguments and 1 when the port cannot be bound.
   *
   * @param args {@code [--port PORT] [--help]}
   * @throws InterruptedException if the main thread is interrupted while the server runs
   */
  public static void main(String[] args) throws InterruptedException {
    requireNonNull(args, "args");
    CommandLine.Options options;
    try {
      options = CommandLine.parse(List.of(args));
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.err.println(CommandLine.USAGE);
      System.exit(2);
      return;
    }
    if (options.help()) {
      System.out.println(CommandLine.USAGE);
      return;
    }
    FaultProxyServer server;
    try {
      server = start(options.port());
    } catch (IOException e) {
      System.err.println(
          "cannot listen on "
              + FaultProxy.LOOPBACK_HOST
              + ":"
              + options.port()
              + ": "
              + e.getMessage());
      System.exit(1);
      return;
    }
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  server.close();
                  closed.countDown();
                },
                "fault-proxy-shutdown"));
    System.out.println(
        "Toxiproxy "
            + TOXIPROXY_VERSION
            + " API listening on "
            + server.host()
            + ":"
            + server.apiPort());
    closed.await();
  }

  /**
   * The port of the HTTP API.
   *
   * @return the bound port, never 0
   */
  public int apiPort() {
    return http.getAddress().getPort();
  }

  /**
   * The host of the HTTP API and of every proxy.
   *
   * @return {@code "127.0.0.1"}
   */
  public String host() {
    return FaultProxy.LOOPBACK_HOST;
  }

  /** The prefix of the names of every thread this server starts (for leak checks in tests). */
  String threadNamePrefix() {
    return threads.prefix();
  }

  /**
   * Stops the API, every proxy and every live connection, then waits (at most a few seconds) for
   * the server's threads to end. Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    http.stop(0);
    executor.shutdown();
    try {
      if (!executor.awaitTermination(CLOSE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        executor.shutdownNow();
      }
      registry.close();
      if (!threads.awaitTermination(CLOSE_TIMEOUT)) {
        log.warn("Fault proxy threads still running after {}", CLOSE_TIMEOUT);
      }
    } catch (InterruptedException e) {
      registry.close();
      Thread.currentThread().interrupt();
    }
  }
}
