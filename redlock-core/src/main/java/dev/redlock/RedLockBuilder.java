package dev.redlock;

import static java.util.Objects.requireNonNull;

import dev.redlock.internal.lease.Arguments;
import dev.redlock.internal.lease.Contention;
import dev.redlock.internal.lease.Coordinator;
import dev.redlock.internal.lease.Events;
import dev.redlock.internal.lease.Listener;
import dev.redlock.internal.lease.Masters;
import dev.redlock.internal.lease.Timing;
import dev.redlock.internal.lease.Validity;
import dev.redlock.internal.lease.Wakeups;
import dev.redlock.internal.preflight.FitNodeClient;
import dev.redlock.internal.preflight.Preflight;
import dev.redlock.internal.transport.BreakerNodeClient;
import dev.redlock.internal.transport.DiagnosingNodeClient;
import dev.redlock.internal.transport.HandOffNodeClient;
import dev.redlock.internal.transport.NodeAddress;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NoticeLink;
import dev.redlock.internal.transport.PipelinedNodeClient;
import dev.redlock.internal.transport.RoundLoop;
import dev.redlock.internal.transport.SelectorLoop;
import dev.redlock.internal.transport.SelectorNodeClient;
import dev.redlock.internal.transport.Subscriber;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Transport;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;

/**
 * Configures a {@link RedLock}; obtained from {@link RedLock#builder()}. Not thread-safe; {@link
 * #build()} checks everything and the result does not change when the builder does.
 */
public final class RedLockBuilder {

  private final List<NodeAddress> addresses = new ArrayList<>();
  private final List<String> datacenters = new ArrayList<>(); // per address; empty: no label
  private final List<Duration> timeouts = new ArrayList<>(); // per address; null: nodeTimeout
  private final Map<String, String> servers = new HashMap<>();
  private boolean excludeUnfitMasters = true;
  private Duration nodeTimeout = RedLock.DEFAULT_NODE_TIMEOUT;
  private Duration connectTimeout = RedLock.DEFAULT_CONNECT_TIMEOUT;
  private double driftFactor = RedLock.DEFAULT_DRIFT_FACTOR;
  private Duration minValidity = Duration.ZERO;
  private Duration retryDelay = RedLock.DEFAULT_RETRY_DELAY;
  private RedLockListener listener; // null: none
  private boolean circuitBreakers = true;
  private boolean fencing = true;
  private boolean restartGuard = true;
  private Duration maxLeaseTime = RedLock.DEFAULT_MAX_LEASE_TIME;
  private Duration circuitBreakerWait = RedLock.DEFAULT_CIRCUIT_BREAKER_WAIT;
  private Ticker ticker = Ticker.system();
  private NodeClientFactory nodeClients; // null: the transport's clients
  private Transport transport; // null: Transport.plaintext()
  private RoundLoop roundLoop; // null: the selector, if any
  private Timing timing = Timing.REAL;
  // The wake-up links of master i, telling the listener: a simulation's; null: NoticeLinks.
  private java.util.function.BiFunction<Integer, NoticeLink.Listener, Subscriber> subscribers;
  private SSLContext sslContext;
  private boolean wakeUps = true;
  private Duration preflightInterval = RedLock.PREFLIGHT_INTERVAL;

  RedLockBuilder() {}

  /**
   * Adds one independent Redis master.
   *
   * @param uri {@code redis://[user:password@]host[:port][/db]}, or {@code rediss://} for TLS; the
   *     port defaults to 6379 and the database to 0. The password runs to the last {@code @} and
   *     may hold any character, percent-encoded ({@code %40} for {@code @}) or not; no error
   *     message shows it
   * @return this builder
   * @throws NullPointerException if {@code uri} is null
   * @throws IllegalArgumentException if the URI is malformed, or names a {@code host:port} already
   *     added (one server cannot be two independent masters)
   */
  public RedLockBuilder node(String uri) {
    return add(uri, "", null);
  }

