package dev.redlock.chaos;

import static dev.redlock.chaos.ProcessChaos.acquire;
import static dev.redlock.chaos.ProcessChaos.firstGrant;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.chaos.ProcessChaos.Holding;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Fencing tokens against the failure no lease can prevent: a holder paused past its validity (a GC
 * pause, SIGSTOP) that wakes up and writes. The guarded store rejects the stale token, while the
 * new holder's writes go through.
 *
 * <p>The masters here share one host's clock, and a token is never below a granting master's clock
 * in microseconds, so later leases would get higher tokens from the clock alone, even with no
 * counter at all. Each test therefore starts from fence counters far above that clock ({@link
 * #SEED}) on a bare majority of the masters: the order the tokens (and so the store) see is then
 * the counters' order, which the clock cannot supply.
 */
class FencingChaosIT {

  private static final int MASTERS = 5;
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  private static final Duration TTL = Duration.ofSeconds(1);

  /**
   * A fence counter far above any master's clock (about 1.76e15 µs in 2026; 8e15 in the 23rd
   * century), as an earlier lease would have stored it: every token above it comes from a counter.
   * Below 2^53, where the fence script's Lua numbers (doubles) still compare exactly.
   */
  static final long SEED = 8_000_000_000_000_000L;

  /** Stores {@link #SEED} as the fence counter of {@code masters}. */
  static void seedFenceCounters(RedisCluster cluster, int... masters) {
    for (int i : masters) {
      cluster.node(i).admin().set("redlock:fence", Long.toString(SEED));
    }
  }

  @Test
  void aHolderPausedPastItsValidityWritesWithAStaleTokenAndIsRejected() throws Exception {
    try (RedisCluster cluster = RedisCluster.start(MASTERS);
        RedisProcess storeProcess = RedisProcess.start();
        RedLock a = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT, true);
        RedLock b = ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT, true)) {
      FencedStore store = new FencedStore(storeProcess.admin());
      String resource = "chaos:fenced-account";
      // The state an earlier holder left: its token stored on a majority, and its last write in
      // the store. Any token the clock alone would give is below it, and the store rejects it.
      seedFenceCounters(cluster, 0, 1, 2);
      assertTrue(store.write(resource, 0, SEED), "the earlier holder's write");

      // A takes the lock, reads, and is paused (a pause hook standing in for GC or SIGSTOP)
      // before its write; the pause outlasts its lease.
      CountDownLatch aRead = new CountDownLatch(1);
      CountDownLatch wakeA = new CountDownLatch(1);
      AtomicLong tokenOfA = new AtomicLong();
      AtomicBoolean aWasValidBeforeThePause = new AtomicBoolean();
      AtomicBoolean staleWriteAccepted = new AtomicBoolean(true);
      Holding[] first = new Holding[1];
      Thread holderA =
          new Thread(
              () -> {
                // Retried: on a starved machine one round can time out on a majority.
                first[0] =
                    firstGrant("A", a, resource, TTL, System.nanoTime() + TTL.toNanos() * 5)
                        .orElseThrow(() -> new AssertionError("A was never granted the lock"));
                tokenOfA.set(first[0].lease.fencingToken());
                long seen = store.read(resource);
                aWasValidBeforeThePause.set(first[0].lease.isValid());
                aRead.countDown();
                try {
                  if (!wakeA.await(30, TimeUnit.SECONDS)) {
                    return;
                  }
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return;
                }
                staleWriteAccepted.set(store.write(resource, seen + 1, tokenOfA.get()));
              },
              "holder-A");
      holderA.start();
      assertTrue(aRead.await(10, TimeUnit.SECONDS), "A acquired and read");

      // B is granted once A's lease has run out, and writes twice with its own token.
      Holding second =
          firstGrant("B", b, resource, TTL, first[0].deadline + TTL.toNanos() * 5)
              .orElseThrow(() -> new AssertionError("B was never granted the lock"));
      long tokenOfB = second.lease.fencingToken();
      boolean firstWriteOfB = store.write(resource, store.read(resource) + 1, tokenOfB);
      boolean secondWriteOfB = store.write(resource, store.read(resource) + 1, tokenOfB);
      second.release();

      wakeA.countDown(); // A wakes up and finishes its read-modify-write with its old token
      holderA.join(TimeUnit.SECONDS.toMillis(10));
      assertFalse(holderA.isAlive(), "A finished");
      first[0].release();

      MutualExclusionChecker.Report report =
          ProcessChaos.checkHolds(
              "fencing: holder A paused past its validity, then writes with its token",
              List.of(first[0].record(), second.record()),
              Map.of("holder_pause", 1L),
              List.of(
                  "A's token " + tokenOfA.get() + ", B's token " + tokenOfB,
                  "B's writes accepted: " + firstWriteOfB + ", " + secondWriteOfB,
                  "A's stale write accepted: " + staleWriteAccepted.get(),
                  "store value "
                      + store.read(resource)
                      + ", highest token "
                      + store.highestToken(resource)));
      report.print(System.out);

      assertAll(
          () -> assertTrue(aWasValidBeforeThePause.get(), "A checked a valid lease, then paused"),
          () -> assertTrue(tokenOfA.get() > SEED, "A's token comes from the counters"),
          () -> assertTrue(tokenOfB > tokenOfA.get(), "B's token is higher than A's"),
          () -> assertTrue(firstWriteOfB && secondWriteOfB, "the new holder's writes succeed"),
          () ->
              assertFalse(staleWriteAccepted.get(), "the paused holder's stale write is rejected"),
          () -> assertEquals(2, store.read(resource), "only B's two increments are in the store"),
          () -> assertEquals(tokenOfB, store.highestToken(resource)),
          () -> assertEquals(0, report.violations(), "the leases themselves never overlapped"));
    }
  }

  @Test
  void tokensRiseAcrossManyClientsAndLeases() throws Exception {
    try (RedisCluster cluster = RedisCluster.start(MASTERS)) {
      seedFenceCounters(cluster, 2, 3, 4);
      List<RedLock> clients =
          List.of(
              ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT, true),
              ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT, true),
              ProcessChaos.redlock(cluster.uris(), NODE_TIMEOUT, true));
      try {
        long previous = SEED;
        for (int i = 0; i < 60; i++) {
          Holding holding = acquire("C" + (i % 3), clients.get(i % 3), "chaos:tokens", TTL);
          long token = holding.lease.fencingToken();
          assertTrue(token > previous, "lease " + i + ": " + token + " after " + previous);
          previous = token;
          holding.release();
        }
      } finally {
        clients.forEach(RedLock::close);
      }
    }
  }
}
