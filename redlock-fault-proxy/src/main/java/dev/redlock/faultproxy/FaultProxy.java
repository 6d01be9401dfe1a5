package dev.redlock.faultproxy;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One named proxy: a loopback listener, its live connections and its two toxic chains, with
 * Toxiproxy's semantics for enabling, updating and toxic changes (which reach live connections).
 *
 * <p>Thread-safe. API calls hold the instance's monitor. The accept thread never takes it, so
 * {@link #disable()} can wait for that thread to end (the port is only free once it has, which
 * re-enabling on the same port needs). The listener identity, the chains and the set of connections
 * are guarded by the separate {@code wiring} lock, which the accept thread takes to register a
 * connection atomically with respect to disabling and toxic changes. Connections remove themselves
 * from the (concurrent) set from their own threads.
 */
final class FaultProxy {
  /** Every proxy listens here, whatever host its {@code listen} names. */
  static final String LOOPBACK_HOST = "127.0.0.1";

  private static final Logger log = LoggerFactory.getLogger(FaultProxy.class);
  private static final InetAddress LOOPBACK = loopback();
  private static final int CONNECT_TIMEOUT_MILLIS = 5_000;
  private static final int BACKLOG = 128;
  private static final long ACCEPT_THREAD_JOIN_MILLIS = 5_000;

  private final String name;
  private final DaemonThreads threads;
  private final Object wiring = new Object();
  private final Set<ProxiedConnection> connections = ConcurrentHashMap.newKeySet();
  // Written under the monitor and wiring both, so either suffices to read.
  private final Map<Direction, List<Toxic>> chains = new EnumMap<>(Direction.class);
  private String listen;
  private String upstream;
  private boolean enabled;
  private Thread acceptThread;
  private ServerSocket listener; // guarded by wiring
  private long connectionCount; // guarded by wiring

  /**
   * Creates a stopped proxy.
   *
   * @throws ApiException 500 when {@code listen} has no valid port
   */
  FaultProxy(String name, String listen, String upstream, DaemonThreads threads)
      throws ApiException {
    this.name = name;
    this.listen = normalizeListen(listen, "listen tcp: ");
    this.upstream = upstream;
    this.threads = threads;
    for (Direction direction : Direction.values()) {
      chains.put(direction, List.of());
    }
  }

  String name() {
    return name;
  }