  /**
   * Adds the masters of one datacenter, under one label and with a node timeout of their own: a
   * remote datacenter needs a longer timeout than the local one. The labels let {@link
   * RedLock#inspect()} say which single-datacenter losses the placement survives (2/2/1 masters
   * across three datacenters survives any; 3/2 across two does not survive losing the first).
   *
   * @param name the datacenter's label; non-empty
   * @param nodeTimeout how long each of these masters may take to connect or answer; positive, less
   *     than {@link RedLock#MAX_TTL}
   * @param uris the masters' URIs, as for {@link #node(String)}
   * @return this builder
   * @throws NullPointerException if an argument or a URI is null
   * @throws IllegalArgumentException if the name is empty, the timeout out of range, a URI
   *     malformed or a master repeated
   */
  public RedLockBuilder datacenter(String name, Duration nodeTimeout, List<String> uris) {
    requireNonNull(name, "name");
    requireNonNull(uris, "uris");
    if (name.isBlank()) {
      throw new IllegalArgumentException("datacenter name must not be blank");
    }
    checkNodeTimeout(nodeTimeout);
    for (String uri : uris) {
      add(uri, name, nodeTimeout);
    }
    return this;
  }

  private RedLockBuilder add(String uri, String datacenter, Duration timeout) {
    NodeAddress address = NodeAddress.parse(uri);
    String previous = servers.putIfAbsent(address.serverKey(), address.toString());
    if (previous != null) {
      throw new IllegalArgumentException(
          "node "
              + address
              + " is configured twice (as "
              + previous
              + "): the masters must be"
              + " independent servers");
    }
    addresses.add(address);
    datacenters.add(datacenter);
    timeouts.add(timeout);
    return this;
  }

  /**
   * Adds several independent Redis masters, as {@link #node(String)} does for each.
   *
   * @param uris the masters' URIs
   * @return this builder
   * @throws NullPointerException if the list or an element is null
   * @throws IllegalArgumentException if a URI is malformed or a master is repeated
   */
  public RedLockBuilder nodes(List<String> uris) {
    requireNonNull(uris, "nodes");
    for (String uri : uris) {
      node(uri);
    }
    return this;
  }

  /**
   * Sets how long one master may take to answer one command before its vote is counted as failed:
   * the Redlock spec's per-node timeout. Keep it well below every TTL: the spec suggests 5 to 50 ms
   * for a 10 s TTL. Opening a connection has its own, longer bound ({@link #connectTimeout}).
   * Default {@link RedLock#DEFAULT_NODE_TIMEOUT}.
   *
   * @param timeout positive
   * @return this builder
   * @throws NullPointerException if {@code timeout} is null
   * @throws IllegalArgumentException if it is not positive
   */
  public RedLockBuilder nodeTimeout(Duration timeout) {
    this.nodeTimeout = checkNodeTimeout(timeout);
    return this;
  }

  private static Duration checkNodeTimeout(Duration timeout) {
    Arguments.positiveNanos(timeout, "nodeTimeout");
    if (timeout.compareTo(RedLock.MAX_TTL) >= 0) {
      throw new IllegalArgumentException("nodeTimeout must be less than " + RedLock.MAX_TTL);
    }
    return timeout;
  }

  /**
   * Sets how long opening a connection to one master may take: TCP, TLS and the handshake (AUTH,
   * SELECT, the server's run for the restart guard, loading the scripts). {@link #build()} waits
   * for the first attempts up to this long, and {@link RedLock#admitFreshNodes()} waits for a
   * master still connecting, so a slow first connection (a cold JVM, a distant datacenter) costs
   * nothing; a command that finds its master's connection still opening waits only its node
   * timeout, as a failed vote. Never less than a master's node timeout. Default {@link
   * RedLock#DEFAULT_CONNECT_TIMEOUT}.
   *
   * @param timeout positive, at most {@link RedLock#MAX_CONNECT_TIMEOUT}
   * @return this builder
   * @throws NullPointerException if {@code timeout} is null
   * @throws IllegalArgumentException if it is not positive or is longer than {@link
   *     RedLock#MAX_CONNECT_TIMEOUT}
   */
  public RedLockBuilder connectTimeout(Duration timeout) {
    Arguments.positiveNanos(timeout, "connectTimeout");
    if (timeout.compareTo(RedLock.MAX_CONNECT_TIMEOUT) > 0) {
      throw new IllegalArgumentException(
          "connectTimeout must be at most " + RedLock.MAX_CONNECT_TIMEOUT + ": " + timeout);
    }
    this.connectTimeout = timeout;
    return this;
  }

