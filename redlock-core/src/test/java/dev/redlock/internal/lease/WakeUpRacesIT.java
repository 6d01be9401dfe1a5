package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.KeySet;
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
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

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

  /** The waiter's retry timer: a pause of 1 to 3 s between rounds. */
  private static final Duration SLOW_TIMER = Duration.ofSeconds(2);

  private static final Duration TTL = Duration.ofSeconds(10);

  private final AtomicLong releasedAt = new AtomicLong(Long.MAX_VALUE);
  private final CountDownLatch refusedAfterTheRelease = new CountDownLatch(1);

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
      if (gateRank(bytes(a), 3) != gateRank(KeySet.encode(List.of(bytes(a), bytes(b))), 3)) {
        held = a;
        other = b;
      }
    }
    List<RedisProcess> byName = new ArrayList<>(cluster.nodes());
    byName.sort(Comparator.comparing(n -> n.host() + ":" + n.port()));
    RedisProcess gate = byName.get(gateRank(bytes(held), 3));

    ExecutorService threads = Executors.newCachedThreadPool();
    try (RedLock holder = redlock(cluster);
        RedLock waiter = redlock(cluster)) {
      Lease lease = holder.tryAcquire(held, TTL).orElseThrow();
      String first = held;
      String second = other;
      Future<Lease> waiting =
          threads.submit(
              () -> waiter.acquireAll(List.of(first, second), TTL, Duration.ofSeconds(30)));
      Poll.until("the waiter hears the held resource's gate", () -> subscribers(gate, first) == 1);
      Poll.until(
          "the waiter hears both resources on two masters each",
          () ->
              cluster.nodes().stream().filter(n -> subscribers(n, first) == 1).count() == 2
                  && cluster.nodes().stream().filter(n -> subscribers(n, second) == 1).count()
                      == 2);
      // The release reaches the other masters late: there the key is another's until the
      // waiter's first round after the release was refused. The resource's gate runs it at once
      // and tells the waiter.
      for (RedisProcess node : cluster.nodes()) {
        if (node != gate) {
          node.admin().command("SET", held, "on-its-way", "PX", "30000");
        }
      }
      long released = System.nanoTime();
      releasedAt.set(released);
      lease.close();
      assertTrue(refusedAfterTheRelease.await(30, TimeUnit.SECONDS), "no round after the release");
      for (RedisProcess node : cluster.nodes()) {
        if (node != gate) {
          node.admin().command("DEL", held); // the release, late
        }
      }
      Lease got = waiting.get(30, TimeUnit.SECONDS);
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
      got.close();
      // The timer's shortest pause is 1 s: a round refused by the set's gate waited for it.
      assertTrue(tookMillis < 200, "granted after " + tookMillis + " ms");
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void aTurnThatComesBeforeTheWaitersQueuingAnswerStillNamesIt(RedisCluster cluster)
      throws Exception {
    NoticeLink.Listener[] heard = new NoticeLink.Listener[1];
    try (Wakeups wakeups =
        new Wakeups(
            Ticker.system(),
            SLOW_TIMER.toNanos(),
            true,
            listener -> {
              heard[0] = listener;
              return List.of(
                  new NoticeLink(
                      NodeAddress.parse(cluster.uris().get(0)),
                      TimeUnit.SECONDS.toNanos(1),
                      null,
                      listener));
            })) {
      byte[] key = bytes("early");
      Turn turn = wakeups.turn(fakeMasters(3), key, SLOW_TIMER.toNanos());
      Wakeups.Waiter waiter = wakeups.enter(key);
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

  private RedLock redlock(RedisCluster cluster) {
    RedLock redlock =
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(Duration.ofMillis(200))
            .retryDelay(SLOW_TIMER)
            .listener(
                new RedLockListener() {
                  @Override
                  public void denied(
                      String resource,
                      Denial reason,
                      List<NodeOutcome> outcomes,
                      Duration elapsed) {
                    // A round that began after the release was sent (told on the event thread).
                    if (System.nanoTime() - elapsed.toNanos() > releasedAt.get()) {
                      refusedAfterTheRelease.countDown();
                    }
                  }
                })
            .build();
    redlock.admitFreshNodes();
    return redlock;
  }
}