  /**
   * Opens the listener on the current {@code listen} address; a no-op when already enabled.
   *
   * @throws ApiException 500 when the port cannot be bound
   */
  synchronized void enable() throws ApiException {
    if (enabled) {
      return;
    }
    ServerSocket socket = null;
    try {
      socket = new ServerSocket();
      socket.setReuseAddress(true);
      socket.bind(new InetSocketAddress(LOOPBACK, port(listen)), BACKLOG);
    } catch (IOException e) {
      closeQuietly(socket);
      String reason = String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT);
      throw ApiException.internal(
          "listen tcp " + listen + ": " + (e instanceof BindException ? "bind: " : "") + reason);
    }
    ServerSocket bound = socket;
    synchronized (wiring) {
      listener = bound;
    }
    listen = LOOPBACK_HOST + ":" + bound.getLocalPort();
    enabled = true;
    String target = upstream;
    acceptThread = threads.start(name + "-accept", () -> acceptLoop(bound, target));
    log.debug("{}: listening on {}, upstream {}", name, listen, upstream);
  }

  /**
   * Closes the listener (new connects are refused) and every live connection, and waits for the
   * accept thread to end so the port is free again.
   */
  synchronized void disable() {
    if (!enabled) {
      return;
    }
    enabled = false;
    synchronized (wiring) {
      closeQuietly(listener);
      listener = null;
      for (ProxiedConnection connection : List.copyOf(connections)) {
        connection.close();
      }
    }
    try {
      acceptThread.join(ACCEPT_THREAD_JOIN_MILLIS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    acceptThread = null;
    log.debug("{}: stopped", name);
  }

  /**
   * Partial update; a {@code null} argument keeps the current value. As in Toxiproxy, a new listen
   * address or upstream restarts the proxy (dropping its connections), then {@code enabled} is
   * applied.
   *
   * @throws ApiException 500 for an unusable listen address or a failed bind
   */
  synchronized void update(String newListen, String newUpstream, Boolean newEnabled)
      throws ApiException {
    String listenTo = newListen == null ? listen : normalizeListen(newListen, "");
    String upstreamTo = newUpstream == null ? upstream : newUpstream;
    boolean enabledTo = newEnabled == null ? enabled : newEnabled;
    if (!listenTo.equals(listen) || !upstreamTo.equals(upstream)) {
      disable();
      listen = listenTo;
      upstream = upstreamTo;
    }
    if (enabledTo != enabled) {
      if (enabledTo) {
        enable();
      } else {
        disable();
      }
    }
  }

  /** Whether a populate entry would change this proxy (Toxiproxy's {@code Differs}). */
  synchronized boolean differs(String otherListen, String otherUpstream) throws ApiException {
    return !normalizeListen(otherListen, "").equals(listen) || !otherUpstream.equals(upstream);
  }

  /** Upstream chain first, then downstream, each in insertion order. */
  synchronized List<Toxic> toxics() {
    List<Toxic> all = new ArrayList<>(chains.get(Direction.UPSTREAM));
    all.addAll(chains.get(Direction.DOWNSTREAM));
    return all;
  }

  /**
   * Returns one toxic.
   *
   * @throws ApiException 404 when there is no such toxic
   */
  synchronized Toxic toxic(String toxicName) throws ApiException {
    Toxic toxic = find(toxicName);
    if (toxic == null) {
      throw ApiException.toxicNotFound();
    }
    return toxic;
  }

  /**
   * Adds a toxic at the end of its stream's chain, on live connections too.
   *
   * @throws ApiException 400 for a bad body, stream or type; 409 for a taken name
   */
  synchronized Toxic addToxic(JsonObject body) throws ApiException {
    Toxic toxic = Toxic.create(body, taken -> find(taken) != null);
    List<Toxic> chain = new ArrayList<>(chains.get(toxic.stream()));
    chain.add(toxic);
    replaceChain(toxic.stream(), chain);
    return toxic;
  }

  /**
   * Merges an update into a toxic and applies it to live connections.
   *
   * @throws ApiException 404 when there is no such toxic; 400 for a bad body
   */
  synchronized Toxic updateToxic(String toxicName, JsonObject body) throws ApiException {
    Toxic current = toxic(toxicName);
    Toxic updated = current.update(body);
    List<Toxic> chain = new ArrayList<>(chains.get(current.stream()));
    chain.set(chain.indexOf(current), updated);
    replaceChain(current.stream(), chain);
    return updated;
  }

  /**
   * Removes a toxic from the proxy and its live connections.
   *
   * @throws ApiException 404 when there is no such toxic
   */
  synchronized void removeToxic(String toxicName) throws ApiException {
    Toxic current = toxic(toxicName);
    List<Toxic> chain = new ArrayList<>(chains.get(current.stream()));
    chain.remove(current);
    replaceChain(current.stream(), chain);
  }

  /** Removes every toxic. */
  synchronized void removeAllToxics() {
    for (Direction direction : Direction.values()) {
      replaceChain(direction, List.of());
    }
  }

  /** The proxy as Toxiproxy renders it, toxics included. */
  synchronized JsonObject toJson() {
    JsonObject json = new JsonObject();
    json.addProperty("name", name);
    json.addProperty("listen", listen);
    json.addProperty("upstream", upstream);
    json.addProperty("enabled", enabled);
    JsonArray toxicsJson = new JsonArray();
    toxics().forEach(toxic -> toxicsJson.add(toxic.toJson()));
    json.add("toxics", toxicsJson);
    return json;
  }

  private Toxic find(String toxicName) {
    for (List<Toxic> chain : chains.values()) {
      for (Toxic toxic : chain) {
        if (toxic.name().equals(toxicName)) {
          return toxic;
        }
      }
    }
    return null;
  }

  private void replaceChain(Direction direction, List<Toxic> chain) {
    List<Toxic> copy = List.copyOf(chain);
    synchronized (wiring) {
      chains.put(direction, copy);
      for (ProxiedConnection connection : connections) {
        connection.link(direction).applyChain(copy);
      }
    }
  }

  /** Accepts clients until {@code socket} closes; {@code target} is fixed per listener. */
  private void acceptLoop(ServerSocket socket, String target) {
    while (true) {
      Socket client;
      try {
        client = socket.accept();
      } catch (IOException e) {
        if (!socket.isClosed()) {
          log.warn("{}: accept failed, proxy stops accepting: {}", name, e.toString());
        }
        return;
      }
      Socket server = new Socket();
      try {
        server.connect(upstreamAddress(target), CONNECT_TIMEOUT_MILLIS);
      } catch (IOException | RuntimeException e) {
        log.debug("{}: unable to open connection to upstream {}: {}", name, target, e.toString());
        closeQuietly(client);
        closeQuietly(server);
        continue;
      }
      register(socket, client, server);
    }
  }

  private void register(ServerSocket from, Socket client, Socket server) {
    synchronized (wiring) {
      if (listener != from) { // disabled or restarted while dialing
        closeQuietly(client);
        closeQuietly(server);
        return;
      }
      ProxiedConnection connection;
      try {
        connection =
            new ProxiedConnection(
                name + "-" + ++connectionCount,
                client,
                server,
                Map.copyOf(chains),
                connections::remove);
      } catch (IOException e) {
        log.debug("{}: could not set up connection: {}", name, e.toString());
        closeQuietly(client);
        closeQuietly(server);
        return;
      }
      connections.add(connection);
      connection.start(threads);
    }
  }

  /** Maps any {@code host:port} to {@code 127.0.0.1:port}; an empty address means port 0. */
  static String normalizeListen(String address, String errorPrefix) throws ApiException {
    if (address.isEmpty()) {
      return LOOPBACK_HOST + ":0";
    }
    int colon = address.lastIndexOf(':');
    if (colon < 0) {
      throw ApiException.internal(errorPrefix + "address " + address + ": missing port in address");
    }
    String portText = address.substring(colon + 1);
    int port;
    try {
      port = portText.isEmpty() ? 0 : Integer.parseInt(portText);
    } catch (NumberFormatException e) {
      port = -1;
    }
    if (port < 0 || port > 65_535) {
      throw ApiException.internal(errorPrefix + "address " + address + ": invalid port");
    }
    return LOOPBACK_HOST + ":" + port;
  }

  private static int port(String normalizedListen) {
    return Integer.parseInt(normalizedListen.substring(normalizedListen.lastIndexOf(':') + 1));
  }

  private static InetSocketAddress upstreamAddress(String address) throws IOException {
    int colon = address.lastIndexOf(':');
    if (colon < 0) {
      throw new IOException("address " + address + ": missing port in address");
    }
    String host = address.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port;
    try {
      port = Integer.parseInt(address.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IOException("address " + address + ": invalid port", e);
    }
    InetSocketAddress resolved =
        host.isEmpty() ? new InetSocketAddress(LOOPBACK, port) : new InetSocketAddress(host, port);
    if (resolved.isUnresolved()) {
      throw new IOException("lookup " + host + ": no such host");
    }
    return resolved;
  }

  private static void closeQuietly(ServerSocket socket) {
    if (socket == null) {
      return;
    }
    try {
      socket.close();
    } catch (IOException e) {
      // Nothing left to do with a listener that fails to close.
    }
  }

  private static void closeQuietly(Socket socket) {
    ProxiedConnection.closeQuietly(socket);
  }

  private static InetAddress loopback() {
    try {
      return InetAddress.getByAddress(new byte[] {127, 0, 0, 1});
    } catch (UnknownHostException e) {
      throw new AssertionError(e);
    }
  }
}
