package dev.redlock.chaos;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.LockTakenException;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * K clients, each with its own {@link RedLock} (as separate processes would have), contend for a
 * few resources until a deadline. A holder reads its resource's counter from the {@link
 * CounterStore}, works for a random while (sometimes extending the lease), checks that the lease is
 * still valid, writes the counter plus one and releases; every lease goes into the history with its
 * validity window on the shared monotonic clock. Some holds may run into their validity or be
 * renewed for several TTLs instead ({@link LongHolds}), so that windows also end at the deadlines
 * the library computed, not only at releases.
 *
 * <p>Runs in this JVM's threads ({@link #run}), or as one worker JVM's share of a multi-process run
 * ({@link WorkerMain}).
 */
final class Workload {

  /** Per-client counters, in the order they are printed. */
  static final List<String> STATS =
      List.of(
          "acquired",
          "increments",
          "taken",
          "unavailable",
          "extended",
          "lost_by_extend",
          "abandoned",
          "late_writes",
          "store_errors",
          "errors",
          "overran",
          "renewed",
          "outlived_ttl");

  private final List<String> nodes;
  private final String counterStore;
  private final List<String> clients;
  private final List<String> resources;
  private final Duration ttl;
  private final Duration maxWait;
  private final Duration nodeTimeout;
  private final Duration retryDelay;
  private final Duration maxWork;
  private final double extendChance;
  private final double overrunChance;
  private final double renewedChance;
  private final boolean restartGuard;

  private Workload(Builder builder) {
    this.nodes = List.copyOf(builder.nodes);
    this.counterStore = builder.counterStore;
    this.clients = List.copyOf(builder.clients);
    this.resources = List.copyOf(builder.resources);
    this.ttl = builder.ttl;
    this.maxWait = builder.maxWait;
    this.nodeTimeout = builder.nodeTimeout;
    this.retryDelay = builder.retryDelay;
    this.maxWork = builder.maxWork;
    this.extendChance = builder.extendChance;
    this.overrunChance = builder.overrunChance;
    this.renewedChance = builder.renewedChance;
    this.restartGuard = builder.restartGuard;
  }

  static Builder builder(List<String> nodes, String counterStore) {
    return new Builder(nodes, counterStore);
  }

  List<String> clients() {
    return clients;
  }

  List<String> resources() {
    return resources;
  }

  Duration ttl() {
    return ttl;
  }

  Duration nodeTimeout() {
    return nodeTimeout;
  }

  /**
   * Runs every client in its own thread for {@code duration}; returns when all have stopped.
   *
   * @throws IllegalStateException if a client thread is still running long after the deadline
   */
  Result run(Duration duration) throws InterruptedException {
    return runUntil(System.nanoTime() + duration.toNanos());
  }

  /** Like {@link #run}, with the end as a reading of {@link System#nanoTime()}. */
  Result runUntil(long endAt) throws InterruptedException {
    List<RedLock> locks = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    LeaseHistory history = new LeaseHistory();
    Map<String, Map<String, Long>> stats = new ConcurrentHashMap<>();
    Map<String, Map<String, Long>> increments = new ConcurrentHashMap<>();
    Map<String, String> firstErrors = new ConcurrentHashMap<>();
    CountDownLatch go = new CountDownLatch(1);
    try {
      for (String client : clients) {
        // The restart guard, when on, keeps a restarted master out for one TTL (the longest here).
        RedLock redlock =
            RedLock.builder()
                .nodes(nodes)
                .nodeTimeout(nodeTimeout)
                .retryDelay(retryDelay)
                .maxLeaseTime(ttl)
                .restartGuard(restartGuard)
                .build();
        redlock.admitFreshNodes();
        locks.add(redlock);
        ClientLoop loop = new ClientLoop(client, redlock, endAt, history);
        Thread thread =
            new Thread(
                () -> {
                  try {
                    go.await();
                    loop.run();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  } finally {
                    stats.put(client, loop.stats);
                    increments.put(client, loop.increments);
                    if (loop.firstError != null) {
                      firstErrors.put(client, loop.firstError);
                    }
                  }
                },
                "workload-" + client);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
      }
      go.countDown();
      // Each loop stops starting holds at endAt; one acquire, one hold (a renewed one lasts up to
      // two TTLs) and one store call follow.
      long joinDeadline =
          endAt
              + maxWait.toNanos()
              + 2 * ttl.toNanos()
              + maxWork.toNanos()
              + TimeUnit.SECONDS.toNanos(15);
      for (Thread thread : threads) {
        long left = joinDeadline - System.nanoTime();
        TimeUnit.NANOSECONDS.timedJoin(thread, Math.max(1, left));
        if (thread.isAlive()) {
          threads.forEach(Thread::interrupt);
          throw new IllegalStateException(thread.getName() + " still running long after the end");
        }
      }
    } finally {
      threads.forEach(Thread::interrupt);
      locks.forEach(RedLock::close);
    }
    return new Result(history.records(), stats, increments, firstErrors);
  }

