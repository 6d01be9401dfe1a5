package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * After a release that some waiting client was told of, this RedLock's next wait for the same
 * resource lets that waiter go first: it pauses before its first round, blocking and asynchronous
 * alike, for four rounds' time; a try does not wait. On scripted masters whose rounds take 20 ms of
 * the fake clock, so that the pause is 80 ms of real time: only a lower bound is asserted, three
 * rounds, far above what a round on scripted masters costs (about 1 ms; 22 ms for an asynchronous
 * one on a loaded machine).
 */
class HandOffPauseTest {

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration ROUND = Duration.ofMillis(20);
  private static final long LEAST_PAUSE_NANOS = 3 * ROUND.toNanos(); // of the pause's four

  private final FakeCluster cluster = new FakeCluster();
  private final List<FakeNode> nodes = cluster.nodes;
  private final RedLock redlock =
      cluster.builder(3).circuitBreakers(false).retryDelay(Duration.ofSeconds(1)).build();

  @AfterEach
  void close() {
    redlock.close();
  }

  @Test
  void aBlockingWaitAfterAReleaseWaitersHeardPausesFirst() throws Exception {
    releaseHeardByWaiters();
    long start = System.nanoTime();
    redlock.acquire("r", TTL, WAIT).release();
    long took = System.nanoTime() - start;
    assertTrue(took >= LEAST_PAUSE_NANOS, "paused " + took + " ns before its first round");
  }

  @Test
  void anAsyncWaitAfterAReleaseWaitersHeardPausesFirst() throws Exception {
    releaseHeardByWaiters();
    long start = System.nanoTime();
    redlock.acquireAsync("r", TTL, WAIT).get(10, TimeUnit.SECONDS).release();
    long took = System.nanoTime() - start;
    assertTrue(took >= LEAST_PAUSE_NANOS, "paused " + took + " ns before its first round");
  }

  @Test
  void aTryAfterAReleaseWaitersHeardTakesTheLockAtOnce() {
    releaseHeardByWaiters();
    assertTrue(redlock.tryAcquire("r", TTL).isPresent(), "a try does not wait for anyone");
  }

  /**
   * Makes each round take {@link #ROUND} of the fake clock, long enough for the moving average of
   * round times to settle on it; then holds {@code r} and releases it, each master saying a waiting
   * client was told.
   */
  private void releaseHeardByWaiters() {
    for (FakeNode node : nodes) {
      node.latency = ROUND.dividedBy(nodes.size()); // each master's answer moves the clock on
    }
    for (int i = 0; i < 60; i++) {
      redlock.tryAcquire("warm-up", TTL).orElseThrow().release();
    }
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    for (FakeNode node : nodes) {
      node.waitersTold = true;
    }
    lease.release();
  }
}
