package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Which notices wake a waiter, on five real masters: the messages are published by hand on the
 * channels the release script uses ({@code redlock:wake:<key>}, and {@code redlock:wake:@<client>}
 * for the waiter whose turn it is), so each case is one notice, sent on cue, with no release behind
 * it. A waiter whose retry timer pauses at least {@link #LEAST_PAUSE} between rounds is woken if it
 * asks again sooner; it sleeps if it does not ask within {@link #QUIET} of a notice.
 *
 * <p>Written against the notice protocol and the public API (rounds counted by the listener, the
 * queue read on the masters), so that a rebuild of the waiting code keeps them: a queued waiter
 * sleeps through a notice that names another waiter, and wakes at a plain notice, at one that names
 * it (on the resource's channel or its client's), and when its notice connections drop (notices may
 * have been lost); a waiter on a set wakes at a notice of any of its resources. Blocking and
 * asynchronous waiters alike.
 */
class WakeUpNoticesIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  /** The waiters' retry delay: their timer pauses 10 to 30 s between rounds. */
  private static final Duration TIMER = Duration.ofSeconds(20);

  /** The least pause of the timer: a round sooner than this after the one before was woken. */
  private static final long LEAST_PAUSE = TIMER.toNanos() / 2;

  /**
   * How long a waiter that was not woken is watched: a woken one asks at once, its round decided
   * within two node timeouts (a gated round waits for the gate, then the others).
   */
  private static final Duration QUIET = Duration.ofSeconds(1);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(200);

  private static final Duration TTL = Duration.ofSeconds(30);

  private static final String OTHER_WAITER = "0123456789abcdef0123456789abcdef";

  private final List<AutoCloseable> closing = new ArrayList<>();
  private final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterEach
  void closeEverything() throws Exception {
    threads.shutdownNow();
    for (AutoCloseable c : closing) {
      c.close();
    }
  }

  /** When each refused round of the waiter was decided (our clock). */
  private static final class Rounds implements RedLockListener {
    final List<Long> refused = new CopyOnWriteArrayList<>();

    @Override
    public void denied(
        String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
      refused.add(System.nanoTime());
    }

    int count() {
      return refused.size();
    }

    long last() {
      return refused.get(refused.size() - 1);
    }
  }

  private RedLock redlock(RedisCluster cluster, RedLockListener listener) {
    RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(NODE_TIMEOUT)
                .retryDelay(TIMER)
                .listener(listener)
                .build());
    closing.add(redlock);
    return redlock;
  }

  /** A waiter for {@code resource}, blocking (on a thread of the test's) or asynchronous. */
  private Future<Lease> waitFor(RedLock redlock, String resource, boolean async) {
    Duration maxWait = Duration.ofSeconds(60);
    if (async) {
      CompletableFuture<Lease> waiting = redlock.acquireAsync(resource, TTL, maxWait);
      closing.add(() -> waiting.cancel(true));
      return waiting;
    }
    return threads.submit(() -> redlock.acquire(resource, TTL, maxWait));
  }

  /** The names queued for {@code resource} on {@code node}: its waiters, if it is the gate. */
  private static List<String> queued(RedisProcess node, String resource) {
    List<?> members =
        (List<?>) node.admin().command("ZRANGE", "redlock:queue:" + resource, "0", "-1");
    return members.stream().map(String::valueOf).filter(m -> !m.startsWith(">")).toList();
  }

  /**
   * Waits until the waiter is queued at the resource's gate (refused twice: its first round, then
   * the one that queues it) and hears the gate's notices on its client's channel; returns its name.
   */
  private static String awaitQueued(RedisCluster cluster, String resource, Rounds rounds) {
    String[] name = new String[1];
    RedLocks.eventually(
        "one waiter queued for " + resource + ", listening",
        () -> {
          for (RedisProcess node : cluster.nodes()) {
            List<String> waiters = queued(node, resource);
            if (waiters.size() == 1
                && clientChannelSubscribers(node, waiters.get(0)) > 0
                && rounds.count() >= 2) {
              name[0] = waiters.get(0);
              return true;
            }
          }
          return false;
        });
    return name[0];
  }

  private static long clientChannelSubscribers(RedisProcess node, String waiter) {
    List<?> answer =
        (List<?>)
            node.admin().command("PUBSUB", "NUMSUB", "redlock:wake:@" + waiter.substring(0, 16));
    return (Long) answer.get(1);
  }

  /** Publishes {@code message} on {@code channel} on every master. */
  private static void publish(RedisCluster cluster, String channel, String message) {
    for (RedisProcess node : cluster.nodes()) {
      node.admin().command("PUBLISH", channel, message);
    }
  }

  /**
   * Asserts that the waiter asks again after the {@code before}th round, and before its timer could
   * have made it: the notice woke it.
   */
  private static void assertWoken(Rounds rounds, int before, String notice) {
    long previous = rounds.refused.get(before - 1);
    Duration wait = Duration.ofNanos(LEAST_PAUSE);
    dev.redlock.testkit.Poll.until(
        wait, () -> rounds.count() > before, () -> "no round after " + notice);
    long after = rounds.refused.get(before) - previous;
    assertTrue(
        after < LEAST_PAUSE,
        "asked again "
            + after / 1_000_000
            + " ms after its last round, not before the timer's least pause: not woken by "
            + notice);
  }

  /** Waits until the waiter has asked nothing for {@link #QUIET}; returns its rounds by then. */
  private static int awaitQuiet(Rounds rounds) {
    int[] seen = {rounds.count()};
    long[] since = {System.nanoTime()};
    dev.redlock.testkit.Poll.until(
        Duration.ofNanos(LEAST_PAUSE),
        () -> {
          int now = rounds.count();
          if (now != seen[0]) {
            seen[0] = now;
            since[0] = System.nanoTime();
          }
          return System.nanoTime() - since[0] >= QUIET.toNanos();
        },
        () -> "the waiter never stopped asking");
    return seen[0];
  }

  /** Asserts that the waiter asks nothing for {@link #QUIET} (its timer is far off). */
  private static void assertAsleep(Rounds rounds, int before, String notice) {
    long end = System.nanoTime() + QUIET.toNanos();
    while (System.nanoTime() - end < 0) {
      assertEquals(before, rounds.count(), "a queued waiter was woken by " + notice);
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
  }

  /** A waiter queued at the gate behind a holder, asleep: what each notice test starts from. */
  private record Queued(
      Lease held, Future<Lease> waiting, String name, Rounds rounds, int before) {}

  /**
   * Another client holds {@code resource}; a waiter (blocking or {@code async}) is queued at its
   * gate, listens on its client's channel, and has stopped asking: the rounds its subscriptions'
   * confirmations woke are over.
   */
  private Queued queuedWaiter(RedisCluster cluster, String resource, boolean async) {
    Rounds rounds = new Rounds();
    RedLock holder = redlock(cluster, new Rounds());
    RedLock waiter = redlock(cluster, rounds);
    Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
    Future<Lease> waiting = waitFor(waiter, resource, async);
    String name = awaitQueued(cluster, resource, rounds);
    return new Queued(held, waiting, name, rounds, awaitQuiet(rounds));
  }

  @ParameterizedTest(name = "async {0}")
  @ValueSource(booleans = {false, true})
  void aQueuedWaiterSleepsThroughNoticesNamingAnotherAndWakesAtAPlainOne(
      boolean async, RedisCluster cluster) throws Exception {
    String resource = "notice-other";
    Queued queued = queuedWaiter(cluster, resource, async);

    String another = "another waiter's turn";
    publish(cluster, "redlock:wake:" + resource, "turn:" + OTHER_WAITER);
    publish(
        cluster,
        "redlock:wake:@" + queued.name().substring(0, 16),
        "turn:" + queued.name().substring(0, 16) + OTHER_WAITER.substring(16) + resource);
    assertAsleep(queued.rounds(), queued.before(), another);

    publish(cluster, "redlock:wake:" + resource, "a plain release");
    assertWoken(queued.rounds(), queued.before(), "a plain notice");
    queued.held().close();
    queued.waiting().get(30, TimeUnit.SECONDS).close();
  }

  @ParameterizedTest(name = "async {0}")
  @ValueSource(booleans = {false, true})
  void aNoticeOnItsClientsChannelNamingTheWaiterWakesIt(boolean async, RedisCluster cluster)
      throws Exception {
    String resource = "notice-client";
    Queued queued = queuedWaiter(cluster, resource, async);

    // As release.lua tells the first waiter at the gate: "turn:", the waiter, the resource's key.
    publish(
        cluster,
        "redlock:wake:@" + queued.name().substring(0, 16),
        "turn:" + queued.name() + resource);
    assertWoken(queued.rounds(), queued.before(), "its turn on its client's channel");
    queued.waiting().cancel(true);
  }

  @Test
  void aNoticeOnTheResourcesChannelNamingTheWaiterWakesIt(RedisCluster cluster) throws Exception {
    String resource = "notice-named";
    Queued queued = queuedWaiter(cluster, resource, true);

    publish(cluster, "redlock:wake:" + resource, "turn:" + queued.name());
    assertWoken(queued.rounds(), queued.before(), "its turn on the resource's channel");
    queued.waiting().cancel(true);
  }

  @ParameterizedTest(name = "async {0}")
  @ValueSource(booleans = {false, true})
  void droppedNoticeConnectionsWakeTheWaiter(boolean async, RedisCluster cluster) throws Exception {
    String resource = "notice-dropped";
    Queued queued = queuedWaiter(cluster, resource, async);

    // No release: only notices that may have been lost while the connections were down.
    for (RedisProcess node : cluster.nodes()) {
      node.admin().command("CLIENT", "KILL", "TYPE", "pubsub");
    }
    assertWoken(queued.rounds(), queued.before(), "its notice connections dropping");
    queued.waiting().cancel(true);
  }

  @Test
  void aSetsWaiterWakesAtANoticeOfAnyOfItsResources(RedisCluster cluster) throws Exception {
    Rounds rounds = new Rounds();
    RedLock holder = redlock(cluster, new Rounds());
    RedLock waiter = redlock(cluster, rounds);
    holder.tryAcquire("set-b", TTL).orElseThrow();
    Future<Lease> waiting =
        threads.submit(
            () -> waiter.acquireAll(List.of("set-a", "set-b"), TTL, Duration.ofSeconds(60)));
    RedLocks.eventually(
        "the set's waiter listens on both resources' channels",
        () ->
            rounds.count() >= 1
                && cluster.nodes().stream().anyMatch(n -> subscribers(n, "set-a") > 0)
                && cluster.nodes().stream().anyMatch(n -> subscribers(n, "set-b") > 0));
    int before = awaitQuiet(rounds);
    publish(cluster, "redlock:wake:set-a", "a plain release");
    assertWoken(rounds, before, "a notice of its first resource");
    before = awaitQuiet(rounds); // a set may retry a few rounds after a notice
    publish(cluster, "redlock:wake:set-b", "a plain release");
    assertWoken(rounds, before, "a notice of its second resource");
    waiting.cancel(true);
  }

  private static long subscribers(RedisProcess node, String resource) {
    List<?> answer = (List<?>) node.admin().command("PUBSUB", "NUMSUB", "redlock:wake:" + resource);
    return (Long) answer.get(1);
  }
}