  /** One client: acquire, read-modify-write, release, until the end. Confined to its thread. */
  private final class ClientLoop {
    final String client;
    final RedLock redlock;
    final long endAt;
    final LeaseHistory history;
    final Map<String, Long> stats = new LinkedHashMap<>();
    final Map<String, Long> increments = new TreeMap<>();
    final LongHolds longHolds;
    String firstError;

    ClientLoop(String client, RedLock redlock, long endAt, LeaseHistory history) {
      this.client = client;
      this.redlock = redlock;
      this.endAt = endAt;
      this.history = history;
      STATS.forEach(name -> stats.put(name, 0L));
      this.longHolds =
          new LongHolds(
              client,
              redlock,
              ttl,
              maxWait,
              history,
              stats,
              increments,
              error -> {
                if (firstError == null) {
                  firstError = error;
                }
              });
    }

    void run() throws InterruptedException {
      CounterStore store = null;
      try {
        while (System.nanoTime() - endAt < 0 && !Thread.currentThread().isInterrupted()) {
          if (store == null) {
            store = connect();
            if (store == null) {
              continue;
            }
          }
          String resource = resources.get(ThreadLocalRandom.current().nextInt(resources.size()));
          double kind = ThreadLocalRandom.current().nextDouble();
          if (kind < renewedChance) {
            if (!longHolds.renewed(resource, store)) {
              closeQuietly(store);
              store = null;
            }
            LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(2_000_000));
            continue;
          }
          Lease lease;
          try {
            lease = redlock.acquire(resource, ttl, maxWait);
          } catch (LockTakenException e) {
            count("taken");
            continue;
          } catch (QuorumUnavailableException e) {
            count("unavailable");
            continue;
          }
          boolean storeOk =
              kind < renewedChance + overrunChance
                  ? longHolds.intoValidity(lease, resource, store)
                  : hold(lease, resource, store);
          if (!storeOk) {
            closeQuietly(store);
            store = null;
          }
          // A short think time, so the last holder does not always win the next round.
          LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(2_000_000));
        }
      } catch (RuntimeException | Error e) { // an Error too, or it would end the thread unseen
        count("errors");
        if (firstError == null) {
          firstError = e.toString();
        }
      } finally {
        closeQuietly(store);
      }
    }

    /** Holds one lease; returns false if the store connection broke. */
    private boolean hold(Lease lease, String resource, CounterStore store) {
      long acquiredAt = System.nanoTime();
      long deadline = deadlineOf(lease, acquiredAt);
      count("acquired");
      boolean storeOk = true;
      try {
        if (deadline - acquiredAt <= 0) {
          count("abandoned");
          return true;
        }
        long value = store.read(resource);
        long work = maxWork.toNanos();
        if (work > 0) {
          LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(work));
        }
        if (ThreadLocalRandom.current().nextDouble() < extendChance) {
          if (lease.extend(ttl)) {
            count("extended");
            deadline = deadlineOf(lease, deadline);
          } else {
            count("lost_by_extend");
            long now = System.nanoTime();
            if (now - deadline < 0) {
              deadline = now; // a failed extend loses the lease at once
            }
            return true;
          }
        }
        if (!lease.isValid()) {
          count("abandoned");
          return true;
        }
        store.write(resource, value + 1);
        long writtenAt = System.nanoTime();
        count("increments");
        increments.merge(resource, 1L, Long::sum);
        if (writtenAt - deadline > 0) {
          count("late_writes");
        }
      } catch (IOException e) {
        count("store_errors");
        if (firstError == null) {
          firstError = "counter store: " + e;
        }
        storeOk = false;
      } finally {
        // Recorded before the release, so that a release that throws cannot drop the window.
        long releaseStart = System.nanoTime();
        long validUntil = releaseStart - deadline < 0 ? releaseStart : deadline;
        history.add(new LeaseRecord(client, resource, acquiredAt, validUntil, releaseStart));
        lease.release();
      }
      return storeOk;
    }

    private CounterStore connect() {
      try {
        return CounterStore.connect(counterStore);
      } catch (IOException e) {
        count("store_errors");
        if (firstError == null) {
          firstError = "counter store: " + e;
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        return null;
      }
    }

    private void count(String name) {
      stats.merge(name, 1L, Long::sum);
    }
  }

  /**
   * The lease's deadline on the shared clock: read after its remaining validity, so it is at most a
   * few microseconds late (which only makes the checker stricter). {@code ifExpired} when none is
   * left.
   */
  static long deadlineOf(Lease lease, long ifExpired) {
    long left = lease.remainingValidity().toNanos();
    return left == 0 ? ifExpired : System.nanoTime() + left;
  }

  private static void closeQuietly(CounterStore store) {
    if (store != null) {
      try {
        store.close();
      } catch (IOException e) {
        // the socket is gone either way
      }
    }
  }

  /**
   * What a run did.
   *
   * @param leases every lease granted
   * @param stats per client, the {@link #STATS} counters
   * @param increments per client, per resource, the increments whose {@code SET} succeeded
   * @param errors per client, the first unexpected error, if any
   */
  record Result(
      List<LeaseRecord> leases,
      Map<String, Map<String, Long>> stats,
      Map<String, Map<String, Long>> increments,
      Map<String, String> errors) {

    Result {
      leases = List.copyOf(leases);
      stats = new TreeMap<>(stats);
      increments = new TreeMap<>(increments);
      errors = new TreeMap<>(errors);
    }

    /** A counter summed over all clients. */
    long total(String stat) {
      return stats.values().stream().mapToLong(s -> s.getOrDefault(stat, 0L)).sum();
    }

    /** Successful increments per resource, over all clients. */
    Map<String, Long> incrementsByResource() {
      Map<String, Long> sum = new TreeMap<>();
      increments
          .values()
          .forEach(perClient -> perClient.forEach((r, n) -> sum.merge(r, n, Long::sum)));
      return sum;
    }

    /** The totals, as {@code key=value} words. */
    String totals() {
      StringBuilder line = new StringBuilder();
      for (String stat : STATS) {
        line.append(line.length() == 0 ? "" : " ").append(stat).append('=').append(total(stat));
      }
      return line.toString();
    }

    /** Merges the results of several workers. */
    static Result merge(List<Result> parts) {
      List<LeaseRecord> leases = new ArrayList<>();
      Map<String, Map<String, Long>> stats = new TreeMap<>();
      Map<String, Map<String, Long>> increments = new TreeMap<>();
      Map<String, String> errors = new TreeMap<>();
      for (Result part : parts) {
        leases.addAll(part.leases);
        stats.putAll(part.stats);
        increments.putAll(part.increments);
        errors.putAll(part.errors);
      }
      return new Result(leases, stats, increments, errors);
    }

    /** Writes this result as lines that {@link #parse} reads back. */
    void print(PrintStream out) {
      for (LeaseRecord lease : leases) {
        out.println(lease.toLine());
      }
      stats.forEach(
          (client, counters) -> {
            StringBuilder line = new StringBuilder("STATS ").append(client);
            counters.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
            out.println(line);
          });
      increments.forEach(
          (client, perResource) ->
              perResource.forEach(
                  (resource, n) -> out.println("INCREMENTS " + client + " " + resource + " " + n)));
      errors.forEach((client, error) -> out.println("ERROR " + client + " " + oneLine(error)));
    }

    /** Reads the lines {@link #print} wrote, ignoring any others. */
    static Result parse(List<String> lines) {
      List<LeaseRecord> leases = new ArrayList<>();
      Map<String, Map<String, Long>> stats = new TreeMap<>();
      Map<String, Map<String, Long>> increments = new TreeMap<>();
      Map<String, String> errors = new TreeMap<>();
      for (String line : lines) {
        String[] words = line.strip().split(" ");
        if (LeaseRecord.isLine(line)) {
          leases.add(LeaseRecord.parse(line));
        } else if (words[0].equals("STATS") && words.length >= 2) {
          Map<String, Long> counters = new LinkedHashMap<>();
          for (int i = 2; i < words.length; i++) {
            String[] pair = words[i].split("=", 2);
            counters.put(pair[0], Long.parseLong(pair[1]));
          }
          stats.put(words[1], counters);
        } else if (words[0].equals("INCREMENTS") && words.length == 4) {
          increments
              .computeIfAbsent(words[1], c -> new TreeMap<>())
              .put(words[2], Long.parseLong(words[3]));
        } else if (words[0].equals("ERROR") && words.length >= 3) {
          errors.put(words[1], line.strip().substring(("ERROR " + words[1] + " ").length()));
        }
      }
      return new Result(leases, stats, increments, errors);
    }

    private static String oneLine(String text) {
      return text.replace('\n', ' ').replace('\r', ' ');
    }
  }

  /** Settings of a workload; the defaults suit a 30 s run on a loaded two-core CI machine. */
  static final class Builder {
    private final List<String> nodes;
    private final String counterStore;
    private List<String> clients = List.of("client-0");
    private List<String> resources = List.of("chaos:r0");
    private Duration ttl = Duration.ofSeconds(1);
    private Duration maxWait = Duration.ofMillis(500);
    private Duration nodeTimeout = Duration.ofMillis(100);
    private Duration retryDelay = Duration.ofMillis(20);
    private Duration maxWork = Duration.ofMillis(3);
    private double extendChance = 0.1;
    private double overrunChance;
    private double renewedChance;
    private boolean restartGuard = true;

    private Builder(List<String> nodes, String counterStore) {
      this.nodes = List.copyOf(requireNonNull(nodes, "nodes"));
      this.counterStore = requireNonNull(counterStore, "counterStore");
    }

    /** Clients named {@code prefix0} to {@code prefix(k-1)}. */
    Builder clients(int k, String prefix) {
      List<String> names = new ArrayList<>();
      for (int i = 0; i < k; i++) {
        names.add(prefix + i);
      }
      this.clients = List.copyOf(names);
      return this;
    }

    Builder clients(List<String> names) {
      if (names.isEmpty()) {
        throw new IllegalArgumentException("at least one client");
      }
      this.clients = List.copyOf(names);
      return this;
    }

    Builder resources(List<String> names) {
      if (names.isEmpty()) {
        throw new IllegalArgumentException("at least one resource");
      }
      this.resources = List.copyOf(names);
      return this;
    }

    /** Resources named {@code chaos:r0} to {@code chaos:r(n-1)}. */
    Builder resources(int n) {
      List<String> names = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        names.add("chaos:r" + i);
      }
      this.resources = List.copyOf(names);
      return this;
    }

    Builder ttl(Duration ttl) {
      this.ttl = requireNonNull(ttl, "ttl");
      return this;
    }

    Builder maxWait(Duration maxWait) {
      this.maxWait = requireNonNull(maxWait, "maxWait");
      return this;
    }

    Builder nodeTimeout(Duration nodeTimeout) {
      this.nodeTimeout = requireNonNull(nodeTimeout, "nodeTimeout");
      return this;
    }

    Builder retryDelay(Duration retryDelay) {
      this.retryDelay = requireNonNull(retryDelay, "retryDelay");
      return this;
    }

    /** The longest pause between a holder's read and its write. */
    Builder maxWork(Duration maxWork) {
      this.maxWork = requireNonNull(maxWork, "maxWork");
      return this;
    }

    /** The chance that a holder extends its lease between its read and its write. */
    Builder extendChance(double extendChance) {
      this.extendChance = extendChance;
      return this;
    }

    /**
     * The chance that a hold runs into its validity: increments the counter at once, then keeps the
     * lease until around its deadline (most often past it), so that its window ends at the deadline
     * the library computed rather than at its release.
     */
    Builder overrunChance(double overrunChance) {
      this.overrunChance = overrunChance;
      return this;
    }

    /**
     * The chance that a hold is a renewed one: {@link RedLock#withLock} for one to two TTLs, its
     * window ending at the latest deadline the renewals gave it or at its end.
     */
    Builder renewedChance(double renewedChance) {
      this.renewedChance = renewedChance;
      return this;
    }

    /** Whether the clients' restart guard is on (the default). */
    Builder restartGuard(boolean restartGuard) {
      this.restartGuard = restartGuard;
      return this;
    }

    Workload build() {
      if (overrunChance < 0 || renewedChance < 0 || overrunChance + renewedChance > 1) {
        throw new IllegalArgumentException(
            "overrun and renewed chances out of range: " + overrunChance + ", " + renewedChance);
      }
      return new Workload(this);
    }
  }
}