  /** The connect timeout of a master whose node timeout is {@code nodeTimeoutNanos}. */
  private long connectTimeoutNanos(long nodeTimeoutNanos) {
    return Math.max(connectTimeout.toNanos(), nodeTimeoutNanos);
  }

  /**
   * Keeps masters that the preflight finds unfit for Redlock from voting: a replica, a master in
   * cluster mode, or one whose {@code maxmemory-policy} can evict keys under a {@code maxmemory}
   * limit (see {@link RedLock#inspect()}; a FAIL verdict). Their acquire, fence and extend votes (a
   * waiter's acquire at its gate too) fail at once with the reason in the outcome's detail;
   * releases still reach them. Each master is checked when the RedLock is built and again at most
   * every {@link RedLock#PREFLIGHT_INTERVAL} while it is used, so a master whose configuration is
   * corrected votes again. Whatever this setting, an unfit master is logged at WARN once each time
   * it is found unfit, saying whether it votes. Default on: an evicting master that votes can lose
   * a lock's key under memory pressure and grant it to a second client; turn it off only for a
   * master whose eviction you have ruled out some other way, and the quorum then counts it.
   *
   * @param enabled whether unfit masters are kept from voting
   * @return this builder
   */
  public RedLockBuilder excludeUnfitMasters(boolean enabled) {
    this.excludeUnfitMasters = enabled;
    return this;
  }

  /**
   * Sets the fraction of the TTL allowed for clock drift between this process and the masters; the
   * drift allowance is {@code ttl * driftFactor + 2 ms}. Default {@link
   * RedLock#DEFAULT_DRIFT_FACTOR}.
   *
   * @param driftFactor in [0, 0.1)
   * @return this builder
   * @throws IllegalArgumentException if it is outside [0, 0.1) or not a number
   */
  public RedLockBuilder driftFactor(double driftFactor) {
    if (!(driftFactor >= 0 && driftFactor < 0.1)) {
      throw new IllegalArgumentException("driftFactor must be in [0, 0.1): " + driftFactor);
    }
    this.driftFactor = driftFactor;
    return this;
  }

  /**
   * Sets the least validity a new or extended lease must have; a round that leaves less counts as
   * failed. Default zero (any positive validity).
   *
   * @param minValidity zero or positive
   * @return this builder
   * @throws NullPointerException if {@code minValidity} is null
   * @throws IllegalArgumentException if it is negative or longer than {@link RedLock#MAX_TTL}
   */
  public RedLockBuilder minValidity(Duration minValidity) {
    requireNonNull(minValidity, "minValidity");
    if (minValidity.isNegative() || minValidity.compareTo(RedLock.MAX_TTL) >= 0) {
      throw new IllegalArgumentException(
          "minValidity must be zero or positive and less than "
              + RedLock.MAX_TTL
              + ": "
              + minValidity);
    }
    this.minValidity = minValidity;
    return this;
  }

  /**
   * Sets the mean pause between rounds of {@link RedLock#acquire}; each pause is drawn uniformly
   * from [0.5, 1.5) times this. Default {@link RedLock#DEFAULT_RETRY_DELAY}.
   *
   * @param retryDelay positive, at most {@link RedLock#MAX_TTL}
   * @return this builder
   * @throws NullPointerException if {@code retryDelay} is null
   * @throws IllegalArgumentException if it is not positive or is longer than {@link
   *     RedLock#MAX_TTL}
   */
  public RedLockBuilder retryDelay(Duration retryDelay) {
    this.retryDelay = atMostOneDay(retryDelay, "retryDelay");
    return this;
  }

