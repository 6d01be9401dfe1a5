package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.LockTakenException;
import dev.redlock.RedLock;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The async-load section (issue 30): the client's own load. {@value #RESOURCES} resources, many
 * waiters of one default RedLock at once ({@link #WAITERS} and ten times that), each holder working
 * {@value #HOLD_MILLIS} ms, then reading its fencing token and releasing: how many were granted and
 * fenced, how many failed and why (the wait ran out behind the others, the client's own queue was
 * full, or anything else), how many times a circuit breaker opened, and the mean hand-off per
 * resource: the time from the start of one holder's release to the next grant on the same resource,
 * averaged over every hand-off. Rows: {@code acquireAsync} futures (each holder's part on a pool
 * thread), blocking {@code acquire} on virtual threads (on a JDK 21 or later; the row says how to
 * run it otherwise), and ten times the waiters on futures. A program that prints figures, not a
 * test: {@code AsyncLoadIT} asserts the counts.
 */
final class AsyncLoadRun {

  /** The resources the waiters share. */
  static final int RESOURCES = 10;

  /** The waiters of the first rows; the last row has ten times as many. */
  static final int WAITERS = 1_000;

  /** How long each holder works before it reads its fencing token. */
  static final int HOLD_MILLIS = 1;

  /** How long each waiter may wait. */
  static final Duration MAX_WAIT = Duration.ofSeconds(60);

  /** What a failure that names the client's own limit says (the transport's refusal). */
  static final String OWN_LIMIT = "this client's own queue to the master is full";

  private AsyncLoadRun() {}

  /** One row's figures. */
  record Result(
      int waiters,
      int granted,
      int fenced,
      Map<String, Integer> failures,
      long breakersOpened,
      long handOffs,
      double meanHandOffMillis,
      double seconds) {

    int failed() {
      return failures.values().stream().mapToInt(Integer::intValue).sum();
    }
  }

  /** Runs every row and prints the table, then each row's failures by kind. */
  static void measure(List<String> uris, Duration nodeTimeout, boolean admit, PrintStream out)
      throws InterruptedException {
    requireNonNull(out, "out");
    out.printf(
        Locale.ROOT,
        "%nAsync load: waiters of one RedLock (defaults, node timeout %d ms) on %d resources, TTL"
            + " %d s, max wait %d s; each holder works %d ms, reads fencingToken(), releases%n",
        nodeTimeout.toMillis(),
        RESOURCES,
        Benchmark.TTL.toSeconds(),
        MAX_WAIT.toSeconds(),
        HOLD_MILLIS);
    out.printf(
        Locale.ROOT,
        "  %-8s %-17s %8s %8s %7s %9s %15s %9s%n",
        "waiters",
        "as",
        "granted",
        "fenced",
        "failed",
        "breakers",
        "mean hand-off",
        "elapsed");
    List<Result> results = new ArrayList<>();
    List<String> names = new ArrayList<>();
    Result futures = row(uris, nodeTimeout, admit, WAITERS, null);
    print(out, "futures", futures);
    results.add(futures);
    names.add(WAITERS + " futures");
    ExecutorService virtual = virtualThreads();
    if (virtual == null) {
      out.printf(
          Locale.ROOT,
          "  %-8s %-17s skipped: needs a JDK 21 or later (this is %s); run the benchmark with"
              + " -Dbench.java=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java%n",
          String.format(Locale.ROOT, "%,d", WAITERS),
          "virtual threads",
          Runtime.version());
    } else {
      try {
        Result threads = row(uris, nodeTimeout, admit, WAITERS, virtual);
        print(out, "virtual threads", threads);
        results.add(threads);
        names.add(WAITERS + " virtual threads");
      } finally {
        virtual.shutdownNow();
      }
    }
    Result tenfold = row(uris, nodeTimeout, admit, 10 * WAITERS, null);
    print(out, "futures", tenfold);
    results.add(tenfold);
    names.add(10 * WAITERS + " futures");
    out.println(
        "  breakers: transitions to OPEN the listener heard; hand-off: from the start of a"
            + " holder's release to the next grant on its resource");
    for (int i = 0; i < results.size(); i++) {
      if (!results.get(i).failures().isEmpty()) {
        out.printf(Locale.ROOT, "  failures of %s, by kind:%n", names.get(i));
        results.get(i).failures().forEach((kind, n) -> out.printf("    %,d x %s%n", n, kind));
      }
    }
  }

  private static void print(PrintStream out, String as, Result r) {
    out.printf(
        Locale.ROOT,
        "  %-8s %-17s %,8d %,8d %,7d %9d %12.1f ms %7.1f s%n",
        String.format(Locale.ROOT, "%,d", r.waiters()),
        as,
        r.granted(),
        r.fenced(),
        r.failed(),
        r.breakersOpened(),
        r.meanHandOffMillis(),
        r.seconds());
  }

  /**
   * One row: {@code waiters} acquisitions at once, by futures ({@code threads} null) or by blocking
   * calls, one per task of {@code threads}.
   */
  static Result row(
      List<String> uris, Duration nodeTimeout, boolean admit, int waiters, ExecutorService threads)
      throws InterruptedException {
    BreakerLog breakers = new BreakerLog();
    Tally tally = new Tally();
    long start = System.nanoTime();
    try (RedLock redlock =
        RedLock.builder().nodes(uris).nodeTimeout(nodeTimeout).listener(breakers).build()) {
      if (admit) {
        redlock.admitFreshNodes();
      }
      start = System.nanoTime();
      List<CompletableFuture<Void>> all = new ArrayList<>(waiters);
      ExecutorService work = threads != null ? null : Executors.newCachedThreadPool();
      try {
        for (int i = 0; i < waiters; i++) {
          int resource = i % RESOURCES;
          String name = "bench:async-load:" + resource;
          if (threads == null) {
            all.add(
                redlock
                    .acquireAsync(name, Benchmark.TTL, MAX_WAIT)
                    .handleAsync(
                        (lease, error) -> {
                          if (error != null) {
                            tally.failed(error);
                          } else {
                            tally.hold(lease, resource);
                          }
                          return null;
                        },
                        work));
          } else {
            all.add(
                CompletableFuture.runAsync(
                    () -> {
                      try {
                        tally.hold(redlock.acquire(name, Benchmark.TTL, MAX_WAIT), resource);
                      } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        tally.failed(e);
                      } catch (RuntimeException e) {
                        tally.failed(e);
                      }
                    },
                    threads));
          }
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
            .get(MAX_WAIT.toSeconds() + 60, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        tally.failed(e);
      } finally {
        if (work != null) {
          work.shutdownNow();
        }
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    long handOffs = tally.handOffs.get();
    return new Result(
        waiters,
        tally.granted.get(),
        tally.fenced.get(),
        new TreeMap<>(tally.failures),
        breakers.openedBefore(System.nanoTime()),
        handOffs,
        handOffs == 0 ? Double.NaN : tally.handOffNanos.get() / 1e6 / handOffs,
        seconds);
  }

  /** Virtual threads, one per task, on a JDK 21 or later (by reflection: built for 17); or null. */
  private static ExecutorService virtualThreads() {
    try {
      return (ExecutorService)
          Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  /** What happened to a row's waiters; thread-safe. */
  private static final class Tally {
    final AtomicInteger granted = new AtomicInteger();
    final AtomicInteger fenced = new AtomicInteger();
    final Map<String, Integer> failures = new ConcurrentHashMap<>();
    final AtomicLongArray releasedAt = new AtomicLongArray(RESOURCES); // 0: none yet
    final AtomicLong handOffs = new AtomicLong();
    final AtomicLong handOffNanos = new AtomicLong();

    /** The holder's part: the hand-off, 1 ms of work, the fencing token, the release. */
    void hold(Lease lease, int resource) {
      long grantedAt = System.nanoTime();
      granted.incrementAndGet();
      long released = releasedAt.get(resource);
      if (released != 0) {
        handOffs.incrementAndGet();
        handOffNanos.addAndGet(grantedAt - released);
      }
      try {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(HOLD_MILLIS));
        lease.fencingToken();
        fenced.incrementAndGet();
      } catch (RuntimeException e) {
        failed(e);
      } finally {
        releasedAt.set(resource, System.nanoTime());
        lease.release();
      }
    }

    /** Counts a failure by its kind: the client's own limit, the wait run out, or its message. */
    void failed(Throwable e) {
      Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      String message = String.valueOf(cause.getMessage());
      String kind;
      if (cause instanceof LockTakenException && message.contains(OWN_LIMIT)) {
        kind =
            "LockTakenException: the wait ran out while others held the lock, naming the client's"
                + " own limit";
      } else if (cause instanceof LockTakenException) {
        kind = "LockTakenException: the wait ran out while others held the lock";
      } else if (message.contains(OWN_LIMIT)) {
        kind = cause.getClass().getSimpleName() + " naming the client's own limit";
      } else {
        // What failed ("could not store the fencing token"), and which outcomes the masters gave.
        int of = message.indexOf(" of '");
        String what =
            of < 0
                ? message.substring(0, Math.min(80, message.length()))
                : message.substring(0, of);
        StringBuilder seen = new StringBuilder();
        for (String outcome : List.of("TIMED_OUT", "PENDING", "circuit breaker open", "FAILED")) {
          if (message.contains(outcome)) {
            seen.append(seen.length() == 0 ? " (outcomes: " : ", ").append(outcome);
          }
        }
        kind =
            cause.getClass().getSimpleName() + ": " + what + (seen.length() == 0 ? "" : seen + ")");
      }
      failures.merge(kind, 1, Integer::sum);
    }
  }
}
