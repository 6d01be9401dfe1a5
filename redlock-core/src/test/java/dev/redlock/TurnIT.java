package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Waiters in turn, on five real masters: a waiter's rounds queue it at its resource's gate master,
 * the lock passes to the waiters in the order they queued, only the waiter whose turn a release
 * names wakes (an asynchronous one too), a grant discarded by a cancelled waiter names the next
 * waiter, a paused gate does not keep its queued waiter asleep, a waiter that gives up leaves the
 * queue at once, a waiter that vanished without leaving stops blocking the others after the stale
 * window, and no queue key outlives its waiters.
 */
class TurnIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  /** A retry timer far slower than a hand-off: waiters are woken, not polling. */
  private static final Duration SLOW_TIMER = Duration.ofSeconds(2);

  /**
   * The waiter's timer in the tests that tell a wake-up from a timer round: its least pause is half
   * of it, 2 s, so a grant less than that after the wait began came by a notice or a short pause,
   * never by the timer, whatever the setup took (a bound from the release, as before, left the
   * setup's time out: 500 ms was missed under load, 775 ms seen).
   */
  private static final Duration WAKE_TIMER = Duration.ofSeconds(4);

  /**
   * No round of a {@link #WAKE_TIMER} waiter's timer runs sooner than this after the wait began.
   */
  private static final long LEAST_TIMER_PAUSE_NANOS = WAKE_TIMER.toNanos() / 2;

  /**
   * The last waiter's timer in the tests that count its refusals: its least pause, 30 s, is longer
   * than those tests may take, so every round it makes once queued is a wake-up's. (With {@link
   * #SLOW_TIMER}, slow hand-offs on a loaded machine let its timer add a refusal: seen once in CI,
   * 'the last async waiter was refused 4 times'.)
   */
  private static final Duration SLEEPER_TIMER = Duration.ofSeconds(60);

  private static final Duration TTL = Duration.ofSeconds(10);

  private final List<AutoCloseable> closing = new ArrayList<>();
  private ExecutorService threads;

  @BeforeEach
  void start() {
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void closeEverything() throws Exception {
    threads.shutdownNow();
    for (AutoCloseable c : closing) {
      c.close();
    }
  }

  private RedLock redlock(RedisCluster cluster, Duration retryDelay, RedLockListener listener) {
    RedLockBuilder builder =
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(Duration.ofMillis(200))
            .retryDelay(retryDelay);
    if (listener != null) {
      builder.listener(listener);
    }
    RedLock redlock = RedLocks.admitted(builder.build());
    closing.add(redlock);
    return redlock;
  }

  /** A listener that counts the refused rounds in {@code refused}. */
  private static RedLockListener refusalsCounted(AtomicInteger refused) {
    return new RedLockListener() {
      @Override
      public void denied(String r, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
        refused.incrementAndGet();
      }
    };
  }

  /**
   * How many waiters are queued for {@code resource}, over every master (only its gate has any).
   */
  private static long queued(RedisCluster cluster, String resource) {
    long queued = 0;
    for (RedisProcess node : cluster.nodes()) {
      queued += (Long) node.admin().command("ZCARD", "redlock:queue:" + resource);
    }
    return queued;
  }

  private static RedisProcess gate(RedisCluster cluster, String resource) {
    for (RedisProcess node : cluster.nodes()) {
      if ((Long) node.admin().command("ZCARD", "redlock:queue:" + resource) > 0) {
        return node;
      }
    }
    throw new AssertionError("no master queues waiters for " + resource);
  }

  private static boolean noQueueKeys(RedisCluster cluster) {
    return cluster.nodes().stream()
        .allMatch(n -> ((List<?>) n.admin().command("KEYS", "redlock:queue*")).isEmpty());
  }

  @Test
  void theLockPassesToTheWaitersInTheOrderTheyQueued(RedisCluster cluster) throws Exception {
    int waiters = 4;
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    List<RedLock> redlocks = new ArrayList<>();
    for (int i = 0; i < waiters; i++) {
      redlocks.add(redlock(cluster, SLOW_TIMER, null));
    }
    for (int trial = 0; trial < 2; trial++) {
      String resource = "fifo-" + trial;
      Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
      List<Integer> order = new CopyOnWriteArrayList<>();
      List<Future<?>> waiting = new ArrayList<>();
      for (int i = 0; i < waiters; i++) {
        int me = i;
        RedLock redlock = redlocks.get(i);
        waiting.add(
            threads.submit(
                () -> {
                  try (Lease got = redlock.acquire(resource, TTL, Duration.ofSeconds(30))) {
                    order.add(me);
                    TimeUnit.MILLISECONDS.sleep(5); // the work under the lock
                  }
                  return null;
                }));
        long ahead = i + 1;
        RedLocks.eventually(ahead + " waiter(s) queued", () -> queued(cluster, resource) == ahead);
      }
      held.close();
      for (Future<?> f : waiting) {
        f.get(30, TimeUnit.SECONDS);
      }
      assertEquals(List.of(0, 1, 2, 3), order, "granted in the order queued (trial " + trial + ")");
    }
    RedLocks.eventually("no queue key left", () -> noQueueKeys(cluster));
  }

  @Test
  void onlyTheWaiterWhoseTurnItIsWakes(RedisCluster cluster) throws Exception {
    int ahead = 5;
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    List<Future<?>> waiting = new ArrayList<>();
    String resource = "named";
    Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
    for (int i = 0; i < ahead; i++) {
      RedLock redlock = redlock(cluster, SLOW_TIMER, null);
      waiting.add(
          threads.submit(
              () -> {
                try (Lease got = redlock.acquire(resource, TTL, Duration.ofSeconds(30))) {
                  TimeUnit.MILLISECONDS.sleep(5);
                }
                return null;
              }));
      long queuedNow = i + 1;
      RedLocks.eventually("queued", () -> queued(cluster, resource) == queuedNow);
    }
    AtomicInteger lastRounds = new AtomicInteger();
    RedLock last = redlock(cluster, SLEEPER_TIMER, refusalsCounted(lastRounds));
    Future<Lease> lastWaiting =
        threads.submit(() -> last.acquire(resource, TTL, Duration.ofSeconds(30)));
    RedLocks.eventually("the last queued", () -> queued(cluster, resource) == ahead + 1);
    int before = lastRounds.get();

    held.close(); // six releases to go before the last waiter's turn
    for (Future<?> f : waiting) {
      f.get(30, TimeUnit.SECONDS);
    }
    lastWaiting.get(30, TimeUnit.SECONDS).close();
    int refusedWhileOthersHadTheirTurn = lastRounds.get() - before;
    // Woken by every release, it would be refused at least once per turn ahead of it (5); named,
    // it sleeps through them. Counted here may be its queuing round (sent at once after its first
    // refusal, its refusal heard after it was seen queued) and the round of the subscription's
    // first confirmation (a release before it could have been missed).
    assertTrue(
        refusedWhileOthersHadTheirTurn <= 3,
        "the last waiter was refused " + refusedWhileOthersHadTheirTurn + " times");
  }

  @Test
  void aReleaseTellsOnlyTheWaiterWhoseTurnItIsNotEveryWaitingClient(RedisCluster cluster)
      throws Exception {
    int waiters = 5;
    String resource = "one-notice";
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
    List<Future<?>> waiting = new ArrayList<>();
    for (int i = 0; i < waiters; i++) {
      RedLock redlock = redlock(cluster, SLOW_TIMER, null);
      waiting.add(
          threads.submit(
              () -> {
                redlock.acquire(resource, TTL, Duration.ofSeconds(30)).close();
                return null;
              }));
      long queuedNow = i + 1;
      RedLocks.eventually("queued", () -> queued(cluster, resource) == queuedNow);
    }
    // A client watching the resource's channel where its waiters listen: the gate and the next
    // master by name (the masters sorted by host:port, as the library orders them).
    RedisProcess gate = gate(cluster, resource);
    List<RedisProcess> byName = new ArrayList<>(cluster.nodes());
    byName.sort((a, b) -> (a.host() + ":" + a.port()).compareTo(b.host() + ":" + b.port()));
    RedisProcess next = byName.get((byName.indexOf(gate) + 1) % byName.size());
    try (ChannelWatch atGate = new ChannelWatch(gate, resource);
        ChannelWatch atNext = new ChannelWatch(next, resource)) {
      held.close(); // six releases: five to a queued waiter, the last to no one
      for (Future<?> f : waiting) {
        f.get(30, TimeUnit.SECONDS);
      }
      // Each release told the waiter whose turn it was on its client's channel; the resource's
      // channel heard at most the last release (no one queued: a plain notice at the gate). Told
      // on the resource's channel, every waiting client would hear two notices per release.
      int heard = atGate.messages() + atNext.messages();
      assertTrue(heard <= 2, heard + " notices on the resource's channel for 6 releases");
    }
  }

  @Test
  void afterItsSubscriberConnectionIsResetAWaiterStillHearsItsTurnOnItsClientsChannel(
      RedisCluster cluster) throws Exception {
    String resource = "reset-turn";
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    RedLock waiter = redlock(cluster, WAKE_TIMER, null);
    Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
    long began = System.nanoTime();
    Future<Lease> waiting =
        threads.submit(() -> waiter.acquire(resource, TTL, Duration.ofSeconds(30)));
    RedLocks.eventually("queued", () -> queued(cluster, resource) == 1);
    RedisProcess gate = gate(cluster, resource);
    RedLocks.eventually("its client's channel subscribed", () -> clientChannels(gate) == 1);

    for (RedisProcess node : cluster.nodes()) {
      node.admin().command("CLIENT", "KILL", "TYPE", "pubsub");
    }
    RedLocks.eventually("subscribed again", () -> clientChannels(gate) == 1);
    try (ChannelWatch atGate = new ChannelWatch(gate, resource)) {
      held.close();
      Lease got = waiting.get(30, TimeUnit.SECONDS);
      long took = System.nanoTime() - began;
      int heard = atGate.messages();
      got.close();
      assertTrue(
          took < LEAST_TIMER_PAUSE_NANOS,
          "granted " + took / 1_000_000 + " ms after the wait began");
      // Named on its client's channel, not on the resource's (which every waiter hears).
      assertEquals(0, heard, "notices on the resource's channel at the gate");
    }
  }

  @Test
  void aNamedWaiterWhoseRoundOvertookTheReleaseTriesAgainSoon(RedisCluster cluster)
      throws Exception {
    overtaken(cluster, "overtaken", blocking(Duration.ofSeconds(30)));
  }

  @Test
  void aNamedAsyncWaiterWhoseRoundOvertookTheReleaseTriesAgainSoon(RedisCluster cluster)
      throws Exception {
    overtaken(cluster, "overtaken-async", async(Duration.ofSeconds(30)));
  }

  /** An acquire of a resource by a RedLock, blocking on a thread of the test or asynchronous. */
  private interface Acquire {
    Future<Lease> start(RedLock redlock, String resource);
  }

  private Acquire blocking(Duration wait) {
    return (redlock, resource) -> threads.submit(() -> redlock.acquire(resource, TTL, wait));
  }

  private static Acquire async(Duration wait) {
    return (redlock, resource) -> redlock.acquireAsync(resource, TTL, wait);
  }

  private void overtaken(RedisCluster cluster, String resource, Acquire acquire) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    RedLock waiter = redlock(cluster, WAKE_TIMER, null);
    holder.tryAcquire(resource, TTL).orElseThrow();
    long began = System.nanoTime();
    Future<Lease> waiting = acquire.start(waiter, resource);
    RedLocks.eventually("queued", () -> queued(cluster, resource) == 1);
    RedisProcess gate = gate(cluster, resource);
    String name =
        String.valueOf(
            ((List<?>) gate.admin().command("ZRANGE", "redlock:queue:" + resource, "0", "0"))
                .get(0));
    // A release that landed on the gate (now silent) and, 50 ms later, quietly on the others: the
    // waiter, named, asks every master before the release reached them.
    gate.admin().command("DEL", resource);
    gate.pause();
    try {
      for (RedisProcess node : cluster.nodes()) {
        if (node != gate) {
          node.admin().command("PEXPIRE", resource, "50");
        }
      }
      long heard = 0;
      for (RedisProcess node : cluster.nodes()) {
        if (node != gate) { // the turn on the resource's channel, as an older client's gate says it
          heard +=
              (Long) node.admin().command("PUBLISH", "redlock:wake:" + resource, "turn:" + name);
        }
      }
      assertEquals(1, heard, "the waiter hears the next master");
      waiting.get(30, TimeUnit.SECONDS).close();
      long took = System.nanoTime() - began;
      // Refused by the others, with no answer from the gate, it tries again after a short pause,
      // doubling, until the keys are gone; waiting for a notice, it would sleep until its timer
      // (2 to 6 s).
      assertTrue(
          took < LEAST_TIMER_PAUSE_NANOS,
          "granted " + took / 1_000_000 + " ms after the wait began");
    } finally {
      gate.resume();
    }
  }

  @Test
  void aClientThatComesBackSoonAfterAReleaseToWaitersQueuesBehindThem(RedisCluster cluster)
      throws Exception {
    behind(cluster, "behind", blocking(Duration.ofMillis(300)));
  }

  @Test
  void anAsyncClientThatComesBackSoonAfterAReleaseToWaitersQueuesBehindThem(RedisCluster cluster)
      throws Exception {
    behind(cluster, "behind-async", async(Duration.ofMillis(300)));
  }

  private void behind(RedisCluster cluster, String resource, Acquire acquire) throws Exception {
    RedLock client = redlock(cluster, SLOW_TIMER, null);
    RedLock finder = redlock(cluster, SLOW_TIMER, null);
    Lease held = client.tryAcquire(resource, TTL).orElseThrow();
    // A waiter that queues, shows which master is the gate, and gives up (leaving the queue).
    Future<?> finding =
        threads.submit(
            () -> {
              assertThrows(
                  LockTakenException.class,
                  // Long enough to be seen queued on a loaded machine (300 ms was not always).
                  () -> finder.acquire(resource, TTL, Duration.ofMillis(1500)));
              return null;
            });
    RedLocks.eventually("queued", () -> queued(cluster, resource) == 1);
    RedisProcess gate = gate(cluster, resource);
    finding.get(10, TimeUnit.SECONDS);
    // In its place, a waiter of another client, which hears its turn on its client's channel:
    // the release at the gate is heard, so the releaser knows waiters are queued.
    String other = "aaaaaaaaaaaaaaaa";
    List<?> time = (List<?>) gate.admin().command("TIME");
    String now =
        String.valueOf(
            Long.parseLong((String) time.get(0)) * 1_000_000
                + Long.parseLong((String) time.get(1)));
    gate.admin().command("ZADD", "redlock:queue:" + resource, "0", other + "bbbbbbbbbbbbbbbb");
    // Stale a minute from now (queue.lua scores each waiter with when it goes stale).
    String staleBy = String.valueOf(Long.parseLong(now) + 60_000_000L);
    gate.admin()
        .command("ZADD", "redlock:queue-seen:" + resource, staleBy, other + "bbbbbbbbbbbbbbbb");
    try (ChannelWatch otherClient = new ChannelWatch(gate, "@" + other)) {
      held.close();
      RedLocks.eventually("the waiter named", () -> otherClient.messages() == 1);
      // Two of the other masters hold the key for someone else: a majority needs the gate, where
      // it is the queued waiter's turn (and a gate that answers later than the gate wait, under
      // load, still decides nothing alone).
      int blocked = 0;
      for (RedisProcess node : cluster.nodes()) {
        if (node != gate && blocked < 2) {
          node.admin().command("SET", resource, "someone-else", "PX", "5000");
          blocked++;
        }
      }
      // Back after the hand-off pause (four of its rounds' time, a few ms here): its first round
      // asks the gate first, in turn, and is refused there; asking every master at once, it would
      // have been granted by the gate (a plain SET NX there ignores the queue) and the two free
      // masters.
      TimeUnit.MILLISECONDS.sleep(50);
      Future<Lease> back = acquire.start(client, resource);
      java.util.concurrent.ExecutionException refused =
          assertThrows(
              java.util.concurrent.ExecutionException.class, () -> back.get(10, TimeUnit.SECONDS));
      assertTrue(
          refused.getCause() instanceof LockTakenException, "refused: " + refused.getCause());
      assertEquals(
          0L,
          gate.admin().command("ZRANK", "redlock:queue:" + resource, other + "bbbbbbbbbbbbbbbb"),
          "the waiter is still first");
    }
  }

  private static long clientChannels(RedisProcess node) {
    return ((List<?>) node.admin().command("PUBSUB", "CHANNELS", "redlock:wake:@*")).size();
  }

  /** A plain subscriber of a resource's wake-up channel on one master, counting its messages. */
  private final class ChannelWatch implements AutoCloseable {
    private final redis.clients.jedis.Jedis jedis;
    private final AtomicInteger messages = new AtomicInteger();
    private final java.util.concurrent.CountDownLatch subscribed =
        new java.util.concurrent.CountDownLatch(1);
    private final redis.clients.jedis.JedisPubSub listener =
        new redis.clients.jedis.JedisPubSub() {
          @Override
          public void onMessage(String channel, String message) {
            messages.incrementAndGet();
          }

          @Override
          public void onSubscribe(String channel, int count) {
            subscribed.countDown();
          }
        };

    ChannelWatch(RedisProcess node, String resource) throws InterruptedException {
      jedis = new redis.clients.jedis.Jedis(node.host(), node.port());
      threads.submit(() -> jedis.subscribe(listener, "redlock:wake:" + resource));
      assertTrue(subscribed.await(10, TimeUnit.SECONDS), "subscribed");
    }

    int messages() {
      return messages.get();
    }

    @Override
    public void close() {
      listener.unsubscribe();
      jedis.close();
    }
  }

  @Test
  void anAsyncWaiterTooSleepsUntilItsTurn(RedisCluster cluster) throws Exception {
    int ahead = 5;
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    String resource = "named-async";
    Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
    List<CompletableFuture<Lease>> waiting = new ArrayList<>();
    for (int i = 0; i < ahead; i++) {
      RedLock redlock = redlock(cluster, SLOW_TIMER, null);
      // Each holds its lease until the one before it is done: released as soon as granted.
      waiting.add(
          redlock
              .acquireAsync(resource, TTL, Duration.ofSeconds(30))
              .thenApply(
                  lease -> {
                    lease.close();
                    return lease;
                  }));
      long queuedNow = i + 1;
      RedLocks.eventually("queued", () -> queued(cluster, resource) == queuedNow);
    }
    AtomicInteger lastRounds = new AtomicInteger();
    RedLock last = redlock(cluster, SLEEPER_TIMER, refusalsCounted(lastRounds));
    CompletableFuture<Lease> lastWaiting = last.acquireAsync(resource, TTL, Duration.ofSeconds(30));
    RedLocks.eventually("the last queued", () -> queued(cluster, resource) == ahead + 1);
    int before = lastRounds.get();

    held.close();
    for (CompletableFuture<Lease> f : waiting) {
      f.get(30, TimeUnit.SECONDS);
    }
    lastWaiting.get(30, TimeUnit.SECONDS).close();
    int refused = lastRounds.get() - before;
    // As above: at most its queuing round and the confirmation's, not one per turn ahead (5).
    assertTrue(refused <= 3, "the last async waiter was refused " + refused + " times");
  }

  @Test
  void aGrantDiscardedByACancelledAsyncWaiterNamesTheNextWaiter(RedisCluster cluster)
      throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    java.util.concurrent.atomic.AtomicReference<CompletableFuture<Lease>> first =
        new java.util.concurrent.atomic.AtomicReference<>();
    // Cancelled the moment its round is granted (the listener hears the grant on the granting
    // thread, before the lease is handed over): the acquisition discards the grant, as after a
    // cancel in flight.
    RedLock cancelling =
        redlock(
            cluster,
            SLOW_TIMER,
            new RedLockListener() {
              @Override
              public void acquired(String r, List<NodeOutcome> outcomes, Duration elapsed) {
                first.get().cancel(false);
              }
            });
    RedLock next = redlock(cluster, WAKE_TIMER, null);
    // The scenario needs the first waiter granted at the gate before the next: on two loaded cores
    // its asks can come late enough for the queue to drop it as stale, and the next is granted
    // first (seen in the flake check at load ~15). Such a try tested nothing: it is repeated, and
    // the test fails if the scenario never happened.
    for (int attempt = 1; attempt <= 3; attempt++) {
      String resource = "discarded-" + attempt;
      Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
      first.set(cancelling.acquireAsync(resource, TTL, Duration.ofSeconds(30)));
      RedLocks.eventually("the first queued", () -> queued(cluster, resource) == 1);
      long began = System.nanoTime();
      Future<Lease> waiting =
          threads.submit(() -> next.acquire(resource, TTL, Duration.ofSeconds(30)));
      RedLocks.eventually("the next queued", () -> queued(cluster, resource) == 2);

      held.close(); // names the first; its grant is discarded, and that release names the next
      Lease nextLease = waiting.get(30, TimeUnit.SECONDS);
      long took = System.nanoTime() - began;
      boolean discardedFirst = first.get().isCancelled();
      nextLease.close();
      if (!discardedFirst) {
        // The next went first: the first waiter is granted after it and discards that grant.
        RedLocks.eventually("the first's late grant discarded", () -> first.get().isCancelled());
        System.out.println("TURN the first waiter was not granted first (try " + attempt + ")");
        continue;
      }
      // A quiet release of the discarded grant would leave it asleep until its timer (2 to 6 s).
      assertTrue(
          took < LEAST_TIMER_PAUSE_NANOS,
          "granted " + took / 1_000_000 + " ms after the wait began");
      return;
    }
    throw new AssertionError("in 3 tries, the first waiter was never granted before the next");
  }

  @Test
  void aPausedGateDoesNotKeepItsQueuedWaiterAsleep(RedisCluster cluster) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    RedLock waiter = redlock(cluster, WAKE_TIMER, null);
    Lease held = holder.tryAcquire("gate-paused", TTL).orElseThrow();
    long began = System.nanoTime();
    Future<Lease> waiting =
        threads.submit(() -> waiter.acquire("gate-paused", TTL, Duration.ofSeconds(30)));
    RedLocks.eventually("queued", () -> queued(cluster, "gate-paused") == 1);
    RedisProcess gate = gate(cluster, "gate-paused");
    gate.pause(); // its release, and the notice naming the waiter, never come
    try {
      held.close();
      waiting.get(30, TimeUnit.SECONDS).close();
      long took = System.nanoTime() - began;
      // Woken by the other master it hears (the gate named no turn yet), it passes the gate by;
      // its timer would have taken 2 to 6 s.
      assertTrue(
          took < LEAST_TIMER_PAUSE_NANOS,
          "granted " + took / 1_000_000 + " ms after the wait began");
    } finally {
      gate.resume();
    }
  }

  @Test
  void aWaiterGrantedAtTheGateWhoseRoundFailsElsewhereKeepsItsPlace(RedisCluster cluster)
      throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    AtomicInteger firstRounds = new AtomicInteger();
    RedLock first = redlock(cluster, Duration.ofMillis(50), refusalsCounted(firstRounds));
    RedLock second = redlock(cluster, SLOW_TIMER, null);
    Lease held = holder.tryAcquire("place", TTL).orElseThrow();
    Future<Lease> firstWaiting =
        threads.submit(() -> first.acquire("place", TTL, Duration.ofSeconds(30)));
    RedLocks.eventually("the first queued", () -> queued(cluster, "place") == 1);
    Future<Lease> secondWaiting =
        threads.submit(() -> second.acquire("place", TTL, Duration.ofSeconds(30)));
    RedLocks.eventually("the second queued", () -> queued(cluster, "place") == 2);
    RedisProcess gate = gate(cluster, "place");
    Object order = gate.admin().command("ZRANGE", "redlock:queue:place", "0", "-1");

    // The key gone from the gate alone (no release, no notice): the first waiter's next timer
    // round is granted at the gate and refused by the other masters, which the holder still holds.
    gate.admin().command("DEL", "place");
    int before = firstRounds.get();
    RedLocks.eventually("two more refused rounds", () -> firstRounds.get() >= before + 2);
    assertEquals(
        order,
        gate.admin().command("ZRANGE", "redlock:queue:place", "0", "-1"),
        "the first waiter is still first");

    held.close();
    firstWaiting.get(30, TimeUnit.SECONDS).close();
    secondWaiting.get(30, TimeUnit.SECONDS).close();
  }

  /**
   * A waiter's rounds refused at its gate cost the other masters nothing: the gate refused before
   * they were asked, and a master that refused holds no key of the round's, so there is nothing to
   * release anywhere. (Each such round used to send every master a release: with 1,000 waiters
   * polling, five of every six commands.) Blocking and asynchronous alike.
   */
  @Test
  void aWaitersRoundsRefusedAtTheGateSendTheOtherMastersNothing(RedisCluster cluster)
      throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    // The masters that did not answer a round in time: a release there is due (its acquire may
    // have set the key), which a loaded machine makes happen now and then (seen: a master other
    // than the gate ran 3 scripts, not 2).
    Map<String, AtomicInteger> unanswered = new ConcurrentHashMap<>();
    RedLockListener late =
        new RedLockListener() {
          @Override
          public void denied(
              String r, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
            for (NodeOutcome outcome : outcomes) {
              if (outcome.status() == NodeOutcome.Status.TIMED_OUT
                  || outcome.status() == NodeOutcome.Status.PENDING
                  || outcome.status() == NodeOutcome.Status.FAILED) {
                unanswered
                    .computeIfAbsent(outcome.node(), n -> new AtomicInteger())
                    .incrementAndGet();
              }
            }
          }
        };
    // Polling every 10 to 30 ms, with no release to wake it: about 30 rounds in 600 ms.
    RedLock waiter = redlock(cluster, Duration.ofMillis(20), late);
    for (boolean async : new boolean[] {false, true}) {
      String resource = async ? "refused-async" : "refused";
      try (Lease held = holder.tryAcquire(resource, TTL).orElseThrow()) {
        unanswered.clear();
        long[] before = scriptCalls(cluster);
        if (async) {
          CompletionException e =
              assertThrows(
                  CompletionException.class,
                  () -> waiter.acquireAsync(resource, TTL, Duration.ofMillis(600)).join());
          assertTrue(e.getCause() instanceof LockTakenException, "refused: " + e.getCause());
        } else {
          assertThrows(
              LockTakenException.class,
              () -> waiter.acquire(resource, TTL, Duration.ofMillis(600)));
        }
        long[] sent = scriptCalls(cluster);
        int gate = 0;
        for (int i = 0; i < sent.length; i++) {
          sent[i] -= before[i];
          gate = sent[i] > sent[gate] ? i : gate;
        }
        String calls =
            (async ? "async" : "blocking") + ": scripts run per master " + Arrays.toString(sent);
        assertTrue(sent[gate] >= 10, "the waiter asked its gate at least 10 times; " + calls);
        for (int i = 0; i < sent.length; i++) {
          // Its first round asks every master at once, and releases where it may have set the key;
          // so does a round that master did not answer in time.
          String node = "127.0.0.1:" + cluster.node(i).port();
          AtomicInteger missed = unanswered.get(node);
          int due = 2 + 2 * (missed == null ? 0 : missed.get());
          assertTrue(
              i == gate || sent[i] <= due,
              "a master other than the gate ran only the scripts of the first round and of the"
                  + " rounds it did not answer in time ("
                  + due
                  + "); "
                  + calls
                  + ", unanswered "
                  + unanswered);
        }
      }
    }
  }

  /** How many scripts each master has run ({@code EVALSHA} and {@code EVAL}). */
  private static long[] scriptCalls(RedisCluster cluster) {
    long[] calls = new long[cluster.nodes().size()];
    for (int i = 0; i < calls.length; i++) {
      String stats = String.valueOf(cluster.node(i).admin().command("INFO", "commandstats"));
      for (String line : stats.split("\r?\n")) {
        if (line.startsWith("cmdstat_evalsha:calls=") || line.startsWith("cmdstat_eval:calls=")) {
          calls[i] += Long.parseLong(line.substring(line.indexOf('=') + 1, line.indexOf(',')));
        }
      }
    }
    return calls;
  }

  @Test
  void aWaiterThatGivesUpLeavesTheQueueAtOnce(RedisCluster cluster) throws Exception {
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    RedLock quitter = redlock(cluster, Duration.ofMillis(100), null);
    try (Lease held = holder.tryAcquire("quit", TTL).orElseThrow()) {
      // Queued by its second round, gone when the wait ends: long before the stale window (2
      // retry delays and 2 node timeouts: 600 ms) would drop it.
      assertThrows(
          LockTakenException.class, () -> quitter.acquire("quit", TTL, Duration.ofMillis(400)));
      long gaveUp = System.nanoTime();
      RedLocks.eventually("the quitter left", () -> queued(cluster, "quit") == 0);
      long left = System.nanoTime() - gaveUp;
      assertTrue(left < TimeUnit.MILLISECONDS.toNanos(300), "left after " + left / 1_000_000);
    }
  }

  @Test
  void aWaiterThatVanishedStopsBlockingTheQueue(RedisCluster cluster) throws Exception {
    Duration retryDelay = Duration.ofMillis(100);
    Duration nodeTimeout = Duration.ofMillis(200);
    // The stale window (Turn): two retry delays and two node timeouts, 600 ms.
    long staleNanos = 2 * retryDelay.toNanos() + 2 * nodeTimeout.toNanos();
    RedLock holder = redlock(cluster, SLOW_TIMER, null);
    RedLock waiter = redlock(cluster, retryDelay, null);
    Lease held = holder.tryAcquire("ghost", TTL).orElseThrow();
    Future<Lease> waiting =
        threads.submit(() -> waiter.acquire("ghost", TTL, Duration.ofSeconds(30)));
    RedLocks.eventually("queued", () -> queued(cluster, "ghost") == 1);
    // A waiter that crashed while first in the queue: queued before it, last seen now (the gate's
    // clock, read between these two instants of ours).
    RedisProcess gate = gate(cluster, "ghost");
    long beforeSeen = System.nanoTime();
    List<?> time = (List<?>) gate.admin().command("TIME");
    long afterSeen = System.nanoTime();
    String now =
        String.valueOf(
            Long.parseLong((String) time.get(0)) * 1_000_000
                + Long.parseLong((String) time.get(1)));
    gate.admin().command("ZADD", "redlock:queue:ghost", "0", "ghost");
    // It goes stale one window of its own after now (configured as the waiter is).
    String staleBy = String.valueOf(Long.parseLong(now) + staleNanos / 1000);
    gate.admin().command("ZADD", "redlock:queue-seen:ghost", staleBy, "ghost");
    // Two of the other masters hold the key for someone else until after the test: a majority
    // needs the gate, so a round that passed a gate slow to answer (under load) cannot take the
    // lock past the ghost on the others.
    int blocked = 0;
    for (RedisProcess node : cluster.nodes()) {
      if (node != gate && blocked < 2) {
        node.admin().command("SET", "ghost", "someone-else", "PX", "30000");
        blocked++;
      }
    }
    held.close();

    // The lock is free, but it is the ghost's turn: the waiter, polling every 50 to 150 ms, is
    // refused until the ghost goes stale (the stale window after it was last seen) and is dropped.
    waiting.get(20, TimeUnit.SECONDS).close();
    long granted = System.nanoTime();
    // Not before the window ends (the gate drops a waiter last seen a whole window ago: a round
    // granted began after that; 2 ms for the gate's wall clock against our monotonic one); and
    // by then, the round under way when it ended (at most half a node timeout for the gate, one
    // for the others), the waiter's longest timer pause (1.5 retry delays) and its next round.
    // A window half as long fails the first bound; one 2.25 times as long, the second.
    long earliest = beforeSeen + staleNanos - TimeUnit.MILLISECONDS.toNanos(2);
    long round = nodeTimeout.toNanos() * 3 / 2;
    long latest = afterSeen + staleNanos + retryDelay.toNanos() * 3 / 2 + 2 * round;
    assertTrue(
        granted - earliest >= 0,
        "granted " + (earliest - granted) / 1_000_000 + " ms before the stale window ended");
    assertTrue(
        granted - latest <= 0,
        "granted " + (granted - latest) / 1_000_000 + " ms after the stale window and a round");
    assertNull(gate.admin().command("ZSCORE", "redlock:queue:ghost", "ghost"));
    for (RedisProcess node : cluster.nodes()) {
      node.admin().command("DEL", "ghost"); // the two keys of someone else
    }
    RedLocks.eventually("no queue key left", () -> noQueueKeys(cluster));
  }
}