  /**
   * Sets the listener told of every acquire, denial, extend, loss and release, with each master's
   * answer. Default: none.
   *
   * @param listener a thread-safe listener; its exceptions are logged and ignored
   * @return this builder
   * @throws NullPointerException if {@code listener} is null
   */
  public RedLockBuilder listener(RedLockListener listener) {
    this.listener = requireNonNull(listener, "listener");
    return this;
  }

  /**
   * Turns fencing tokens on or off. On (the default), every lease carries a {@link
   * Lease#fencingToken() fencing token} greater than that of every earlier lease on the same
   * resource, at the cost of a second round to a quorum during acquire. Off, acquire is one round
   * and {@link Lease#fencingToken()} throws.
   *
   * @param enabled whether leases carry fencing tokens
   * @return this builder
   */
  public RedLockBuilder fencing(boolean enabled) {
    this.fencing = enabled;
    return this;
  }

  /**
   * Turns the restart guard on or off. On (the default), a master does not vote until both its
   * server run and its dataset are older than {@link #maxLeaseTime} (stretched by twice the drift
   * factor), so it cannot help a second majority form while an earlier lease it had granted may
   * still be valid: a restart is seen by the server's {@code run_id} and {@code uptime_in_seconds},
   * read by every new connection (every restart breaks it), whatever snapshot the master reloads; a
   * {@code FLUSHALL} or a failover to an empty replica by the dataset-birth marker it removes. A
   * restart does not count when this client saw the run that stopped configured to lose nothing
   * ({@code appendonly yes}, {@code appendfsync always}, {@code no-appendfsync-on-rewrite no}); the
   * new run's own configuration does not vouch for the old one's. Every TTL must be at most {@link
   * #maxLeaseTime}. A brand-new cluster looks the same as a restarted one: admit it with {@link
   * RedLock#admitFreshNodes()}. The connection needs {@code INFO}: a master whose user may not read
   * it never votes with the guard on.
   *
   * @param enabled whether young masters' votes are ignored
   * @return this builder
   */
  public RedLockBuilder restartGuard(boolean enabled) {
    this.restartGuard = enabled;
    return this;
  }

  /**
   * Sets the longest TTL this client will use (acquire, extend and renewal), which is how long the
   * restart guard keeps a restarted master from voting. Default {@link
   * RedLock#DEFAULT_MAX_LEASE_TIME}. Every RedLock sharing the masters should use the same value.
   *
   * @param maxLeaseTime positive, at most {@link RedLock#MAX_TTL}
   * @return this builder
   * @throws NullPointerException if {@code maxLeaseTime} is null
   * @throws IllegalArgumentException if it is not positive or is longer than {@link
   *     RedLock#MAX_TTL}
   */
  public RedLockBuilder maxLeaseTime(Duration maxLeaseTime) {
    Arguments.positiveNanos(maxLeaseTime, "maxLeaseTime");
    if (maxLeaseTime.compareTo(RedLock.MAX_TTL) > 0 || maxLeaseTime.toMillis() < 1) {
      throw new IllegalArgumentException(
          "maxLeaseTime must be between 1 ms and " + RedLock.MAX_TTL + ": " + maxLeaseTime);
    }
    this.maxLeaseTime = maxLeaseTime;
    return this;
  }

  /**
   * Turns the per-master circuit breakers on or off. On (the default), a master whose recent calls
   * mostly failed or timed out is skipped at once, as a failed vote, instead of costing its node
   * timeout; after {@link #circuitBreakerWait} it is probed again and, if it answers, used again.
   * Releases are still sent to it.
   *
   * @param enabled whether to use circuit breakers
   * @return this builder
   */
  public RedLockBuilder circuitBreakers(boolean enabled) {
    this.circuitBreakers = enabled;
    return this;
  }

  /**
   * Sets how long an open circuit breaker skips its master before probing it again. Default {@link
   * RedLock#DEFAULT_CIRCUIT_BREAKER_WAIT}.
   *
   * @param wait positive, at most {@link RedLock#MAX_TTL}
   * @return this builder
   * @throws NullPointerException if {@code wait} is null
   * @throws IllegalArgumentException if it is not positive or is longer than {@link
   *     RedLock#MAX_TTL}
   */
  public RedLockBuilder circuitBreakerWait(Duration wait) {
    this.circuitBreakerWait = atMostOneDay(wait, "circuitBreakerWait");
    return this;
  }

