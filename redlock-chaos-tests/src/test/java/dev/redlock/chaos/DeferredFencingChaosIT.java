package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.LeaseLostException;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Fencing tokens are stored when first asked for, not during the acquire. Under restarts of a
 * minority of masters without persistence (counters lost there), every lease that reads its token —
 * at once, after some work, or just before its release — must still get one greater than every
 * earlier lease's, whether or not those earlier leases read theirs.
 */
class DeferredFencingChaosIT {

  private static final Duration TTL = Duration.ofMillis(800);
  private static final Duration RUN = Duration.ofSeconds(8);

  /**
   * How long the run may go on past {@link #RUN} to collect {@link #ENOUGH_TOKENS} tokens (of which
   * {@link #ENOUGH_DEFERRED} deferred): a starved CI machine reads fewer per second.
   */
  private static final Duration MAX_RUN = Duration.ofSeconds(40);

  private static final int ENOUGH_TOKENS = 50;
  private static final int ENOUGH_DEFERRED = 20;

  record Token(long acquiredAt, long token, String when) {}

  @Test
  void aDeferredTokenExceedsEveryEarlierLeasesTokenUnderMinorityRestarts() throws Exception {
    try (RedisCluster cluster = RedisCluster.start(5)) {
      List<RedLock> clients = new ArrayList<>();
      for (int c = 0; c < 3; c++) {
        RedLock redlock =
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(Duration.ofMillis(100))
                .maxLeaseTime(TTL) // the restart guard keeps a restarted master out this long
                .retryDelay(Duration.ofMillis(5))
                .build();
        redlock.admitFreshNodes();
        clients.add(redlock);
      }
      List<Token> tokens = Collections.synchronizedList(new ArrayList<>());
      AtomicInteger unread = new AtomicInteger();
      AtomicInteger storeFailures = new AtomicInteger();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      long startedAt = System.nanoTime();
      AtomicBoolean running = new AtomicBoolean(true);
      List<Thread> threads = new ArrayList<>();
      for (RedLock redlock : clients) {
        Thread thread =
            new Thread(
                () -> {
                  try {
                    while (running.get()) {
                      hold(redlock, tokens, unread, storeFailures);
                    }
                  } catch (RuntimeException | Error e) {
                    failure.compareAndSet(null, e);
                  }
                });
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
      }
      // The nemesis: kill one or two masters at a time and restart them empty shortly after.
      Random random = new Random(7);
      int restarts = 0;
      while (keepGoing(System.nanoTime() - startedAt, tokens)) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(300)); // the fault schedule
        int first = random.nextInt(5);
        List<Integer> victims = new ArrayList<>(List.of(first));
        if (random.nextBoolean()) {
          victims.add((first + 1 + random.nextInt(4)) % 5);
        }
        for (int v : victims) {
          cluster.node(v).kill();
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
        for (int v : victims) {
          cluster.node(v).restart();
          restarts++;
        }
      }
      running.set(false);
      for (Thread thread : threads) {
        thread.join(TimeUnit.SECONDS.toMillis(30));
      }
      clients.forEach(RedLock::close);
      if (failure.get() != null) {
        throw new AssertionError("a client failed", failure.get());
      }

      List<Token> sorted = new ArrayList<>(tokens);
      sorted.sort(Comparator.comparingLong(Token::acquiredAt));
      int falls = 0;
      for (int i = 1; i < sorted.size(); i++) {
        if (sorted.get(i).token() <= sorted.get(i - 1).token()) {
          falls++;
          System.out.println("FENCE fell: " + sorted.get(i - 1) + " then " + sorted.get(i));
        }
      }
      long late = sorted.stream().filter(t -> !t.when().equals("at once")).count();
      System.out.printf(
          "FENCE %d tokens read (%d after work or at release), %d leases never read theirs,"
              + " %d stores refused, %d master restarts: %d tokens did not rise%n",
          sorted.size(), late, unread.get(), storeFailures.get(), restarts, falls);
      assertTrue(
          sorted.size() > ENOUGH_TOKENS, "enough tokens to mean something: " + sorted.size());
      assertTrue(late > ENOUGH_DEFERRED, "enough deferred reads: " + late);
      assertTrue(restarts >= 10, "the masters restarted: " + restarts);
      assertEquals(0, falls, "every token rose over every earlier lease's");
    }
  }

  /**
   * Whether the run goes on: at least {@link #RUN}, then until enough tokens were read, at most
   * {@link #MAX_RUN}.
   */
  private static boolean keepGoing(long elapsedNanos, List<Token> tokens) {
    if (elapsedNanos < RUN.toNanos()) {
      return true;
    }
    if (elapsedNanos >= MAX_RUN.toNanos()) {
      return false;
    }
    synchronized (tokens) {
      long deferred = tokens.stream().filter(t -> !t.when().equals("at once")).count();
      return tokens.size() <= ENOUGH_TOKENS || deferred <= ENOUGH_DEFERRED;
    }
  }

  /** One lease: its token read at once, after some work, just before release, or never. */
  private static void hold(
      RedLock redlock, List<Token> tokens, AtomicInteger unread, AtomicInteger storeFailures) {
    Optional<Lease> acquired;
    try {
      acquired = redlock.tryAcquire("fenced", TTL);
    } catch (QuorumUnavailableException e) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
      return;
    }
    if (acquired.isEmpty()) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
      return;
    }
    Lease lease = acquired.get();
    long acquiredAt = System.nanoTime();
    int choice = ThreadLocalRandom.current().nextInt(4);
    try {
      if (choice == 0) {
        tokens.add(new Token(acquiredAt, lease.fencingToken(), "at once"));
      } else if (choice == 1 || choice == 2) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(choice == 1 ? 20 : 60)); // work
        if (lease.isValid()) {
          tokens.add(
              new Token(
                  acquiredAt, lease.fencingToken(), choice == 1 ? "after work" : "at release"));
        }
      } else {
        unread.incrementAndGet();
      }
    } catch (QuorumUnavailableException | LeaseLostException e) {
      storeFailures.incrementAndGet(); // never returned, so never used: nothing to check
    } finally {
      lease.release();
    }
  }
}
