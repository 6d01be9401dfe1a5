package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.RedLocks;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What the selector's threads survive: an error thrown by one link's code drops that link only, and
 * a loop thread that dies is replaced; the RedLock keeps granting and its listener hears of it.
 */
class SelectorFailureIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(200);
  private static final Duration TTL = Duration.ofSeconds(10);

  /** The internal errors the listener heard, as "where: message". */
  private final List<String> internalErrors = Collections.synchronizedList(new ArrayList<>());

  private final RedLockListener listener =
      new RedLockListener() {
        @Override
        public void internalError(String where, Throwable error) {
          internalErrors.add(where + ": " + error.getMessage());
        }
      };

  private final AtomicInteger resources = new AtomicInteger();

  private static final Set<Status> ANSWERED = EnumSet.of(Status.GRANTED, Status.TAKEN, Status.GONE);

  /** Where a link's code throws. */
  enum Part {
    HANDLER,
    TASK,
    TIMER,
    WATCH
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Part.class)
  void anErrorInOneLinksCodeDropsOnlyThatLinkWhichReconnectsWhileTheOthersKeepGranting(
      Part part, RedisCluster cluster) throws Exception {
    try (RedLock redlock = redlock(cluster)) {
      SelectorLoop loop = RedLocks.selectorLoop(redlock);
      String loopThread = loop.toString();
      long[] before = connectionsReceived(cluster);
      RedisProcess broken = cluster.node(0);
      String link = "SelectorLink{" + broken.host() + ":" + broken.port() + "}";

      throwIn(part, loop, link);
      // The round that follows is granted by the two other masters whatever became of the first.
      assertTrue(tryAcquire(redlock).isPresent(), "granted by the other masters");
      Poll.until("the listener hearing of the error", () -> !internalErrors.isEmpty());
      String expected = "I/O " + part.name().toLowerCase() + " of " + link + ": thrown by the test";
      assertEquals(List.of(expected), internalErrors);

      Poll.until("the first master granting again", () -> everyMasterAnswers(redlock));
      for (int i = 0; i < 20; i++) {
        assertTrue(everyMasterAnswers(redlock), "every master grants round " + i);
      }
      long[] after = connectionsReceived(cluster);
      assertEquals(before[0] + 1, after[0], "the broken link was opened again, once");
      assertEquals(before[1], after[1], "the second master's link was left alone");
      assertEquals(before[2], after[2], "the third master's link was left alone");
      assertEquals(loopThread, loop.toString(), "the loop's thread went on");
      assertEquals(1, internalErrors.size(), "told once: " + internalErrors);
    }
  }

  @Test
  void aLoopThreadThatDiesIsReplacedOnTheSameSelectorWhileCallersKeepGettingLeases(
      RedisCluster cluster) throws Exception {
    RedLock redlock = redlock(cluster);
    SelectorLoop loop = RedLocks.selectorLoop(redlock);
    Thread dying = thread(loop);
    long[] before = connectionsReceived(cluster);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger granted = new AtomicInteger();
    ExecutorService callers = Executors.newFixedThreadPool(4);
    List<Future<Long>> slowest = new ArrayList<>();
    try {
      for (int t = 0; t < 4; t++) {
        slowest.add(callers.submit(() -> acquireUntil(redlock, stop, granted)));
      }
      Poll.until("rounds granted before", () -> granted.get() >= 50);
      loop.failThreadForTest(new Error("killed by the test"));
      Poll.until("the listener hearing of the takeover", () -> !internalErrors.isEmpty());
      assertEquals(
          List.of("I/O thread " + dying.getName() + ": killed by the test"), internalErrors);
      Poll.until("the dying thread ending", () -> !dying.isAlive());
      Thread next = thread(loop);
      assertNotEquals(dying, next);
      assertTrue(next.isAlive(), next + " took over");

      int then = granted.get();
      Poll.until("rounds granted after the takeover", () -> granted.get() >= then + 200);
      stop.set(true);
      for (Future<Long> caller : slowest) {
        long nanos = caller.get(10, TimeUnit.SECONDS);
        assertTrue(
            nanos < TimeUnit.SECONDS.toNanos(2),
            "no caller waited beyond its round: " + TimeUnit.NANOSECONDS.toMillis(nanos) + " ms");
      }
      for (int i = 0; i < 20; i++) {
        assertTrue(everyMasterAnswers(redlock), "every master grants round " + i);
      }
      long[] after = connectionsReceived(cluster);
      for (int i = 0; i < 3; i++) {
        assertEquals(before[i], after[i], "the same selector: master " + i + "'s link was kept");
      }

      redlock.close();
      assertFalse(next.isAlive(), "close() stopped the thread that took over");
    } finally {
      stop.set(true);
      callers.shutdownNow();
      redlock.close();
    }
  }

  @Test
  void aLoopThreadWhoseSelectorFailedIsReplacedOnAFreshSelectorAndEveryMasterReconnects(
      RedisCluster cluster) throws Exception {
    RedLock redlock = redlock(cluster);
    try {
      SelectorLoop loop = RedLocks.selectorLoop(redlock);
      Thread dying = thread(loop);
      long[] before = connectionsReceived(cluster);
      loop.failThreadForTest(new IOException("select failed, says the test"));
      Poll.until("the listener hearing of the takeover", () -> !internalErrors.isEmpty());
      assertEquals(
          List.of("I/O thread " + dying.getName() + ": select failed, says the test"),
          internalErrors);

      Poll.until("every master granting again", () -> everyMasterAnswers(redlock));
      for (int i = 0; i < 20; i++) {
        assertTrue(everyMasterAnswers(redlock), "every master grants round " + i);
      }
      long[] after = connectionsReceived(cluster);
      for (int i = 0; i < 3; i++) {
        assertEquals(before[i] + 1, after[i], "master " + i + "'s link opened again, once");
      }
      Thread next = thread(loop);
      assertNotEquals(dying, next);
      redlock.close();
      assertFalse(next.isAlive(), "close() stopped the thread that took over");
    } finally {
      redlock.close();
    }
  }

  private RedLock redlock(RedisCluster cluster) {
    RedLock redlock =
        RedLocks.admitted(
            RedLocks.transport( // whatever the build's transport property
                    RedLock.builder()
                        .nodes(cluster.uris())
                        .nodeTimeout(NODE_TIMEOUT)
                        .listener(listener),
                    Transport.SELECTOR)
                .build());
    assertTrue(everyMasterAnswers(redlock), "every master grants at first");
    return redlock;
  }

  /** Makes the code of {@code link} (named as its toString) throw, in {@code part}. */
  private static void throwIn(Part part, SelectorLoop loop, String link) throws Exception {
    CompletableFuture<Void> armed = new CompletableFuture<>();
    loop.execute(
        () -> {
          try {
            SelectionKey key = keyOf(loop, link);
            SelectorLoop.Handler owner = (SelectorLoop.Handler) key.attachment();
            switch (part) {
              case HANDLER -> key.attach(new Throwing(owner)); // throws when its replies come
              case TASK -> loop.execute(owner, Throwing::fail);
              case TIMER -> loop.schedule(owner, 0, Throwing::fail);
              case WATCH -> loop.watch(new Throwing(owner));
            }
            armed.complete(null);
          } catch (RuntimeException | AssertionError e) {
            armed.completeExceptionally(e);
          }
        });
    armed.get(5, TimeUnit.SECONDS);
  }

  private static SelectionKey keyOf(SelectorLoop loop, String link) {
    for (SelectionKey key : loop.keysForTest()) {
      if (key.isValid() && String.valueOf(key.attachment()).equals(link)) {
        return key;
      }
    }
    throw new AssertionError("no key of " + link);
  }

  /** Stands for a link whose handler and watch throw; tells the link when it is stopped. */
  private record Throwing(SelectorLoop.Handler link) implements SelectorLoop.Watch {

    static void fail() {
      throw new Error("thrown by the test");
    }

    @Override
    public void ready(int readyOps) {
      fail();
    }

    @Override
    public boolean check(long nowNanos) {
      fail();
      return true;
    }

    @Override
    public void stopped(String reason) {
      link.stopped(reason);
    }

    @Override
    public String toString() {
      return link.toString();
    }
  }

  /** A round on a fresh resource; the lease, released at once. */
  private Optional<Lease> tryAcquire(RedLock redlock) {
    Optional<Lease> lease = redlock.tryAcquire("failure-" + resources.incrementAndGet(), TTL);
    lease.ifPresent(Lease::close);
    return lease;
  }

  /**
   * Whether every master answers a round that waits for all of them (admitting them again changes
   * nothing), and a lease is granted. An acquire round is decided at a quorum, without the last.
   */
  private boolean everyMasterAnswers(RedLock redlock) {
    try {
      return redlock.admitFreshNodes().stream().allMatch(o -> ANSWERED.contains(o.status()))
          && tryAcquire(redlock).isPresent();
    } catch (QuorumUnavailableException e) {
      return false;
    }
  }

  /**
   * Acquires and releases until {@code stop}, counting the leases; returns the longest a call took
   * (nanoseconds).
   */
  private long acquireUntil(RedLock redlock, AtomicBoolean stop, AtomicInteger granted) {
    long slowest = 0;
    while (!stop.get()) {
      long start = System.nanoTime();
      try {
        if (tryAcquire(redlock).isPresent()) {
          granted.incrementAndGet();
        }
      } catch (QuorumUnavailableException e) {
        // a round the takeover cost: counted by what follows
      }
      slowest = Math.max(slowest, System.nanoTime() - start);
    }
    return slowest;
  }

  private static long[] connectionsReceived(RedisCluster cluster) {
    long[] received = new long[3];
    for (int i = 0; i < 3; i++) {
      received[i] = cluster.node(i).admin().connectionsReceived();
    }
    return received;
  }

  /** The loop's thread now, found by its name. */
  private static Thread thread(SelectorLoop loop) {
    String shown = loop.toString();
    String name = shown.substring("SelectorLoop{".length(), shown.length() - 1);
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no thread " + name));
  }
}