  /**
   * Sets the TLS context for {@code rediss://} masters, for a private CA or client certificates.
   * Default: the JVM's default context (its default trust store). Either way the master's
   * certificate must name the host in its URI.
   *
   * @param sslContext an initialized context
   * @return this builder
   * @throws NullPointerException if {@code sslContext} is null
   */
  public RedLockBuilder sslContext(SSLContext sslContext) {
    this.sslContext = requireNonNull(sslContext, "sslContext");
    return this;
  }

  /**
   * Sets whether waits are woken by releases and releasers hand the lock to waiters. On (the
   * default): a wait ({@link RedLock#acquire}, {@code withLock}, {@link LeaseLock}) subscribes to
   * the resource's channel {@code redlock:wake:<resource>} on every master, over one extra
   * connection per master opened by the first wait, and tries again as soon as any master tells of
   * a release, rather than after its next {@link #retryDelay} pause (which still bounds the wait
   * for a notice that was lost); and a wait that starts just after this RedLock released the same
   * resource to a waiting client pauses about three rounds first, so that the waiter gets it. A
   * release always publishes the notice; an ACL without the channels costs only the wake-ups (see
   * docs/acl.md). Off: waits poll every {@link #retryDelay}.
   *
   * @param wakeUps whether waits are woken and releases handed off
   * @return this builder
   */
  public RedLockBuilder wakeUps(boolean wakeUps) {
    this.wakeUps = wakeUps;
    return this;
  }

  /** Refuses settings that are each in range but together leave no TTL that could be granted. */
  private void checkSettingsTogether() {
    Duration longest = restartGuard ? maxLeaseTime : RedLock.MAX_TTL;
    String longestName = restartGuard ? "maxLeaseTime" : "the longest TTL";
    Duration slowest = longestNodeTimeout();
    if (slowest.compareTo(longest) >= 0) {
      throw new IllegalArgumentException(
          "nodeTimeout ("
              + slowest
              + ") must be less than "
              + longestName
              + " ("
              + longest
              + "): every TTL must be above the one and at most the other");
    }
    long best = Validity.remainingNanos(longest.toNanos(), 0, driftFactor);
    if (best <= minValidity.toNanos()) {
      throw new IllegalArgumentException(
          "minValidity ("
              + minValidity
              + ") must be less than what the drift allowance (driftFactor "
              + driftFactor
              + ", plus 2 ms) leaves of "
              + longestName
              + " ("
              + longest
              + "): "
              + Duration.ofNanos(best)
              + "; no lease could ever be granted");
    }
  }

  private Duration longestNodeTimeout() {
    Duration longest = Duration.ZERO;
    for (Duration timeout : timeouts) {
      Duration own = timeout == null ? nodeTimeout : timeout;
      longest = own.compareTo(longest) > 0 ? own : longest;
    }
    return longest;
  }

  /**
   * How old a master's dataset and server run must be for the restart guard to count its vote: the
   * longest lease, stretched by twice the drift factor, since the run's age is measured on this
   * client's clock and the lease it protects on its holder's. 0 without the guard.
   */
  private long guardMillis() {
    long longest = maxLeaseTime.toMillis();
    return restartGuard ? longest + (long) Math.ceil(longest * 2 * driftFactor) : 0;
  }

  private static Duration atMostOneDay(Duration value, String name) {
    Arguments.positiveNanos(value, name);
    if (value.compareTo(RedLock.MAX_TTL) > 0) {
      throw new IllegalArgumentException(
          name + " must be at most " + RedLock.MAX_TTL + ": " + value);
    }
    return value;
  }

  RedLockBuilder ticker(Ticker ticker) {
    this.ticker = requireNonNull(ticker, "ticker");
    return this;
  }

  /** How often, at most, a master's fitness is checked again while it is used: for tests. */
  RedLockBuilder preflightInterval(Duration interval) {
    this.preflightInterval = requireNonNull(interval, "interval");
    return this;
  }

