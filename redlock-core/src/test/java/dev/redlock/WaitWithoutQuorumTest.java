package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.testkit.Poll;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A wait that finds no quorum says so at WARN, once per 10 s of the RedLock's clock at most, naming
 * how many masters answered and how many must grant; a wait for a lock held by others says nothing.
 * On scripted masters and a fake clock; the log is slf4j-simple's, on System.err.
 */
class WaitWithoutQuorumTest {

  private static final Duration TTL = Duration.ofSeconds(1);
  private static final Pattern STILL_WAITING = Pattern.compile("WARN .*still waiting for 'r'");

  private final FakeCluster cluster = new FakeCluster();
  @RegisterExtension final CapturedLog captured = new CapturedLog();
  private RedLock redlock;

  @AfterEach
  void close() {
    if (redlock != null) {
      redlock.close();
    }
  }

  private String log() {
    return captured.text();
  }

  private int lines() {
    Matcher m = STILL_WAITING.matcher(log());
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }

  /**
   * Waits in lock() on another thread until the log has {@code lines}, then closes the RedLock,
   * which ends the wait; returns how long the wait took on the RedLock's clock.
   */
  private long waitInLockUntil(int lines) throws Exception {
    LeaseLock lock = redlock.newLock("r", TTL);
    CompletableFuture<Throwable> ended = new CompletableFuture<>();
    Thread waiting =
        new Thread(
            () -> {
              try {
                lock.lock();
                ended.complete(null);
              } catch (RuntimeException e) {
                ended.complete(e);
              }
            });
    long start = cluster.ticker.read();
    waiting.start();
    Poll.until(Duration.ofSeconds(20), () -> lines() >= lines, this::log);
    long elapsed = cluster.ticker.read() - start;
    redlock.close();
    assertTrue(
        ended.get(5, TimeUnit.SECONDS) instanceof IllegalStateException, "closed while waiting");
    return elapsed;
  }

  @Test
  void anAsynchronousWaitWithoutAQuorumWarnsToo() throws Exception {
    redlock = cluster.builder(3).circuitBreakers(false).retryDelay(Duration.ofMillis(1)).build();
    for (FakeNode node : cluster.nodes) {
      node.onSet = FakeNode.Answer.FAIL;
    }
    cluster.ticker.autoAdvance(Duration.ofMillis(5));
    CompletableFuture<Lease> waiting = redlock.acquireAsync("r", TTL, Duration.ofHours(1));
    Poll.until(Duration.ofSeconds(20), () -> lines() >= 1, this::log);
    redlock.close();
    assertTrue(
        log().contains("still waiting for 'r' after 10 s (of 3600 s): 0 of 3 masters answered"),
        log());
    assertTrue(
        waiting.handle((lease, error) -> error).get(5, TimeUnit.SECONDS) != null,
        "closed while waiting: no lease");
  }

  @Test
  void anAcquireWithoutAQuorumThrowsWithTheMastersCountsAndWhy() {
    redlock = cluster.builder(3).circuitBreakers(false).build();
    for (FakeNode node : cluster.nodes) {
      node.onSet = FakeNode.Answer.FAIL;
    }
    QuorumUnavailableException e =
        assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", TTL));
    assertTrue(
        e.getMessage().contains("no quorum (2 of 3 masters must grant, 0 did)"), e.getMessage());
    assertTrue(e.getMessage().contains("refused"), "each master's failure: " + e.getMessage());
  }

  @Test
  void lockWithoutAQuorumWarnsEveryTenSecondsNamingTheCounts() throws Exception {
    redlock = cluster.builder(3).circuitBreakers(false).retryDelay(Duration.ofMillis(1)).build();
    for (FakeNode node : cluster.nodes) {
      node.onSet = FakeNode.Answer.FAIL;
    }
    cluster.ticker.autoAdvance(Duration.ofMillis(5));
    long elapsed = waitInLockUntil(3);
    String log = log();
    assertTrue(
        log.contains(
            "still waiting for 'r' after 10 s (no time limit): 0 of 3 masters answered, 2 must"
                + " grant; no quorum (2 of 3 masters must grant, 0 did); "),
        log);
    assertTrue(log.contains(": refused)"), "each master's failure: " + log);
    // Once per 10 s of the clock at most: 3 lines take at least 30 s of it.
    assertTrue(elapsed >= TimeUnit.SECONDS.toNanos(30), elapsed / 1_000_000 + " ms: " + log);
  }

  @Test
  void anInterruptEndsAnInterruptibleWaitWhoseEveryPauseIsOverAtOnce() throws Exception {
    // Pauses of at most 1.5 ms on a clock that moves 5 ms at every read: each pause is over
    // before it is checked, as a pause cut short by a wake-up is; the interrupt must still count.
    redlock = cluster.builder(3).circuitBreakers(false).retryDelay(Duration.ofMillis(1)).build();
    for (FakeNode node : cluster.nodes) {
      node.onSet = FakeNode.Answer.TAKEN;
    }
    cluster.ticker.autoAdvance(Duration.ofMillis(5));
    LeaseLock lock = redlock.newLock("r", TTL);
    CompletableFuture<Throwable> ended = new CompletableFuture<>();
    Thread waiting =
        new Thread(
            () -> {
              try {
                lock.lockInterruptibly();
                ended.complete(null);
              } catch (InterruptedException | RuntimeException e) {
                ended.complete(e);
              }
            });
    waiting.start();
    Poll.until(
        Duration.ofSeconds(5),
        () -> cluster.nodes.get(0).received().size() > 10,
        () -> "rounds while the lock is held elsewhere");
    waiting.interrupt();
    assertTrue(
        ended.get(5, TimeUnit.SECONDS) instanceof InterruptedException,
        "lockInterruptibly() ended by the interrupt");
  }

  @Test
  void aLockHeldByOthersIsNoStall() throws Exception {
    redlock = cluster.builder(3).circuitBreakers(false).retryDelay(Duration.ofMillis(1)).build();
    for (FakeNode node : cluster.nodes) {
      node.onSet = FakeNode.Answer.TAKEN;
    }
    cluster.ticker.autoAdvance(Duration.ofMillis(5));
    CompletableFuture<Lease> waiting = redlock.acquireAsync("r", TTL, Duration.ofSeconds(60));
    Poll.until(Duration.ofSeconds(20), waiting::isDone, () -> "the wait ran out");
    assertTrue(waiting.isCompletedExceptionally());
    assertEquals(0, lines(), log());
  }
}
