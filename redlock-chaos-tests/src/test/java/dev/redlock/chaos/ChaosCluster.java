package dev.redlock.chaos;

import static java.util.Objects.requireNonNull;

import dev.redlock.faultproxy.FaultProxyServer;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.ToxiproxyClient;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.lifecycle.Startables;
import org.testcontainers.toxiproxy.ToxiproxyContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * N independent Redis masters, each behind its own Toxiproxy proxy, for chaos tests: RedLock
 * connects to the proxied {@link #uris()}, tests inject network faults on {@link #proxy(int)}
 * through the Toxiproxy Java client only, and assert on each master directly through {@link
 * #admin(int)}.
 *
 * <h2>Backends</h2>
 *
 * <ul>
 *   <li>{@link Backend#LOCAL}: N local {@code redis-server} processes ({@link RedisCluster}) and
 *       one in-process {@link FaultProxyServer} serving the Toxiproxy API, one proxy per node on an
 *       ephemeral loopback port. Process faults ({@link #process(int)}) are available.
 *   <li>{@link Backend#CONTAINERS}: Testcontainers starts N {@code redis:7-alpine} containers and a
 *       {@code ghcr.io/shopify/toxiproxy:2.12.0} container on one network, proxies {@code
 *       0.0.0.0:8666+i -> redisI:6379}; clients use the mapped ports. At most 32 nodes (the ports
 *       the Toxiproxy module exposes).
 * </ul>
 *
 * The system property {@value #BACKEND_PROPERTY} ({@code local} or {@code containers}) forces one;
 * otherwise containers are used when a Docker engine answers, and the local backend otherwise. The
 * engine is only asked when a Docker socket or {@code DOCKER_HOST} is present, so machines without
 * Docker do not get Testcontainers' error log.
 *
 * <p>Proxies are named {@code redis0}..{@code redis<N-1>}, in node order. Thread-safe as far as the
 * Toxiproxy client and the testkit are (tests drive faults from a background thread).
 */
final class ChaosCluster implements AutoCloseable {

  /** The system property that forces a backend: {@code local} or {@code containers}. */
  static final String BACKEND_PROPERTY = "redlock.chaos.backend";

  /** The Redis image of the container backend. */
  static final String REDIS_IMAGE = "redis:7-alpine";

  /** The Toxiproxy image of the container backend. */
  static final String TOXIPROXY_IMAGE = "ghcr.io/shopify/toxiproxy:2.12.0";

  /** The first proxy port inside the Toxiproxy container; the module exposes 8666..8697. */
  static final int FIRST_PROXY_PORT = 8666;

  static final int MAX_CONTAINER_NODES = 32;

  private static final Logger log = LoggerFactory.getLogger(ChaosCluster.class);
  private static final int REDIS_PORT = 6379;
  private static final Duration CONTAINER_START_TIMEOUT = Duration.ofMinutes(3);

  /** Where the faults come from and the masters run. */
  enum Backend {
    /** Local redis-server processes behind the in-process {@link FaultProxyServer}. */
    LOCAL,
    /** Redis and Toxiproxy containers started by Testcontainers. */
    CONTAINERS
  }

  private final Backend backend;
  private final ToxiproxyClient toxiproxy;
  private final List<Proxy> proxies;
  private final List<String> uris;
  private final List<RedisAdmin> admins;
  private final List<RedisProcess> processes; // empty for containers
  private final List<AutoCloseable> resources; // closed in reverse order

  private ChaosCluster(
      Backend backend,
      ToxiproxyClient toxiproxy,
      List<Proxy> proxies,
      List<String> uris,
      List<RedisAdmin> admins,
      List<RedisProcess> processes,
      List<AutoCloseable> resources) {
    this.backend = backend;
    this.toxiproxy = toxiproxy;
    this.proxies = List.copyOf(proxies);
    this.uris = List.copyOf(uris);
    this.admins = List.copyOf(admins);
    this.processes = List.copyOf(processes);
    this.resources = List.copyOf(resources);
  }

  /**
   * Starts {@code n} proxied masters on the chosen backend (see {@link #chooseBackend()}).
   *
   * @param n the number of masters, at least 1
   * @return the running cluster, with every proxy enabled and no toxics
   * @throws IllegalArgumentException if {@code n} is out of range for the backend
   * @throws IllegalStateException if a master, the proxy or a container does not start
   */
  static ChaosCluster start(int n) {
    return switch (chooseBackend()) {
      case LOCAL -> startLocal(n, i -> RedisProcess.builder());
      case CONTAINERS -> startContainers(n);
    };
  }

  /**
   * Starts {@code n} local masters, node {@code i} from {@code nodes.apply(i)} (clock rate,
   * persistence), each behind a proxy of an in-process {@link FaultProxyServer}. Always the local
   * backend: containers cannot take testkit builders.
   *
   * @param n the number of masters, at least 1
   * @param nodes the builder of node {@code i}; should not set a port
   * @return the running cluster
   * @throws IllegalArgumentException if {@code n} is less than 1
   * @throws IllegalStateException if {@value #BACKEND_PROPERTY} forces containers, or a master or
   *     the proxy does not start
   */
  static ChaosCluster start(int n, IntFunction<RedisProcess.Builder> nodes) {
    requireNonNull(nodes, "nodes");
    if (forcedBackend().orElse(Backend.LOCAL) != Backend.LOCAL) {
      throw new IllegalStateException(
          "customized redis-server nodes need the local backend, but -D"
              + BACKEND_PROPERTY
              + " forces containers");
    }
    return startLocal(n, nodes);
  }

  /**
   * The backend {@link #start(int)} uses: the one {@value #BACKEND_PROPERTY} names, else {@link
   * Backend#CONTAINERS} if a Docker engine is available, else {@link Backend#LOCAL}.
   *
   * @return the backend
   * @throws IllegalArgumentException if the property names no backend
   */
  static Backend chooseBackend() {
    Optional<Backend> forced = forcedBackend();
    if (forced.isPresent()) {
      return forced.get();
    }
    return dockerAvailable() ? Backend.CONTAINERS : Backend.LOCAL;
  }

  /**
   * Which backend runs this cluster.
   *
   * @return the backend
   */
  Backend backend() {
    return backend;
  }

  /**
   * The number of masters.
   *
   * @return N
   */
  int size() {
    return uris.size();
  }

  /**
   * The proxied URIs, in node order: what RedLock connects to. They never change while the cluster
   * runs (ports are fixed across restarts and heals).
   *
   * @return an unmodifiable list of {@code redis://host:port}
   */
  List<String> uris() {
    return uris;
  }

  /**
   * The Toxiproxy client driving this cluster's proxies. {@link ToxiproxyClient#reset()} heals the
   * network (see {@link #heal()} for processes too).
   *
   * @return the client
   */
  ToxiproxyClient toxiproxy() {
    return toxiproxy;
  }

  /**
   * The proxy in front of master {@code i}, named {@code "redis" + i}.
   *
   * @param i the node index
   * @return the proxy
   * @throws IndexOutOfBoundsException if {@code i} is out of range
   */
  Proxy proxy(int i) {
    return proxies.get(i);
  }

  /**
   * Every proxy, in node order.
   *
   * @return an unmodifiable list
   */
  List<Proxy> proxies() {
    return proxies;
  }

  /**
   * A direct (unproxied) admin client of master {@code i}, for setup and assertions; faults on the
   * proxy do not affect it.
   *
   * @param i the node index
   * @return the admin client
   * @throws IndexOutOfBoundsException if {@code i} is out of range
   */
  RedisAdmin admin(int i) {
    return admins.get(i);
  }

  /**
   * The local process of master {@code i}, for process faults (kill, pause, restart).
   *
   * @param i the node index
   * @return the process, or empty on the container backend
   * @throws IndexOutOfBoundsException if {@code i} is out of range
   */
  Optional<RedisProcess> process(int i) {
    if (i < 0 || i >= size()) {
      throw new IndexOutOfBoundsException("node " + i + " of " + size());
    }
    return processes.isEmpty() ? Optional.empty() : Optional.of(processes.get(i));
  }

  /**
   * Ends every fault: resets Toxiproxy (every toxic removed, every proxy enabled), resumes paused
   * masters and restarts killed or stopped ones. Does not empty the masters; see {@link
   * #flushAll()}.
   *
   * @throws UncheckedIOException if the Toxiproxy API fails
   * @throws IllegalStateException if a master cannot be restarted
   */
  void heal() {
    try {
      toxiproxy.reset();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot reset Toxiproxy", e);
    }
    for (RedisProcess process : processes) {
      process.resume();
      if (!process.isRunning()) {
        process.restart();
      }
    }
  }

  /**
   * Runs {@code FLUSHALL} on every master, directly.
   *
   * @throws RuntimeException if a master does not answer
   */
  void flushAll() {
    for (RedisAdmin admin : admins) {
      admin.flushAll();
    }
  }

  /** Stops every proxy, master and container. Idempotent. */
  @Override
  public void close() {
    RuntimeException failure = null;
    for (int i = resources.size() - 1; i >= 0; i--) {
      try {
        resources.get(i).close();
      } catch (Exception e) {
        RuntimeException wrapped =
            e instanceof RuntimeException r ? r : new IllegalStateException("close failed", e);
        if (failure == null) {
          failure = wrapped;
        } else {
          failure.addSuppressed(wrapped);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  @Override
  public String toString() {
    return "ChaosCluster{" + backend + ", " + uris + "}";
  }

  // ---- local backend ----

  private static ChaosCluster startLocal(int n, IntFunction<RedisProcess.Builder> nodes) {
    if (n < 1) {
      throw new IllegalArgumentException("n must be at least 1, was " + n);
    }
    log.info("Starting {} redis-server nodes with {}", n, RedisProcess.binaryDescription());
    List<AutoCloseable> resources = new ArrayList<>();
    boolean started = false;
    try {
      RedisCluster cluster = RedisCluster.start(n, nodes);
      resources.add(cluster);
      FaultProxyServer server = FaultProxyServer.start();
      resources.add(server);
      ToxiproxyClient client = new ToxiproxyClient(server.host(), server.apiPort());
      List<Proxy> proxies = new ArrayList<>(n);
      List<String> uris = new ArrayList<>(n);
      List<RedisAdmin> admins = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        RedisProcess node = cluster.node(i);
        Proxy proxy =
            client.createProxy(proxyName(i), server.host() + ":0", node.host() + ":" + node.port());
        proxies.add(proxy);
        uris.add("redis://" + server.host() + ":" + port(proxy.getListen()));
        admins.add(node.admin());
      }
      ChaosCluster chaos =
          new ChaosCluster(
              Backend.LOCAL, client, proxies, uris, admins, cluster.nodes(), resources);
      started = true;
      log.info("Chaos cluster up: {}", chaos);
      return chaos;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start the fault proxy", e);
    } finally {
      if (!started) {
        closeQuietly(resources);
      }
    }
  }

  // ---- container backend ----

  private static ChaosCluster startContainers(int n) {
    if (n < 1 || n > MAX_CONTAINER_NODES) {
      throw new IllegalArgumentException(
          "n must be in 1.." + MAX_CONTAINER_NODES + " for containers, was " + n);
    }
    List<AutoCloseable> resources = new ArrayList<>();
    boolean started = false;
    try {
      Network network = Network.newNetwork();
      resources.add(network);
      List<GenericContainer<?>> redis = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        GenericContainer<?> container =
            new GenericContainer<>(DockerImageName.parse(REDIS_IMAGE))
                .withNetwork(network)
                .withNetworkAliases(proxyName(i))
                .withExposedPorts(REDIS_PORT)
                .withCommand("redis-server", "--save", "", "--appendonly", "no")
                .waitingFor(Wait.forLogMessage(".*Ready to accept connections.*", 1))
                .withStartupTimeout(CONTAINER_START_TIMEOUT);
        redis.add(container);
        resources.add(container);
      }
      ToxiproxyContainer toxiproxyContainer =
          new ToxiproxyContainer(TOXIPROXY_IMAGE)
              .withNetwork(network)
              .withStartupTimeout(CONTAINER_START_TIMEOUT);
      resources.add(toxiproxyContainer);
      List<GenericContainer<?>> all = new ArrayList<>(redis);
      all.add(toxiproxyContainer);
      Startables.deepStart(all)
          .get(CONTAINER_START_TIMEOUT.toMillis() + 10_000, TimeUnit.MILLISECONDS);

      ToxiproxyClient client =
          new ToxiproxyClient(toxiproxyContainer.getHost(), toxiproxyContainer.getControlPort());
      List<Proxy> proxies = new ArrayList<>(n);
      List<String> uris = new ArrayList<>(n);
      List<RedisAdmin> admins = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        int listenPort = FIRST_PROXY_PORT + i;
        proxies.add(
            client.createProxy(
                proxyName(i), "0.0.0.0:" + listenPort, proxyName(i) + ":" + REDIS_PORT));
        uris.add(
            "redis://"
                + toxiproxyContainer.getHost()
                + ":"
                + toxiproxyContainer.getMappedPort(listenPort));
        RedisAdmin admin = newAdmin(redis.get(i).getHost(), redis.get(i).getMappedPort(REDIS_PORT));
        admins.add(admin);
        resources.add(admin);
      }
      ChaosCluster chaos =
          new ChaosCluster(Backend.CONTAINERS, client, proxies, uris, admins, List.of(), resources);
      started = true;
      log.info("Chaos cluster up: {}", chaos);
      return chaos;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the Toxiproxy proxies", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("containers did not start", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting containers", e);
    } finally {
      if (!started) {
        closeQuietly(resources);
      }
    }
  }

  /** A {@link RedisAdmin} for a master that is not a local {@link RedisProcess}. */
  private static RedisAdmin newAdmin(String host, int port) {
    return RedisAdmin.connect(host, port);
  }

  // ---- backend choice ----

  private static Optional<Backend> forcedBackend() {
    String value = System.getProperty(BACKEND_PROPERTY, "").strip();
    if (value.isEmpty()) {
      return Optional.empty();
    }
    return switch (value.toLowerCase(Locale.ROOT)) {
      case "local" -> Optional.of(Backend.LOCAL);
      case "containers", "container", "docker" -> Optional.of(Backend.CONTAINERS);
      default ->
          throw new IllegalArgumentException(
              "-D" + BACKEND_PROPERTY + " must be local or containers, was '" + value + "'");
    };
  }

  /**
   * Whether a Docker engine answers. Testcontainers is asked only if a hint of one exists, because
   * it logs an ERROR with a long explanation when it finds none.
   */
  private static boolean dockerAvailable() {
    if (!dockerHinted()) {
      log.info("No Docker engine in sight: chaos tests run on local processes");
      return false;
    }
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      log.info("Docker engine not usable ({}): chaos tests run on local processes", e.toString());
      return false;
    }
  }

  private static boolean dockerHinted() {
    String dockerHost = System.getenv("DOCKER_HOST");
    if (dockerHost != null && !dockerHost.isBlank()) {
      return true;
    }
    String home = System.getProperty("user.home", "");
    List<Path> hints = new ArrayList<>();
    hints.add(Path.of("/var/run/docker.sock"));
    hints.add(Path.of("/run/docker.sock"));
    String runtimeDir = System.getenv("XDG_RUNTIME_DIR");
    if (runtimeDir != null && !runtimeDir.isBlank()) {
      hints.add(Path.of(runtimeDir, "docker.sock"));
      hints.add(Path.of(runtimeDir, "podman", "podman.sock"));
    }
    if (!home.isEmpty()) {
      hints.add(Path.of(home, ".docker", "run", "docker.sock"));
      hints.add(Path.of(home, ".docker", "desktop", "docker.sock"));
      hints.add(Path.of(home, ".rd", "docker.sock"));
      hints.add(Path.of(home, ".colima", "default", "docker.sock"));
      // May name docker.host or a tc.host (Testcontainers Cloud / Desktop).
      hints.add(Path.of(home, ".testcontainers.properties"));
    }
    return hints.stream().anyMatch(Files::exists);
  }

  // ---- helpers ----

  private static String proxyName(int i) {
    return "redis" + i;
  }

  private static int port(String listen) {
    return Integer.parseInt(listen.substring(listen.lastIndexOf(':') + 1));
  }

  private static void closeQuietly(List<AutoCloseable> resources) {
    for (int i = resources.size() - 1; i >= 0; i--) {
      try {
        resources.get(i).close();
      } catch (Exception e) {
        log.debug("cleanup after a failed start", e);
      }
    }
  }
}