  RedLockBuilder nodeClients(NodeClientFactory factory) {
    this.nodeClients = requireNonNull(factory, "factory");
    return this;
  }

  /**
   * With {@link #nodeClients}: where callers wait for their rounds, so that a simulation runs its
   * network and timers on the waiting caller's thread. For tests and the simulation.
   */
  RedLockBuilder roundLoop(RoundLoop loop) {
    this.roundLoop = requireNonNull(loop, "loop");
    return this;
  }

  /**
   * The lease layer's timers, pauses and randomness ({@link Timing#REAL} unless set): a
   * simulation's, on its virtual clock; the events and the async futures' completions then run on
   * its timers too. For tests and the simulation.
   */
  RedLockBuilder timing(Timing timing) {
    this.timing = requireNonNull(timing, "timing");
    return this;
  }

  /**
   * Makes the wake-up link of master {@code i} (its index among the nodes), telling the given
   * listener, instead of a {@link NoticeLink} of its own: a simulation's. For the simulation.
   */
  RedLockBuilder subscribers(
      java.util.function.BiFunction<Integer, NoticeLink.Listener, Subscriber> subscribers) {
    this.subscribers = requireNonNull(subscribers, "subscribers");
    return this;
  }

  /** Picks the transport of plaintext masters, over {@link Transport#plaintext()}: for tests. */
  RedLockBuilder transport(Transport transport) {
    this.transport = requireNonNull(transport, "transport");
    return this;
  }

