package dev.redlock.chaos;

import static java.util.Objects.requireNonNull;

import dev.redlock.testkit.RedisProcess;
import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.Toxic;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * A background thread that injects random faults into the masters, one fault at a time: it picks a
 * kind (dealt from a shuffled deck of the available kinds) and a random set of nodes, applies the
 * fault to each, holds it for a while, heals those nodes and pauses before the next one (the pauses
 * are its schedule, not synchronization). The seed is printed; {@code -Dredlock.chaos.seed} replays
 * a schedule.
 *
 * <p>Network faults go through each node's Toxiproxy {@link Proxy}; process faults through its
 * {@link RedisProcess}. A kind is available only if every node has the target it needs.
 *
 * <p>{@link Builder#withinAssumptions(Duration)} keeps to what Redlock assumes: at most a minority
 * affected at a time, and a killed master restarts (empty) only after the longest TTL has passed.
 * {@link Builder#breakingAssumptions()} affects any number of nodes, a majority as often as not,
 * and restarts killed masters at once.
 *
 * <p>Thread-safe: {@link #start()} and {@link #stop()} from any thread; the counts may be read at
 * any time.
 */
final class Nemesis implements AutoCloseable {

  /** The kinds of fault. */
  enum Fault {
    /** 50 to 400 ms added to every reply (Toxiproxy {@code latency}). */
    LATENCY(true),
    /** The proxy is disabled: connections are refused and live ones closed. */
    PARTITION(true),
    /** Requests are silently dropped (Toxiproxy {@code timeout}, black hole or closing). */
    TIMEOUT(true),
    /** Connections are reset on their first request (Toxiproxy {@code reset_peer}). */
    RESET_PEER(true),
    /** The server is stopped with SIGSTOP and continued with SIGCONT. */
    PAUSE(false),
    /** The server is killed with SIGKILL and restarted without its data. */
    KILL_RESTART(false);

    final boolean network;

    Fault(boolean network) {
      this.network = network;
    }

    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final int n;
  private final IntFunction<Optional<Proxy>> proxies;
  private final IntFunction<Optional<RedisProcess>> processes;
  private final List<Fault> kinds;
  private final int minAffected;
  private final int maxAffected;
  private final Duration restartDelay;
  private final Duration minLatency;
  private final Duration maxLatency;
  private final Duration minFault;
  private final Duration maxFault;
  private final Duration minGap;
  private final Duration maxGap;
  private final long seed;
  private final Random random;
  private final String description;

  private final Map<Fault, AtomicLong> injected = new EnumMap<>(Fault.class);
  private final List<String> errors = new CopyOnWriteArrayList<>();
  private final List<String> events = new CopyOnWriteArrayList<>();
  private final Set<Integer> faulty = ConcurrentHashMap.newKeySet();
  private final CountDownLatch stopping = new CountDownLatch(1);
  private final Map<Integer, List<Toxic>> toxics = new ConcurrentHashMap<>();
  private final Map<Integer, Boolean> disabled = new ConcurrentHashMap<>();
  private final long startedAt = System.nanoTime();
  private Thread thread; // guarded by this

  private Nemesis(Builder builder) {
    this.n = builder.n;
    this.proxies = builder.proxies;
    this.processes = builder.processes;
    this.minAffected = builder.minAffected;
    this.maxAffected = builder.maxAffected;
    this.restartDelay = builder.restartDelay;
    this.minLatency = builder.minLatency;
    this.maxLatency = builder.maxLatency;
    this.minFault = builder.minFault;
    this.maxFault = builder.maxFault;
    this.minGap = builder.minGap;
    this.maxGap = builder.maxGap;
    this.seed = builder.seed;
    this.random = new Random(builder.seed);
    this.description = builder.description;
    List<Fault> available = new ArrayList<>();
    for (Fault fault : builder.faults) {
      if (fault.network ? all(proxies) : all(processes)) {
        available.add(fault);
      }
    }
    if (available.isEmpty()) {
      throw new IllegalArgumentException(
          "no fault of " + builder.faults + " has a target on every node");
    }
    this.kinds = List.copyOf(available);
    for (Fault fault : Fault.values()) {
      injected.put(fault, new AtomicLong());
    }
  }

  private <T> boolean all(IntFunction<Optional<T>> targets) {
    for (int i = 0; i < n; i++) {
      if (targets.apply(i).isEmpty()) {
        return false;
      }
    }
    return true;
  }

  /**
   * A nemesis for {@code n} masters, with no targets yet; add proxies, processes or both.
   *
   * @param n the number of masters
   */
  static Builder builder(int n) {
    return new Builder(n);
  }

  /** Starts the fault thread; returns at once. */
  synchronized Nemesis start() {
    if (thread != null) {
      throw new IllegalStateException("already started");
    }
    thread = new Thread(this::loop, "nemesis");
    thread.setDaemon(true);
    thread.start();
    return this;
  }

  /**
   * Stops injecting, waits (bounded) for the fault thread and heals every node it faulted.
   *
   * @throws IllegalStateException if the thread does not stop within 20 s
   */
  synchronized void stop() throws InterruptedException {
    stopping.countDown();
    if (thread != null) {
      thread.join(TimeUnit.SECONDS.toMillis(20));
      if (thread.isAlive()) {
        thread.interrupt();
        throw new IllegalStateException("nemesis thread did not stop within 20 s");
      }
    }
    healAll();
  }

  @Override
  public void close() throws InterruptedException {
    stop();
  }

  /** The faults injected so far, by kind, for the kinds this nemesis can inject. */
  Map<String, Long> faultsByKind() {
    Map<String, Long> counts = new LinkedHashMap<>();
    for (Fault fault : kinds) {
      counts.put(fault.label(), injected.get(fault).get());
    }
    return counts;
  }

  long faultCount() {
    return injected.values().stream().mapToLong(AtomicLong::get).sum();
  }

  /** Failures to apply or heal a fault (the run goes on). */
  List<String> errors() {
    return List.copyOf(errors);
  }

  /** Every fault applied, in order: {@code +1.234s pause [0, 3] 812ms}. */
  List<String> events() {
    return List.copyOf(events);
  }

  long seed() {
    return seed;
  }

  /** A one-line description: kinds, scope and seed, for the checker's block. */
  String describe() {
    return description
        + " kinds="
        + kinds.stream().map(Fault::label).toList()
        + " affected="
        + minAffected
        + ".."
        + maxAffected
        + " latency="
        + minLatency.toMillis()
        + ".."
        + maxLatency.toMillis()
        + "ms restart_delay="
        + restartDelay.toMillis()
        + "ms seed="
        + seed;
  }

  // ---- the loop ----

  private void loop() {
    // Kinds are dealt from a shuffled deck: random order, yet every kind comes up in a short run.
    List<Fault> deck = new ArrayList<>();
    try {
      while (!pause(between(minGap, maxGap))) {
        if (deck.isEmpty()) {
          deck.addAll(kinds);
          Collections.shuffle(deck, random);
        }
        Fault fault = deck.remove(deck.size() - 1);
        List<Integer> nodes = pickNodes();
        Duration hold = between(minFault, maxFault);
        if (fault == Fault.KILL_RESTART) {
          // Down for at least the restart delay; with none, back at once (a supervisor's restart).
          hold = restartDelay.isZero() ? Duration.ZERO : max(hold, restartDelay);
        }
        boolean applied = false;
        for (int node : nodes) {
          if (apply(fault, node)) {
            applied = true;
          }
        }
        if (applied) {
          injected.get(fault).incrementAndGet();
          events.add(
              String.format(
                  "+%.3fs %s %s %dms",
                  (System.nanoTime() - startedAt) / 1e9, fault.label(), nodes, hold.toMillis()));
        }
        // A killed master stays down for the whole restart delay even when the run is stopping,
        // so the guarantee holds for whatever runs after the nemesis.
        long heldFrom = System.nanoTime();
        pause(hold);
        if (fault == Fault.KILL_RESTART) {
          long restartAt = heldFrom + restartDelay.toNanos();
          for (long left = restartAt - System.nanoTime(); left > 0; ) {
            LockSupport.parkNanos(this, left);
            left = restartAt - System.nanoTime();
          }
        }
        for (int node : nodes) {
          heal(node);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      errors.add("nemesis stopped: " + e);
    }
  }

  /** Waits out {@code duration} unless stopped first; returns true if stopped. */
  private boolean pause(Duration duration) throws InterruptedException {
    return stopping.await(duration.toNanos(), TimeUnit.NANOSECONDS);
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  private Duration between(Duration min, Duration max) {
    long spread = max.toMillis() - min.toMillis();
    return min.plusMillis(spread <= 0 ? 0 : random.nextInt((int) spread + 1));
  }

  private List<Integer> pickNodes() {
    List<Integer> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      all.add(i);
    }
    Collections.shuffle(all, random);
    int count = minAffected + random.nextInt(maxAffected - minAffected + 1);
    List<Integer> chosen = new ArrayList<>(all.subList(0, count));
    Collections.sort(chosen);
    return chosen;
  }

  private boolean apply(Fault fault, int node) {
    faulty.add(node);
    try {
      switch (fault) {
        case LATENCY -> {
          Proxy proxy = proxy(node);
          Toxic toxic =
              proxy
                  .toxics()
                  .latency(
                      "nemesis-latency",
                      ToxicDirection.DOWNSTREAM,
                      minLatency.toMillis()
                          + random.nextInt((int) (maxLatency.toMillis() - minLatency.toMillis())))
                  .setJitter(20);
          toxics.computeIfAbsent(node, k -> new CopyOnWriteArrayList<>()).add(toxic);
        }
        case PARTITION -> {
          disabled.put(node, true);
          proxy(node).disable();
        }
        case TIMEOUT -> {
          Toxic toxic =
              proxy(node)
                  .toxics()
                  .timeout(
                      "nemesis-timeout", ToxicDirection.UPSTREAM, random.nextBoolean() ? 0 : 500);
          toxics.computeIfAbsent(node, k -> new CopyOnWriteArrayList<>()).add(toxic);
        }
        case RESET_PEER -> {
          Toxic toxic =
              proxy(node)
                  .toxics()
                  .resetPeer("nemesis-reset", ToxicDirection.UPSTREAM, random.nextInt(50));
          toxics.computeIfAbsent(node, k -> new CopyOnWriteArrayList<>()).add(toxic);
        }
        case PAUSE -> process(node).pause();
        case KILL_RESTART -> process(node).kill();
      }
      return true;
    } catch (IOException | RuntimeException e) {
      errors.add(fault.label() + " on node " + node + ": " + e);
      return false;
    }
  }

  private void heal(int node) {
    List<Toxic> applied = toxics.remove(node);
    if (applied != null) {
      for (Toxic toxic : applied) {
        try {
          toxic.remove();
        } catch (FileNotFoundException e) {
          // already gone (a reset of the proxy server removed it)
        } catch (IOException | RuntimeException e) {
          errors.add("removing " + toxic.getName() + " on node " + node + ": " + e);
        }
      }
    }
    if (disabled.remove(node) != null) {
      try {
        proxy(node).enable();
      } catch (IOException | RuntimeException e) {
        errors.add("enabling node " + node + ": " + e);
      }
    }
    Optional<RedisProcess> process = processes.apply(node);
    if (process.isPresent()) {
      try {
        process.get().resume();
        if (!process.get().isRunning()) {
          process.get().restart();
        }
      } catch (RuntimeException e) {
        errors.add("restoring node " + node + ": " + e);
      }
    }
    faulty.remove(node);
  }

  private void healAll() {
    for (int node : List.copyOf(faulty)) {
      heal(node);
    }
  }

  private Proxy proxy(int node) {
    return proxies.apply(node).orElseThrow();
  }

  private RedisProcess process(int node) {
    return processes.apply(node).orElseThrow();
  }

  /** Configures a nemesis. Not thread-safe. */
  static final class Builder {
    private final int n;
    private IntFunction<Optional<Proxy>> proxies = i -> Optional.empty();
    private IntFunction<Optional<RedisProcess>> processes = i -> Optional.empty();
    private Set<Fault> faults = EnumSet.allOf(Fault.class);
    private int minAffected = 1;
    private int maxAffected;
    private Duration restartDelay = Duration.ZERO;
    private Duration minLatency = Duration.ofMillis(50);
    private Duration maxLatency = Duration.ofMillis(400);
    private Duration minFault = Duration.ofMillis(300);
    private Duration maxFault = Duration.ofMillis(1500);
    private Duration minGap = Duration.ofMillis(100);
    private Duration maxGap = Duration.ofMillis(400);
    private long seed = Long.getLong("redlock.chaos.seed", System.nanoTime());
    private String description = "custom";

    private Builder(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("n must be positive: " + n);
      }
      this.n = n;
      this.maxAffected = (n - 1) / 2;
    }

    /** Node {@code i}'s proxy, for the network faults. */
    Builder proxies(IntFunction<Optional<Proxy>> proxies) {
      this.proxies = requireNonNull(proxies, "proxies");
      return this;
    }

    /** Node {@code i}'s process, for pause and kill. */
    Builder processes(IntFunction<Optional<RedisProcess>> processes) {
      this.processes = requireNonNull(processes, "processes");
      return this;
    }

    Builder processes(List<RedisProcess> processes) {
      List<RedisProcess> copy = List.copyOf(processes);
      return processes(i -> Optional.of(copy.get(i)));
    }

    /** Only these kinds (those with a target on every node). */
    Builder faults(Set<Fault> faults) {
      this.faults = EnumSet.copyOf(faults);
      return this;
    }

    /**
     * Stays within Redlock's assumptions: a minority of the masters at a time, and a killed master
     * comes back only after {@code longestTtl} (plus 20%) has passed.
     */
    Builder withinAssumptions(Duration longestTtl) {
      this.minAffected = 1;
      this.maxAffected = Math.max(1, (n - 1) / 2);
      this.restartDelay = longestTtl.plus(longestTtl.dividedBy(5));
      this.description = "within-assumptions";
      return this;
    }

    /**
     * Breaks them: any number of masters, and a killed master restarts (empty) at once, as under a
     * supervisor that restarts crashed processes.
     */
    Builder breakingAssumptions() {
      this.minAffected = 1;
      this.maxAffected = n;
      this.restartDelay = Duration.ZERO;
      this.description = "breaking-assumptions";
      return this;
    }

    /**
     * How many masters each fault affects, at least and at most. Latency alone breaks none of
     * Redlock's assumptions on any number of masters: the round's elapsed time is subtracted.
     */
    Builder affected(int min, int max) {
      this.minAffected = min;
      this.maxAffected = max;
      return this;
    }

    /** The delay a latency fault adds to every reply (plus or minus 20 ms of jitter). */
    Builder latency(Duration min, Duration max) {
      if (max.compareTo(min) <= 0) {
        throw new IllegalArgumentException("latency range empty: " + min + ".." + max);
      }
      this.minLatency = min;
      this.maxLatency = max;
      return this;
    }

    /** How long each fault lasts. */
    Builder faultDuration(Duration min, Duration max) {
      this.minFault = min;
      this.maxFault = max;
      return this;
    }

    /** The healthy pause between faults. */
    Builder gap(Duration min, Duration max) {
      this.minGap = min;
      this.maxGap = max;
      return this;
    }

    Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    Nemesis build() {
      if (minAffected < 1 || maxAffected < minAffected || maxAffected > n) {
        throw new IllegalArgumentException("affected nodes out of range: " + maxAffected);
      }
      return new Nemesis(this);
    }
  }
}
