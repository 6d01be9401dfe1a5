package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.testkit.Poll;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A wait's interrupts, kept or never made up, and what {@code close()} ends: on scripted masters
 * and a fake clock, so the moment a pause is over is set by the test, not by the machine's speed.
 */
class WaitAndCloseTest {

  private static final Duration TTL = Duration.ofSeconds(10);

  private final FakeCluster cluster = new FakeCluster();
  private final List<FakeNode> nodes = cluster.nodes;
  private RedLock redlock;

  @AfterEach
  void close() {
    Thread.interrupted(); // a failed test must not leave the runner's thread interrupted
    if (redlock != null) {
      redlock.close();
    }
  }

  /** The next round fails: master 0 grants, the others refuse; its cleanup releases master 0. */
  private void takenOnce() {
    for (FakeNode node : nodes) {
      node.nextSets.add(node == nodes.get(0) ? Answer.GRANT : Answer.TAKEN);
    }
  }

  private long releasesSent(int node) {
    return nodes.get(node).received().stream().filter(s -> s.startsWith("RELEASE")).count();
  }

  /**
   * An interrupt that comes while {@code lock()} pauses between rounds ends the pause's park but
   * not the wait; once the pause is over (here the fake clock is past it when the interrupt comes)
   * the wait goes on, and the lock is taken with the interrupt still pending for the caller.
   */
  @Test
  void anInterruptDuringTheLastMomentOfAnUninterruptiblePauseIsKept() throws Exception {
    redlock = cluster.builder(3).circuitBreakers(false).retryDelay(Duration.ofSeconds(10)).build();
    takenOnce();
    Thread caller = Thread.currentThread();
    CompletableFuture<Void> interrupting =
        CompletableFuture.runAsync(
            () -> {
              // Parked in the pause (5 to 15 s on the real clock): the first round is over.
              Poll.until(
                  Duration.ofSeconds(10),
                  () -> releasesSent(0) == 1 && caller.getState() == Thread.State.TIMED_WAITING,
                  () -> "the caller never paused: " + caller.getState());
              cluster.ticker.advance(Duration.ofSeconds(20)); // the pause is over on its clock
              caller.interrupt();
            });
    LeaseLock lock = redlock.newLock("r", TTL);
    lock.lock();
    boolean kept = Thread.interrupted();
    interrupting.join();
    assertTrue(kept, "lock() is not interruptible: the interrupt is kept for the caller");
    assertTrue(lock.lease().isValid());
    assertEquals(2, nodes.get(0).tokens().size(), "taken in the second round");
    lock.unlock();
  }

  /**
   * A pause already over when it starts (the fake clock moves 2 ms at each read, more than the
   * longest pause of a 1 ms retry delay) returns at once, and says no interrupt came.
   */
  @Test
  void aPauseOverAtOnceMakesUpNoInterrupt() throws Exception {
    redlock = cluster.builder(3).circuitBreakers(false).retryDelay(Duration.ofMillis(1)).build();
    takenOnce();
    cluster.ticker.autoAdvance(Duration.ofMillis(2));
    Lease lease = redlock.acquire("r", TTL, Duration.ofSeconds(30));
    assertFalse(Thread.interrupted(), "no interrupt made up by the pause");
    assertEquals(2, nodes.get(0).tokens().size(), "taken in the second round");
    lease.release();
  }

  /**
   * {@code close()} ends every thread the RedLock started: the event thread, the renewer, the
   * asynchronous API's timer and the releases' retry thread. Counted by name among the threads that
   * were not there before the RedLock was built.
   */
  @Test
  void closeEndsEveryThreadTheRedLockStarted() throws Exception {
    Set<Thread> before = new HashSet<>(Thread.getAllStackTraces().keySet());
    redlock =
        cluster
            .builder(3)
            .circuitBreakers(false)
            .listener(new RedLockListener() {}) // an event thread
            .build();
    LeaseLock lock = redlock.newLock("held", TTL);
    lock.lock(); // renewed while held: the renewer
    redlock.tryAcquireAsync("async", TTL).join().orElseThrow().release(); // the async timer
    nodes.get(2).nextReleases.add(Answer.FAIL); // sent again: the retry thread
    redlock.tryAcquire("retried", TTL).orElseThrow().release();
    Poll.until(
        Duration.ofSeconds(5),
        () -> started(before).size() >= 4,
        () -> "the RedLock's threads: " + started(before));

    redlock.close();
    redlock = null;
    Poll.until(
        Duration.ofSeconds(3), // under the 5 s an idle timer's thread outlives its last task
        () -> started(before).isEmpty(),
        () -> "still alive after close(): " + started(before));
  }

  /** The library's threads alive now that were not in {@code before}, by name. */
  private static Set<String> started(Set<Thread> before) {
    Set<String> names = new HashSet<>();
    for (Thread thread : Thread.getAllStackTraces().keySet()) {
      if (!before.contains(thread) && thread.isAlive() && thread.getName().startsWith("redlock-")) {
        names.add(thread.getName());
      }
    }
    return names;
  }

  @Test
  void aClosedRedLockStartsNoAsynchronousAcquisition() {
    redlock = cluster.builder(3).build();
    redlock.close();
    assertThrows(IllegalStateException.class, () -> redlock.tryAcquireAsync("r", TTL));
    assertTrue(nodes.get(0).tokens().isEmpty(), "nothing sent");
  }

  @Test
  void describesItsMastersAndQuorum() {
    redlock = cluster.builder(3).build();
    assertTrue(
        redlock.toString().contains("127.0.0.1:7000, 127.0.0.1:7001, 127.0.0.1:7002")
            && redlock.toString().contains("quorum=2"),
        redlock.toString());
  }
}
