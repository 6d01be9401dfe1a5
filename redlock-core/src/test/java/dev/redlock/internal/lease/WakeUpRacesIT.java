package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import dev.redlock.RedLockListener;
import dev.redlock.internal.preflight.Preflight;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeAddress;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NoticeLink;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;

/**
 * Races between a release's notice and a waiter's rounds, each forced. A waiter on a set of
 * resources is woken by the release of one of them, which comes from that resource's gate; the
 * set's own rounds are gated by the set's gate, another master, which may not have run the release
 * yet. Its next round asks every master at once, and keeps doing so while the release is still on
 * its way, rather than being refused at its gate and sleeping until its timer ({@code
 * WakeUpsIT.aReleaseWakesAWaiterOnASetThatContainsIt} did, in 2 of 6 runs).
 */
class WakeUpRacesIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  /**
   * The waiter's retry timer: a pause of 2 to 6 s between rounds, so that no round of its timer
   * comes between the waiter's first rounds and the grant.
   */
  private static final Duration SLOW_TIMER = Duration.ofSeconds(4);

  private static final Duration TTL = Duration.ofSeconds(10);

  /** The gate's rank among masters named in sorted order, as {@link Masters#gateOf} picks it. */
  private static int gateRank(byte[] key, int masters) {
    return fakeMasters(masters).gateOf(key);
  }

  /** Masters of fake clients, named in sorted order: an index is a rank. */
  private static Masters fakeMasters(int masters) {
    List<NodeClient> nodes = new ArrayList<>();
    List<String> names = new ArrayList<>();
    for (int i = 0; i < masters; i++) {
      nodes.add(new FakeNode(new FakeTicker()));
      names.add("master-" + i); // named in sorted order: the index is the rank
    }
    return FakeMasters.of(nodes, names, Ticker.system());
  }

  private static byte[] bytes(String resource) {
    return resource.getBytes(StandardCharsets.UTF_8);
  }

  private static long subscribers(RedisProcess node, String resource) {
    List<?> answer = (List<?>) node.admin().command("PUBSUB", "NUMSUB", "redlock:wake:" + resource);
    return (Long) answer.get(1);
  }

  @Test
  void aSetWaiterWokenBeforeItsGateRanTheReleaseTakesTheLockLongBeforeItsTimer(RedisCluster cluster)
      throws Exception {
    // A set whose gate is not the gate of the resource the holder holds.
    String held = null;
    String other = null;
    for (int i = 0; held == null; i++) {
      String a = "member-a" + i;
      String b = "member-b" + i;
      if (gateRank(bytes(a), 3) != gateRank(LockKey.of(List.of(bytes(a), bytes(b))).bytes(), 3)) {
        held = a;
        other = b;
      }
    }
    List<RedisProcess> byName = new ArrayList<>(cluster.nodes());
    byName.sort(Comparator.comparing(n -> n.host() + ":" + n.port()));
    RedisProcess gate = byName.get(gateRank(bytes(held), 3));
    String gateName = gate.host() + ":" + gate.port();
    List<RedisProcess> late = cluster.nodes().stream().filter(n -> n != gate).toList();
    String first = held;
    String second = other;
    // The release reaches the masters other than the resource's gate late: there the key is
    // another's until a round of the waiter has asked the resource's gate after the release. Such
    // a round is known by what it did there: the set's acquire set the other member's key, which
    // no round can before the release (every master holds the held resource's key until then).
    // The gate tells it by a keyspace notice, at once, whether or not the round was decided
    // before the gate's answer (a round refused by a majority is, often: the waiter's own events
    // then show the gate PENDING, which made this test flaky when it read them). The late release
    // is then delivered at once, on the notice's thread.
    CountDownLatch refusedAfterTheRelease = new CountDownLatch(1);
    AtomicLong lateReleaseDone = new AtomicLong();
    gate.admin().command("CONFIG", "SET", "notify-keyspace-events", "K$");
    CountDownLatch watching = new CountDownLatch(1);
    JedisPubSub afterTheRelease =
        new JedisPubSub() {
          @Override
          public void onMessage(String channel, String message) {
            if (message.equals("set") && refusedAfterTheRelease.getCount() > 0) {
              for (RedisProcess node : late) {
                node.admin().command("DEL", first); // the release, late
              }
              lateReleaseDone.set(System.nanoTime());
              refusedAfterTheRelease.countDown();
            }
          }

          @Override
          public void onSubscribe(String channel, int count) {
            watching.countDown();
          }
        };
    Jedis keyspace = new Jedis(gate.host(), gate.port());

    ExecutorService threads = Executors.newCachedThreadPool();
    threads.submit(() -> keyspace.subscribe(afterTheRelease, "__keyspace@0__:" + second));
    assertTrue(watching.await(10, TimeUnit.SECONDS), "the gate's keyspace notices subscribed");
    try (RedLock holder = redlock(cluster, null);
        RedLock waiter = redlock(cluster, null)) {
      Lease lease = holder.tryAcquire(held, TTL).orElseThrow();
      Future<Lease> waiting =
          threads.submit(
              () -> waiter.acquireAll(List.of(first, second), TTL, Duration.ofSeconds(60)));
      Poll.until("the waiter hears the held resource's gate", () -> subscribers(gate, first) == 1);
      Poll.until(
          "the waiter hears both resources on two masters each",
          () ->
              cluster.nodes().stream().filter(n -> subscribers(n, first) == 1).count() == 2
                  && cluster.nodes().stream().filter(n -> subscribers(n, second) == 1).count()
                      == 2);
      for (RedisProcess node : late) {
        node.admin().command("SET", first, "on-its-way", "PX", "60000");
      }
      long released = System.nanoTime();
      lease.close(); // the resource's gate runs it at once and tells the waiter
      // The notice comes within a round; a waiter that then asks only its set's gate (refused
      // there: the key is still another's) asks the resource's gate next at its timer, whose
      // least pause is half the retry delay.
      long leastTimerPause = SLOW_TIMER.toNanos() / 2;
      assertTrue(
          refusedAfterTheRelease.await(leastTimerPause, TimeUnit.NANOSECONDS),
          "no round of the waiter asked the resource's gate within the timer's least pause ("
              + leastTimerPause / 1_000_000
              + " ms) of the release");
      long lateRelease = lateReleaseDone.get();
      waiting.get(60, TimeUnit.SECONDS).close();
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lateRelease);
      // Refused, it asks every master again after a short pause that doubles from two rounds'
      // time, SET_RETRIES times (Turn), not at its timer.
      assertTrue(
          tookMillis < leastTimerPause / 1_000_000,
          "granted "
              + tookMillis
              + " ms after the late release, "
              + (lateRelease - released) / 1_000_000
              + " ms after the release: not before the timer's least pause");
    } finally {
      afterTheRelease.unsubscribe();
      keyspace.close();
      gate.admin().command("CONFIG", "SET", "notify-keyspace-events", "");
      threads.shutdownNow();
    }
  }

  @Test
  void aTurnThatComesBeforeTheWaitersQueuingAnswerStillNamesIt(RedisCluster cluster)
      throws Exception {
    NoticeLink.Listener[] heard = new NoticeLink.Listener[1];
    try (Wakeups wakeups = wakeups(cluster, SLOW_TIMER, true, heard, true)) {
      byte[] key = bytes("early");
      Turn turn = wakeups.turn(fakeMasters(3), LockKey.of(key), SLOW_TIMER.toNanos());
      Wakeups.Waiter waiter = wakeups.enter(LockKey.of(key));
      waiter.follow(turn);
      // The subscription's confirmation wakes the group once: let it come first.
      waiter.next().get(5, TimeUnit.SECONDS);
      // Armed before its queuing round; the round's answer has not come back (not queuedAs yet)
      // when the release names it.
      CompletableFuture<Void> armed = waiter.next();
      heard[0].notice("early", Wakeups.TURN + turn.name());
      assertTrue(armed.isDone(), "woken");
      assertTrue(turn.takeNamed(), "named: its next round asks every master at once");
      waiter.close();
    }
  }

  /**
   * A woken waiter whose round was refused pauses a random part of a spread that doubles up to the
   * retry delay (here 10 minutes: the average round time is set far above it), not woken again by
   * the notice it already acted on. A release after that round is news: it ends the pause, as it
   * ends the timer's, on the blocking path and the async one. Before, the waiter slept the spread
   * out (in CI, a set's waiter still in the rounds its subscription's confirmation started heard
   * the holder's release and slept past the timer's least pause). The notices are delivered by
   * hand: the link's own (its confirmations) are not passed on, so nothing else wakes the waiter.
   */
  @ParameterizedTest(name = "async: {0}")
  @ValueSource(booleans = {false, true})
  void aReleaseDuringTheSpreadPauseAfterAWokenRoundEndsIt(boolean async, RedisCluster cluster)
      throws Exception {
    Duration retryDelay = Duration.ofMinutes(10);
    NoticeLink.Listener[] heard = new NoticeLink.Listener[1];
    Wakeups wakeups = wakeups(cluster, retryDelay, false, heard, false);
    for (int i = 0; i < 200; i++) {
      wakeups.rounds().took(TimeUnit.HOURS.toNanos(1)); // every spread is the retry delay
    }
    List<FakeNode> fakes = new ArrayList<>();
    List<String> names = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      FakeNode fake = new FakeNode(new FakeTicker());
      fake.onSet = FakeNode.Answer.TAKEN;
      fakes.add(fake);
      names.add("master-" + i);
    }
    Coordinator coordinator =
        new Coordinator(
            FakeMasters.of(fakes, names, Ticker.system()),
            new Events(Events.none()),
            new Preflight(false, 0),
            new Coordinator.Settings(
                0.01,
                0,
                retryDelay.toNanos(),
                false,
                false,
                60_000,
                0,
                TimeUnit.SECONDS.toNanos(1)),
            wakeups);
    ExecutorService threads = Executors.newSingleThreadExecutor();
    try {
      LockKey.Set set = LockKey.of(List.of(bytes("spread-a"), bytes("spread-b")));
      long wait = retryDelay.toNanos();
      Future<Attempt> attempt =
          async
              ? coordinator.acquireAsync("spread", set, 10_000, wait, a -> a)
              : threads.submit(() -> coordinator.retry("spread", set, 10_000, wait, false));
      // Refused, it waits on both members' notices, and on its timer (5 to 15 minutes).
      Poll.until("the waiter waits", () -> sent(fakes) > 0 && wakeups.subscribed() == 2);
      int first = sent(fakes);
      // A release of a member: its next round asks every master, and is refused.
      heard[0].notice("spread-a", "released-once");
      Poll.until("the woken round asked every master", () -> sent(fakes) == first + fakes.size());
      for (FakeNode fake : fakes) {
        fake.onSet = FakeNode.Answer.GRANT;
      }
      // Releases until one comes while the waiter pauses (one that came while its round ran is
      // one the round saw): the first of those ends the pause.
      long released = System.nanoTime();
      long deadline = released + TimeUnit.SECONDS.toNanos(5);
      while (!attempt.isDone() && System.nanoTime() - deadline < 0) {
        heard[0].notice("spread-a", "released-again");
        try {
          attempt.get(50, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          // not yet: release again
        }
      }
      assertTrue(
          attempt.isDone(),
          "not granted within 5 s of the releases that followed its refused round: it slept");
      Attempt granted = attempt.get();
      assertTrue(granted.grant() != null, "granted: " + granted.outcomes());
    } finally {
      threads.shutdownNow();
      coordinator.close();
    }
  }

  /**
   * Wake-ups over one real link, to the first master; {@code heard[0]} is set to their listener, so
   * that a test can deliver notices by hand. With {@code linkTells} false, what the link itself
   * hears (its confirmations too) is not passed on: only the notices delivered by hand wake anyone.
   */
  private static Wakeups wakeups(
      RedisCluster cluster,
      Duration retryDelay,
      boolean handOff,
      NoticeLink.Listener[] heard,
      boolean linkTells) {
    NoticeLink.Listener unheard = new DeafListener();
    return new Wakeups(
        Ticker.system(),
        retryDelay.toNanos(),
        handOff,
        listener -> {
          heard[0] = listener;
          return List.of(
              new NoticeLink(
                  NodeAddress.parse(cluster.uris().get(0)),
                  TimeUnit.SECONDS.toNanos(1),
                  null,
                  linkTells ? listener : unheard));
        });
  }

  private static int sent(List<FakeNode> fakes) {
    int sent = 0;
    for (FakeNode fake : fakes) {
      sent += fake.received().size();
    }
    return sent;
  }

  private static RedLock redlock(RedisCluster cluster, RedLockListener listener) {
    RedLockBuilder builder =
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(Duration.ofMillis(200))
            .retryDelay(SLOW_TIMER);
    if (listener != null) {
      builder.listener(listener);
    }
    RedLock redlock = builder.build();
    redlock.admitFreshNodes();
    return redlock;
  }
}
