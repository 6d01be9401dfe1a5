package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.FaultPlan.Kind;
import dev.redlock.faultproxy.FaultProxyServer;
import dev.redlock.testkit.RedisProcess;
import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.ToxiproxyClient;
import eu.rekawek.toxiproxy.model.Toxic;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What the drill can harm, per master (numbered from 1): the local {@code redis-server} process
 * (pause, kill, restart) and the Toxiproxy proxy in front of it (partition, blackhole, latency).
 *
 * <ul>
 *   <li><b>Local masters</b> ({@link #local}): the processes the drill started; for a plan with
 *       network faults, also an in-process {@link FaultProxyServer} with one proxy per master, and
 *       the workers connect through the proxies ({@link #clientUris()}).
 *   <li><b>Remote masters</b> ({@link #remote}): the user's masters behind the user's Toxiproxy;
 *       {@code --nodes} are the proxies' addresses. Only network faults; the drill undoes only what
 *       it did (its toxics, the proxies it disabled), never {@code POST /reset}.
 * </ul>
 *
 * <p>Every fault this class makes is undone by {@link #undo} or, for whatever is still active, by
 * {@link #close()}. Calls are made by one thread at a time (the fault schedule, then the closing
 * thread); not thread-safe otherwise.
 */
final class FaultTargets implements FaultSchedule.Injector, AutoCloseable {

  /** Names of the toxics the drill adds, so it never touches toxics of its own user. */
  static final String TOXIC_PREFIX = "redlock-drill-";

  private static final int DEFAULT_REDIS_PORT = 6379;

  private final List<String> clientUris;
  private final List<Optional<RedisProcess>> processes;
  private final List<Optional<Proxy>> proxies;
  private final Optional<FaultProxyServer> ownProxyServer;
  private final List<String> description;
  private final List<String> notes;

  private FaultTargets(
      List<String> clientUris,
      List<Optional<RedisProcess>> processes,
      List<Optional<Proxy>> proxies,
      Optional<FaultProxyServer> ownProxyServer,
      List<String> description,
      List<String> notes) {
    this.clientUris = List.copyOf(clientUris);
    this.processes = List.copyOf(processes);
    this.proxies = List.copyOf(proxies);
    this.ownProxyServer = ownProxyServer;
    this.description = List.copyOf(description);
    this.notes = List.copyOf(notes);
  }

  /** No faults: the workers connect to {@code uris} directly. */
  static FaultTargets none(List<String> uris) {
    List<Optional<RedisProcess>> noProcesses = new ArrayList<>();
    List<Optional<Proxy>> noProxies = new ArrayList<>();
    for (int i = 0; i < uris.size(); i++) {
      noProcesses.add(Optional.empty());
      noProxies.add(Optional.empty());
    }
    return new FaultTargets(
        uris, noProcesses, noProxies, Optional.empty(), List.of("none (no fault plan)"), List.of());
  }

  /**
   * The local masters' processes and, if {@code withProxies}, one proxy per master on an in-process
   * fault proxy, which the workers then connect through.
   *
   * @throws IOException if the fault proxy cannot start or create a proxy
   */
  static FaultTargets local(List<RedisProcess> processes, boolean withProxies) throws IOException {
    List<Optional<RedisProcess>> own = new ArrayList<>();
    processes.forEach(p -> own.add(Optional.of(p)));
    if (!withProxies) {
      List<Optional<Proxy>> noProxies = new ArrayList<>();
      processes.forEach(p -> noProxies.add(Optional.empty()));
      return new FaultTargets(
          processes.stream().map(RedisProcess::uri).toList(),
          own,
          noProxies,
          Optional.empty(),
          List.of("local: SIGSTOP/SIGCONT and SIGKILL/restart on the redis-server children"),
          List.of());
    }
    FaultProxyServer server = FaultProxyServer.start();
    boolean done = false;
    try {
      ToxiproxyClient client = new ToxiproxyClient(server.host(), server.apiPort());
      List<Optional<Proxy>> proxies = new ArrayList<>();
      List<String> uris = new ArrayList<>();
      for (int i = 0; i < processes.size(); i++) {
        RedisProcess process = processes.get(i);
        Proxy proxy =
            client.createProxy(
                "master" + (i + 1), server.host() + ":0", process.host() + ":" + process.port());
        proxies.add(Optional.of(proxy));
        uris.add("redis://" + server.host() + ":" + port(proxy.getListen()));
      }
      done = true;
      return new FaultTargets(
          uris,
          own,
          proxies,
          Optional.of(server),
          List.of(
              "local: SIGSTOP/SIGCONT and SIGKILL/restart on the redis-server children;",
              "the workers connect through one fault proxy per master, which partitions,",
              "black holes and delays them (Toxiproxy API on "
                  + server.host()
                  + ":"
                  + server.apiPort()
                  + ")"),
          List.of());
    } finally {
      if (!done) {
        server.close();
      }
    }
  }

  /**
   * The proxies of the Toxiproxy at {@code host:port} in front of the masters {@code nodes}: named
   * by {@code names} in the order of {@code nodes}, or else found by port (the proxy that listens
   * on the port of the node's URI).
   *
   * @throws IOException if Toxiproxy does not answer
   * @throws IllegalArgumentException if a master has no proxy, or the names do not fit
   */
  static FaultTargets remote(String address, List<String> nodes, List<String> names)
      throws IOException {
    HostPort api = HostPort.parse(address);
    ToxiproxyClient client = new ToxiproxyClient(api.host(), api.port());
    String version = client.version();
    List<Proxy> all = client.getProxies();
    List<Optional<Proxy>> proxies = new ArrayList<>();
    List<Optional<RedisProcess>> noProcesses = new ArrayList<>();
    List<String> notes = new ArrayList<>();
    if (!names.isEmpty() && names.size() != nodes.size()) {
      throw new IllegalArgumentException(
          "--proxies names "
              + names.size()
              + " proxies but --nodes names "
              + nodes.size()
              + " masters; give one proxy per master, in the same order");
    }
    for (int i = 0; i < nodes.size(); i++) {
      Proxy proxy = names.isEmpty() ? byPort(all, nodes.get(i), i) : byName(all, names.get(i));
      proxies.add(Optional.of(proxy));
      noProcesses.add(Optional.empty());
      if (!proxy.isEnabled()) {
        notes.add(
            "proxy "
                + proxy.getName()
                + " (master "
                + (i + 1)
                + ") is disabled before the drill; the drill leaves it so");
      }
      List<? extends Toxic> toxics = proxy.toxics().getAll();
      if (!toxics.isEmpty()) {
        notes.add(
            "proxy "
                + proxy.getName()
                + " (master "
                + (i + 1)
                + ") already has toxics: "
                + String.join(", ", toxics.stream().map(Toxic::getName).toList())
                + "; the drill leaves them");
      }
    }
    List<String> mapping = new ArrayList<>();
    for (int i = 0; i < proxies.size(); i++) {
      mapping.add((i + 1) + "=" + proxies.get(i).orElseThrow().getName());
    }
    return new FaultTargets(
        nodes,
        noProcesses,
        proxies,
        Optional.empty(),
        List.of(
            "Toxiproxy "
                + version.strip()
                + " at "
                + api
                + ", proxies "
                + String.join(" ", mapping)
                + " (network faults only)"),
        notes);
  }

  private static Proxy byName(List<Proxy> all, String name) {
    for (Proxy proxy : all) {
      if (proxy.getName().equals(name)) {
        return proxy;
      }
    }
    throw new IllegalArgumentException(
        "Toxiproxy has no proxy named '"
            + name
            + "' (it has: "
            + String.join(", ", all.stream().map(Proxy::getName).toList())
            + ")");
  }

  private static Proxy byPort(List<Proxy> all, String node, int index) {
    int given = URI.create(node).getPort();
    int port = given < 0 ? DEFAULT_REDIS_PORT : given;
    List<Proxy> found = new ArrayList<>();
    for (Proxy proxy : all) {
      if (port(proxy.getListen()) == port) {
        found.add(proxy);
      }
    }
    if (found.size() != 1) {
      throw new IllegalArgumentException(
          "master "
              + (index + 1)
              + " ("
              + Masters.redact(node)
              + "): "
              + (found.isEmpty() ? "no" : found.size())
              + " Toxiproxy proxies listen on port "
              + port
              + "; name the proxy of each master with --proxies");
    }
    return found.get(0);
  }

  private static int port(String listen) {
    return Integer.parseInt(listen.substring(listen.lastIndexOf(':') + 1));
  }

  /** The URIs the workers connect to: the proxies if there are any, else the masters. */
  List<String> clientUris() {
    return clientUris;
  }

  /** How faults are made, for the report header: a few lines. */
  List<String> description() {
    return description;
  }

  /** What the drill found and leaves alone (a remote proxy's own toxics), for the report. */
  List<String> notes() {
    return notes;
  }

  /**
   * Begins a fault on one master (numbered from 1).
   *
   * @throws IOException if Toxiproxy refuses
   * @throws IllegalStateException if a process cannot be signalled
   */
  @Override
  public void apply(Kind kind, int master, Duration latency) throws IOException {
    switch (kind) {
      case PAUSE -> process(master).pause();
      case KILL -> process(master).kill();
      case PARTITION -> proxy(master).disable();
      case BLACKHOLE -> {
        proxy(master).toxics().timeout(toxicName(kind, "up"), ToxicDirection.UPSTREAM, 0);
        proxy(master).toxics().timeout(toxicName(kind, "down"), ToxicDirection.DOWNSTREAM, 0);
      }
      case LATENCY ->
          proxy(master)
              .toxics()
              .latency(toxicName(kind, "down"), ToxicDirection.DOWNSTREAM, latency.toMillis());
    }
  }

  /**
   * Ends a fault on one master: resume, restart (a killed master comes back empty, on the same
   * port), re-enable the proxy, remove the toxics.
   *
   * @throws IOException if Toxiproxy refuses
   * @throws IllegalStateException if a process cannot be resumed or restarted
   */
  @Override
  public void undo(Kind kind, int master) throws IOException {
    switch (kind) {
      case PAUSE -> process(master).resume();
      case KILL -> process(master).restart();
      case PARTITION -> proxy(master).enable();
      case BLACKHOLE -> {
        removeToxic(master, toxicName(kind, "up"));
        removeToxic(master, toxicName(kind, "down"));
      }
      case LATENCY -> removeToxic(master, toxicName(kind, "down"));
    }
  }

  private void removeToxic(int master, String name) throws IOException {
    for (Toxic toxic : proxy(master).toxics().getAll()) {
      if (toxic.getName().equals(name)) {
        toxic.remove();
      }
    }
  }

  private static String toxicName(Kind kind, String stream) {
    return TOXIC_PREFIX + kind.word() + "-" + stream;
  }

  private RedisProcess process(int master) {
    return processes
        .get(master - 1)
        .orElseThrow(() -> new IllegalStateException("master " + master + " is not local"));
  }

  private Proxy proxy(int master) {
    return proxies
        .get(master - 1)
        .orElseThrow(() -> new IllegalStateException("master " + master + " has no proxy"));
  }

  /** Stops the drill's own fault proxy, if it started one; remote proxies are left running. */
  @Override
  public void close() {
    ownProxyServer.ifPresent(FaultProxyServer::close);
  }

  /** A {@code host:port} address. */
  record HostPort(String host, int port) {

    static HostPort parse(String address) {
      int colon = address.lastIndexOf(':');
      if (colon <= 0 || colon == address.length() - 1) {
        throw new IllegalArgumentException("expected host:port, was '" + address + "'");
      }
      int port;
      try {
        port = Integer.parseInt(address.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("expected host:port, was '" + address + "'");
      }
      if (port < 1 || port > 65535) {
        throw new IllegalArgumentException("port out of range in '" + address + "'");
      }
      return new HostPort(requireNonNull(address.substring(0, colon)), port);
    }

    @Override
    public String toString() {
      return host + ":" + port;
    }
  }
}
