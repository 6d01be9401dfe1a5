package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.LeaseLostException;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.testkit.Poll;
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
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Fencing tokens are stored when first asked for, not during the acquire. Under restarts of a
 * minority of masters without persistence (counters lost there), every lease that reads its token —
 * at once, after some work, or just before its release — must still get one greater than every
 * earlier lease's, whether or not those earlier leases read theirs.
 *
 * <p>The masters share one host's clock, and a token is never below a granting master's clock in
 * microseconds: leases milliseconds apart would get rising tokens from the clock alone. So the run
 * starts from fence counters far above that clock ({@link FencingChaosIT#SEED}) on a bare majority,
 * and every token must exceed them: a token that rises here rises because the counters carried it
 * across the restarts, not because time passed.
 *
 * <p>What the counters can carry is bounded by the Redlock assumption: a majority keeps the latest
 * stored token. Restarting masters one round after another with no token stored in between would,
 * over a few rounds, empty every master that held it (a majority losing its data, against which
 * only the clock defends, as the README says). So the nemesis starts its next round only once a
 * token was read, and so stored on a majority, after its last restart.
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
  private static final int ENOUGH_RESTARTS = 10;

  /** A token read: when its lease was acquired, when the read returned, and how it was read. */
  record Token(long acquiredAt, long readAt, long token, String when) {}

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
      FencingChaosIT.seedFenceCounters(cluster, 0, 1, 2);
      List<Token> tokens = Collections.synchronizedList(new ArrayList<>());
      AtomicLong latestRead = new AtomicLong(System.nanoTime());
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
                      hold(redlock, tokens, latestRead, unread, storeFailures);
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
      while (keepGoing(System.nanoTime() - startedAt, tokens, restarts)) {
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
        long restartedAt = System.nanoTime();
        Poll.until(
            MAX_RUN,
            () -> latestRead.get() - restartedAt > 0 || failure.get() != null,
            () -> "a token read after restarting masters " + victims);
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
      long belowSeed = sorted.stream().filter(t -> t.token() <= FencingChaosIT.SEED).count();
      sorted.stream()
          .filter(t -> t.token() <= FencingChaosIT.SEED)
          .findFirst()
          .ifPresent(t -> System.out.println("FENCE not above the seeded counters: " + t));
      int falls = 0;
      for (int i = 1; i < sorted.size(); i++) {
        if (sorted.get(i).token() <= sorted.get(i - 1).token() && ++falls <= 5) {
          System.out.println("FENCE fell: " + sorted.get(i - 1) + " then " + sorted.get(i));
        }
      }
      long late = sorted.stream().filter(t -> !t.when().equals("at once")).count();
      System.out.printf(
          "FENCE %d tokens read (%d after work or at release), %d leases never read theirs,"
              + " %d stores refused, %d master restarts: %d tokens did not rise, %d not above the"
              + " seeded counters%n",
          sorted.size(), late, unread.get(), storeFailures.get(), restarts, falls, belowSeed);
      assertTrue(
          sorted.size() > ENOUGH_TOKENS, "enough tokens to mean something: " + sorted.size());
      assertTrue(late > ENOUGH_DEFERRED, "enough deferred reads: " + late);
      assertTrue(restarts >= ENOUGH_RESTARTS, "the masters restarted: " + restarts);
      assertEquals(0, belowSeed, "every token came from the counters, above the seed");
      assertEquals(0, falls, "every token rose over every earlier lease's");
    }
  }

  /**
   * Whether the run goes on: at least {@link #RUN}, then until enough tokens were read and enough
   * masters restarted, at most {@link #MAX_RUN}.
   */
  private static boolean keepGoing(long elapsedNanos, List<Token> tokens, int restarts) {
    if (elapsedNanos < RUN.toNanos()) {
      return true;
    }
    if (elapsedNanos >= MAX_RUN.toNanos()) {
      return false;
    }
    synchronized (tokens) {
      long deferred = tokens.stream().filter(t -> !t.when().equals("at once")).count();
      return tokens.size() <= ENOUGH_TOKENS
          || deferred <= ENOUGH_DEFERRED
          || restarts < ENOUGH_RESTARTS;
    }
  }

  /** One lease: its token read at once, after some work, just before release, or never. */
  private static void hold(
      RedLock redlock,
      List<Token> tokens,
      AtomicLong latestRead,
      AtomicInteger unread,
      AtomicInteger storeFailures) {
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
        read(lease, acquiredAt, "at once", tokens, latestRead);
      } else if (choice == 1 || choice == 2) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(choice == 1 ? 20 : 60)); // work
        if (lease.isValid()) {
          read(lease, acquiredAt, choice == 1 ? "after work" : "at release", tokens, latestRead);
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

  /** Reads the lease's token (storing it on a majority) and records it. */
  private static void read(
      Lease lease, long acquiredAt, String when, List<Token> tokens, AtomicLong latestRead) {
    long token = lease.fencingToken();
    long readAt = System.nanoTime();
    tokens.add(new Token(acquiredAt, readAt, token, when));
    latestRead.accumulateAndGet(readAt, (a, b) -> b - a > 0 ? b : a);
  }
}