  /**
   * Builds the coordinator: opens one connection per master in parallel and waits up to the connect
   * timeout for them, then, with {@link #excludeUnfitMasters} on (the default), for each master's
   * first fitness check (at most the longer of 1 s and two node timeouts). A master that cannot be
   * reached does not fail the build; it counts as a failed vote until it can.
   *
   * @return a new RedLock, which must be closed
   * @throws IllegalArgumentException if no node was added, or if the settings leave no TTL that
   *     could be granted (see {@link #maxLeaseTime})
   */
  public RedLock build() {
    if (addresses.isEmpty()) {
      throw new IllegalArgumentException("at least one node is required");
    }
    checkSettingsTogether();
    NodeClientFactory factory = nodeClients;
    boolean realTransport = factory == null;
    SSLContext linkTls = sslContext != null ? sslContext : defaultSslContext(addresses);
    // Waiters woken by releases and queued in turn, or polling on their timers.
    Contention contention =
        !wakeUps
            ? Contention.polling()
            : new Wakeups(
                ticker,
                retryDelay.toNanos(),
                true,
                listener -> {
                  List<Subscriber> links = new ArrayList<>();
                  if (subscribers != null) { // a simulation's
                    for (int i = 0; i < addresses.size(); i++) {
                      links.add(subscribers.apply(i, listener));
                    }
                  } else if (realTransport) { // fake clients for tests have no master to hear
                    for (int i = 0; i < addresses.size(); i++) {
                      long timeout =
                          (timeouts.get(i) == null ? nodeTimeout : timeouts.get(i)).toNanos();
                      links.add(
                          new NoticeLink(
                              addresses.get(i), connectTimeoutNanos(timeout), linkTls, listener));
                    }
                  }
                  return links;
                },
                timing.jitter()); // the names of the client and its waiters
    Listener heard = listener == null ? Events.none() : new ListenerAdapter(listener);
    // Injected timing (a simulation's): the events and the async futures on its timers too.
    Events events =
        timing == Timing.REAL
            ? new Events(heard)
            : new Events(heard, timing.timers().start("redlock-events", false));
    SelectorLoop io = null;
    if (factory == null) {
      SSLContext tls = linkTls;
      Transport plain = transport != null ? transport : Transport.plaintext();
      if (plain == Transport.SELECTOR && addresses.stream().anyMatch(a -> !a.tls())) {
        io = new SelectorLoop(events::internalError, InetAddress::getAllByName);
      }
      SelectorLoop selector = io;
      factory =
          (address, index, timeout, t) ->
              selector == null || address.tls()
                  ? new PipelinedNodeClient(
                      address, index, timeout, connectTimeoutNanos(timeout), t, tls)
                  : new SelectorNodeClient(
                      address, timeout, connectTimeoutNanos(timeout), t, selector);
    }
    List<NodeClient> clients = new ArrayList<>(addresses.size());
    List<FitNodeClient> fits = new ArrayList<>(addresses.size()); // the same, typed
    List<String> names = new ArrayList<>(addresses.size());
    long[] timeoutsNanos = new long[addresses.size()];
    long guardMillis = guardMillis();
    Preflight preflight = new Preflight(restartGuard, guardMillis);
    try {
      for (int i = 0; i < addresses.size(); i++) {
        long timeoutNanos = (timeouts.get(i) == null ? nodeTimeout : timeouts.get(i)).toNanos();
        timeoutsNanos[i] = timeoutNanos;
        NodeClient client = factory.create(addresses.get(i), i, timeoutNanos, ticker);
        if (contention instanceof Wakeups wakeups) {
          // Which releases some waiter heard: this RedLock then lets it have the lock first.
          client = new HandOffNodeClient(client, wakeups::releasedToWaiters);
        }
        // Each kind of misconfiguration at WARN once, at INFO when it clears, on the event thread.
        client =
            new DiagnosingNodeClient(client, addresses.get(i).toString(), guardMillis, events::run);
        if (circuitBreakers) {
          client =
              new BreakerNodeClient(
                  client,
                  addresses.get(i).toString(),
                  timeoutNanos,
                  circuitBreakerWait,
                  ticker,
                  // Recorded on whatever thread completed the call, often the one reading every
                  // master's replies: the log line and the listener run on the event thread.
                  events::circuitChanged);
        }
        // Named at WARN whatever the setting; kept from voting unless excludeUnfitMasters(false).
        FitNodeClient fit =
            new FitNodeClient(
                client,
                preflight,
                addresses.get(i).toString(),
                datacenters.get(i),
                excludeUnfitMasters,
                preflightInterval.toNanos(),
                ticker,
                events::run);
        fits.add(fit);
        clients.add(fit);
        names.add(addresses.get(i).toString());
      }
    } catch (RuntimeException | Error e) {
      clients.forEach(NodeClient::close);
      contention.close();
      if (io != null) {
        io.close(nodeTimeout.toNanos());
      }
      throw e;
    }
    Masters masters =
        new Masters(
            clients, names, datacenters, timeoutsNanos, ticker, io != null ? io : roundLoop);
    masters.awaitFirstConnect(ticker.read() + connectTimeoutNanos(masters.nodeTimeoutNanos()));
    if (excludeUnfitMasters) {
      // The first verdicts before the first round, bounded like inspect().
      long deadline = ticker.read() + Coordinator.preflightWaitNanos(masters.nodeTimeoutNanos());
      for (FitNodeClient fit : fits) {
        fit.awaitFirstCheck(deadline, timing.pauses()::await); // a simulation runs its events
      }
    }
    return new RedLock(
        new Coordinator(
            masters,
            events,
            preflight,
            new Coordinator.Settings(
                driftFactor,
                minValidity.toNanos(),
                retryDelay.toNanos(),
                fencing,
                restartGuard,
                maxLeaseTime.toMillis(),
                guardMillis,
                connectTimeoutNanos(masters.nodeTimeoutNanos())),
            contention,
            timing));
  }

  /** The JVM's default TLS context, looked up only when some master uses {@code rediss://}. */
  private static SSLContext defaultSslContext(List<NodeAddress> addresses) {
    if (addresses.stream().noneMatch(NodeAddress::tls)) {
      return null;
    }
    try {
      return SSLContext.getDefault();
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("no default TLS context for rediss:// masters", e);
    }
  }

  /** Creates the client for one master; tests substitute fakes. */
  @FunctionalInterface
  interface NodeClientFactory {
    NodeClient create(NodeAddress address, int index, long nodeTimeoutNanos, Ticker ticker);
  }
}
