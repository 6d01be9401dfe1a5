package dev.redlock.internal.transport;

import static dev.redlock.internal.transport.ScriptMasters.OTHER;
import static dev.redlock.internal.transport.ScriptMasters.TOKEN;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLocks;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * queue.lua on five real masters, through waiters' acquisitions ({@code RedLock.acquire} with a
 * wait: every round after the first asks the resource's gate master first, where waiters queue).
 * The gate sets the key only when it is free; a waiter that gives up or goes stale leaves the
 * queue; a first waiter granted at the gate again and again without ever winning yields its place.
 * The gate is found as the master where a waiter's queue appears (docs/fairness.md).
 */
class QueueScriptIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final Duration TTL = Duration.ofSeconds(10);

  /**
   * A waiter's stale window with {@link ScriptMasters#redlock}: 2 retry delays + 2 node timeouts.
   */
  private static final Duration STALE =
      RedLock.DEFAULT_RETRY_DELAY.plus(ScriptMasters.NODE_TIMEOUT).multipliedBy(2);

  /** A retry delay far longer than a test: a waiter so configured asks again only when woken. */
  private static final Duration SLOW = Duration.ofSeconds(2);

  /** The stale window of a waiter with the {@link #SLOW} retry delay: 5 s. */
  private static final Duration SLOW_STALE = SLOW.plus(ScriptMasters.NODE_TIMEOUT).multipliedBy(2);

  private final ExecutorService threads = Executors.newCachedThreadPool();
  private final List<AutoCloseable> closing = new ArrayList<>();

  @AfterEach
  void closeEverything() throws Exception {
    threads.shutdownNow();
    for (AutoCloseable c : closing) {
      c.close();
    }
  }

  private RedLock redlock(RedisCluster cluster) {
    RedLock redlock = ScriptMasters.redlock(cluster);
    closing.add(redlock);
    return redlock;
  }

  private RedLock redlock(RedisCluster cluster, Duration retryDelay, Duration nodeTimeout) {
    RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(nodeTimeout)
                .retryDelay(retryDelay)
                .build());
    closing.add(redlock);
    return redlock;
  }

  private static String queueKey(String resource) {
    return "redlock:queue:" + resource;
  }

  private static String seenKey(String resource) {
    return "redlock:queue-seen:" + resource;
  }

  private static List<?> members(RedisAdmin admin, String key) {
    return (List<?>) admin.command("ZRANGE", key, "0", "-1");
  }

  /**
   * With {@code resource} held by another client on every master, has a waiter queue and give up
   * (interrupted): returns the master where it queued, its gate. The key stays taken everywhere.
   * Its leave must empty the queue long before the queue's keys would expire (its stale window, 5
   * s).
   */
  private int gateOf(RedisCluster cluster, String resource) throws Exception {
    return ScriptMasters.findGate(cluster, resource);
  }

  /**
   * A holder on a bare majority that includes the gate (its keys on the two others lost, expired or
   * deleted): the first queued waiter is refused at the gate. Set there regardless, its key would
   * replace the holder's, and with the two free masters make a second lease.
   */
  @Test
  void theFirstWaiterNeverTakesTheGateFromAHolder(RedisCluster cluster) throws Exception {
    String resource = "gated";
    RedLock holder = redlock(cluster);
    RedLock waiter = redlock(cluster);
    Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
    String token = cluster.node(0).admin().get(resource);
    Future<Lease> waiting =
        threads.submit(() -> waiter.acquire(resource, TTL, Duration.ofSeconds(30)));
    Poll.until(
        Duration.ofSeconds(5),
        () -> ScriptMasters.queueAt(cluster, resource) >= 0,
        () -> "the waiter queued");
    int gate = ScriptMasters.queueAt(cluster, resource);
    int lost = 0;
    for (int i = 0; i < 5 && lost < 2; i++) {
      if (i != gate) {
        cluster.node(i).admin().command("DEL", resource);
        lost++;
      }
    }
    // Each of its rounds now asks the gate first: three of them refused there, and no lease.
    RedisAdmin admin = cluster.node(gate).admin();
    long rounds = ScriptMasters.scriptCalls(admin) + 3;
    Poll.until(
        Duration.ofSeconds(5),
        () -> waiting.isDone() || ScriptMasters.scriptCalls(admin) >= rounds,
        () -> "three more rounds at the gate");
    assertFalse(
        waiting.isDone(), "a second lease, granted while the holder held the gate and one more");
    waiting.cancel(true);
    assertEquals(token, admin.get(resource), "the holder's key at the gate");
    assertTrue(held.isValid(), "the holder's lease");
    held.close();
  }

  /**
   * A waiter granted at the gate whose round failed on the others (a majority is another's) and
   * that then gives up leaves nothing at the gate: not its place in the queue, not when it last
   * asked, not the note of its first grant there. While it waits, the queue's keys expire one stale
   * window after it last asked, so a waiter that vanishes leaves nothing for long either.
   */
  @Test
  void aWaiterGrantedAtTheGateThatGivesUpLeavesNothingThere(RedisCluster cluster) throws Exception {
    String resource = "left";
    int gate = gateOf(cluster, resource);
    RedisAdmin admin = cluster.node(gate).admin();
    admin.command("DEL", resource); // free at the gate only
    // Asks at its first round, then once in turn, then only when woken: its queue's keys last its
    // stale window (5 s) after that, so anything left before then was left by its leave.
    RedLock waiter = redlock(cluster, SLOW, ScriptMasters.NODE_TIMEOUT);
    Future<Lease> waiting = threads.submit(() -> waiter.acquire(resource, TTL, SLOW));
    Poll.until(
        Duration.ofSeconds(5),
        () ->
            members(admin, seenKey(resource)).stream().anyMatch(m -> ((String) m).startsWith(">")),
        () -> "its first grant at the gate noted: " + members(admin, seenKey(resource)));
    for (String key : List.of(queueKey(resource), seenKey(resource))) {
      long left = admin.pttl(key);
      assertTrue(left > 0 && left <= SLOW_STALE.toMillis(), key + " expires in " + left + " ms");
    }
    waiting.cancel(true); // gives up
    Poll.until(
        SLOW_STALE.dividedBy(2),
        () -> members(admin, queueKey(resource)).isEmpty(),
        () -> "left the queue: " + members(admin, queueKey(resource)));
    assertEquals(List.of(), members(admin, seenKey(resource)), "left behind at the gate");
  }

  /**
   * A waiter that stops asking (it crashed while first) is dropped one stale window after it last
   * asked, by the next waiter's round there: until then that waiter is refused at the gate, free as
   * it is; then it is granted.
   */
  @Test
  void aFirstWaiterThatStoppedAskingIsDroppedAfterItsStaleWindow(RedisCluster cluster)
      throws Exception {
    String resource = "stale";
    int gate = gateOf(cluster, resource);
    RedisAdmin admin = cluster.node(gate).admin();
    RedLock waiter = redlock(cluster);
    // A ghost queued first, last seen now, configured as the waiter is: it goes stale one such
    // window from now (queue.lua scores a waiter with when it goes stale).
    long seen = ScriptMasters.timeMicros(admin);
    admin.command("ZADD", queueKey(resource), "0", "ghost");
    admin.command("ZADD", seenKey(resource), Long.toString(seen + STALE.toNanos() / 1000), "ghost");
    Future<Lease> waiting =
        threads.submit(() -> waiter.acquire(resource, TTL, STALE.multipliedBy(4)));
    Poll.until(
        Duration.ofSeconds(5),
        () -> members(admin, queueKey(resource)).stream().anyMatch(m -> !m.equals("ghost")),
        () -> "queued: " + members(admin, queueKey(resource)));
    // Free on the gate and two others: a majority needs the gate, where it is the ghost's turn.
    admin.command("DEL", resource);
    int freed = 0;
    for (int i = 0; i < 5 && freed < 2; i++) {
      if (i != gate) {
        cluster.node(i).admin().command("DEL", resource);
        freed++;
      }
    }
    Lease got = waiting.get(10, TimeUnit.SECONDS);
    long grantedBy = ScriptMasters.timeMicros(admin);
    long left = admin.pttl(resource);
    assertTrue(left > 0 && left <= TTL.toMillis(), "the key set at the gate expires in " + left);
    got.close();
    assertTrue(
        grantedBy - seen >= STALE.toNanos() / 1000,
        "granted "
            + (grantedBy - seen) / 1000
            + " ms after the ghost last asked; its stale window is "
            + STALE.toMillis()
            + " ms");
    assertNull(admin.command("ZSCORE", queueKey(resource), "ghost"), "the ghost is dropped");
  }

  /**
   * A first waiter that is granted at the gate each time it asks but can never win elsewhere (its
   * restart guard finds every master too young) yields its place to the waiter behind it once it
   * was granted there for two stale windows: the waiter behind is granted then, not at the end of
   * the first one's wait.
   */
  @Test
  void aFirstWaiterThatCannotWinYieldsItsPlace(RedisCluster cluster) throws Exception {
    String resource = "unwinnable";
    Duration nodeTimeout = ScriptMasters.NODE_TIMEOUT;
    RedLock holder =
        closing(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(nodeTimeout)
                .restartGuard(false)
                .build());
    // Masters never admitted: its restart guard counts no vote. No breakers: a loaded machine's
    // slow answers must not take the gate out of its rounds.
    RedLock guarded =
        closing(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(nodeTimeout)
                .circuitBreakers(false)
                .build());
    RedLock unguarded =
        closing(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(nodeTimeout)
                .restartGuard(false)
                .build());
    Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
    Future<Lease> first =
        threads.submit(() -> guarded.acquire(resource, TTL, Duration.ofSeconds(30)));
    Poll.until(
        Duration.ofSeconds(5),
        () -> ScriptMasters.queueAt(cluster, resource) >= 0,
        () -> "the guarded waiter queued");
    int gate = ScriptMasters.queueAt(cluster, resource);
    RedisAdmin admin = cluster.node(gate).admin();
    // Two stale windows of the unguarded client's: 2 x (2 retry delays + 2 node timeouts).
    Duration bound = RedLock.DEFAULT_RETRY_DELAY.plus(nodeTimeout).multipliedBy(4);
    Future<Lease> second =
        threads.submit(() -> unguarded.acquire(resource, TTL, bound.multipliedBy(4)));
    Poll.until(
        Duration.ofSeconds(5),
        () -> members(admin, queueKey(resource)).size() == 2,
        () -> "the unguarded waiter queued second: " + members(admin, queueKey(resource)));
    // Another client holds the key on two masters besides the gate: a majority needs the gate,
    // so no round of the unguarded waiter that asks every master at once wins past the queue.
    int[] blocked = IntStream.range(0, 5).filter(i -> i != gate).limit(2).toArray();
    ScriptMasters.takenByAnother(cluster, resource, 60_000, blocked);
    held.close(); // the guarded waiter's turn: granted at the gate, by no majority
    second.get(30, TimeUnit.SECONDS).close();
    assertFalse(first.isDone(), "the guarded waiter is still waiting");
    first.cancel(true);
    Poll.until(
        STALE,
        () -> members(admin, queueKey(resource)).size() <= 1,
        () -> "the unguarded waiter left the queue: " + members(admin, queueKey(resource)));
    for (int i : blocked) {
      assertEquals(OTHER, cluster.node(i).admin().get(resource), "master " + i);
    }
  }

  /** The stale window the tests that run queue.lua directly give it (ARGV[5]), in ms. */
  private static final long WINDOW = 10_000;

  /** Three waiters' names, as a client makes them: its 16 hex digits, then 16 of the waiter's. */
  private static final String A = "aaaaaaaaaaaaaaaa0000000000000001";

  private static final String B = "bbbbbbbbbbbbbbbb0000000000000002";
  private static final String C = "cccccccccccccccc0000000000000003";

  /**
   * queue.lua on {@code admin}'s master for {@code waiter}: an acquire of {@code resource} ({@link
   * #TTL}, our token) with the stale window {@link #WINDOW}. Returns whether the key was set.
   */
  private static boolean ask(RedisAdmin admin, String resource, String waiter) {
    return ask(admin, resource, waiter, WINDOW);
  }

  /** As {@link #ask(RedisAdmin, String, String)}, with the stale window {@code window} ms. */
  private static boolean ask(RedisAdmin admin, String resource, String waiter, long window) {
    List<?> reply =
        (List<?>)
            ScriptMasters.eval(
                admin,
                "queue.lua",
                scriptKeys(resource),
                "acquire",
                TOKEN,
                Long.toString(TTL.toMillis()),
                waiter,
                Long.toString(window));
    Object set = reply.get(1);
    assertTrue(set == null || set.equals("OK"), "the acquire's answer: " + reply);
    return set != null;
  }

  private static void leave(RedisAdmin admin, String resource, String waiter) {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      keys.add(resource + ":unused" + i);
    }
    keys.add(queueKey(resource));
    keys.add(seenKey(resource));
    assertEquals(
        1L,
        ScriptMasters.eval(
            admin, "queue.lua", keys, "leave", TOKEN, "1", waiter, Long.toString(WINDOW)));
  }

  /**
   * Makes {@code waiter} one that last asked {@code ago} before now with the stale window {@link
   * #WINDOW} (only if it is queued): the last-asked set scores a waiter with when it goes stale.
   */
  private static void askedAgo(RedisAdmin admin, String resource, String waiter, Duration ago) {
    long staleBy = ScriptMasters.timeMicros(admin) - ago.toNanos() / 1000 + WINDOW * 1000;
    admin.command("ZADD", seenKey(resource), "XX", Long.toString(staleBy), waiter);
  }

  /**
   * Moves the note of {@code waiter}'s first grant back to {@code ago} before now (only if it is
   * there): the note is scored with the time negated.
   */
  private static void firstGrantedAgo(
      RedisAdmin admin, String resource, String waiter, Duration ago) {
    long then = ScriptMasters.timeMicros(admin) - ago.toNanos() / 1000;
    admin.command("ZADD", seenKey(resource), "XX", Long.toString(-then), ">" + waiter);
  }

  private static long score(RedisAdmin admin, String key, String member) {
    Object score = admin.command("ZSCORE", key, member);
    assertTrue(score != null, member + " not in " + key + ": " + members(admin, key));
    return (long) Double.parseDouble((String) score);
  }

  /**
   * A waiter is queued, and noted as last asked, at the master's clock in microseconds ({@code
   * TIME}), the unit its stale window is counted in; the queue's keys expire one stale window
   * (ARGV[5], in ms) after the last ask, so nothing is kept for a resource no one waits on; the key
   * it sets when its turn comes lives the TTL in ms.
   */
  @Test
  void aWaiterIsQueuedAtTheMastersClockInMicroseconds(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "clock-queue";
    admin.command("SET", resource, OTHER, "PX", "60000");
    long before = ScriptMasters.timeMicros(admin);
    assertFalse(ask(admin, resource, A), "granted while held");
    long after = ScriptMasters.timeMicros(admin);
    long at = score(admin, queueKey(resource), A);
    assertTrue(
        before <= at && at <= after,
        "queued at " + at + ", not in [" + before + ", " + after + "]");
    long stale = score(admin, seenKey(resource), A) - WINDOW * 1000; // when it goes stale
    assertTrue(
        before <= stale && stale <= after,
        "stale by " + stale + " less its window, not in [" + before + ", " + after + "]");
    for (String key : List.of(queueKey(resource), seenKey(resource))) {
      long left = admin.pttl(key);
      assertTrue(left > 0 && left <= WINDOW, key + " expires in " + left + " ms");
    }
    admin.command("DEL", resource);
    assertTrue(ask(admin, resource, A), "its turn, free");
    assertEquals(TOKEN, admin.get(resource));
    long left = admin.pttl(resource);
    assertTrue(left > 0 && left <= TTL.toMillis(), "the key set in turn expires in " + left);
  }

  /**
   * The next waiter's ask drops every waiter that last asked more than one stale window ago (it
   * crashed), with the note of its first grant; a waiter within its window stays.
   */
  @Test
  void aWaiterIsDroppedOneStaleWindowAfterItLastAsked(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "sweep-queue";
    assertTrue(ask(admin, resource, A), "the first, free");
    admin.command("SET", resource, OTHER, "PX", "60000"); // its round failed; another's now
    assertFalse(ask(admin, resource, B), "B, while held");
    // A (granted then, so noted) last asked just over a window ago; B just within one.
    askedAgo(admin, resource, A, Duration.ofMillis(WINDOW + 1_000));
    firstGrantedAgo(admin, resource, A, Duration.ofMillis(WINDOW + 1_000));
    askedAgo(admin, resource, B, Duration.ofMillis(WINDOW - 1_000));
    assertFalse(ask(admin, resource, C), "C, while held");
    assertEquals(List.of(B, C), members(admin, queueKey(resource)), "the queue after the sweep");
    assertEquals(
        List.of(B, C),
        members(admin, seenKey(resource)).stream().map(String.class::cast).sorted().toList(),
        "the last-asked set after the sweep");
  }

  /**
   * A waiter goes stale by its own window, never by the asking client's: a client with a short
   * window (short retry delays and node timeouts) that asks after another client's waiter, with a
   * long window, went quiet for longer than the short window leaves that waiter first in the queue
   * (it is its turn, free as the key is), and the queue's keys live until the long window ends.
   */
  @Test
  void aShortWindowNeverDropsAnotherClientsLiveWaiter(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "short-asker";
    admin.command("SET", resource, OTHER, "PX", "60000");
    assertFalse(ask(admin, resource, A), "A, while held"); // its window: 10 s
    long askedA = ScriptMasters.timeMicros(admin);
    Poll.until(
        Duration.ofSeconds(5),
        () -> ScriptMasters.timeMicros(admin) - askedA > 300_000,
        () -> "300 ms on the master's clock");
    admin.command("DEL", resource);
    assertFalse(ask(admin, resource, B, 100), "B (100 ms window) granted in A's turn");
    assertEquals(List.of(A, B), members(admin, queueKey(resource)), "the queue");
    for (String key : List.of(queueKey(resource), seenKey(resource))) {
      long left = admin.pttl(key);
      assertTrue(left > WINDOW - 1_000, key + " expires in " + left + " ms, before A goes stale");
    }
  }

  /**
   * And the other way round: a waiter with a short window that went quiet for longer than it is
   * dropped by the next ask of a client with a long window, and the lock is that client's turn.
   */
  @Test
  void aShortWindowsWaiterGoesStaleWhoeverAsksNext(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "long-asker";
    admin.command("SET", resource, OTHER, "PX", "60000");
    assertFalse(ask(admin, resource, B, 100), "B (100 ms window), while held");
    long askedB = ScriptMasters.timeMicros(admin);
    assertFalse(ask(admin, resource, A), "A (10 s window), while held: queued behind B");
    Poll.until(
        Duration.ofSeconds(5),
        () -> ScriptMasters.timeMicros(admin) - askedB > 300_000,
        () -> "300 ms on the master's clock");
    admin.command("DEL", resource);
    assertTrue(ask(admin, resource, A), "A (10 s window), B stale by its own window");
    assertEquals(List.of(A), members(admin, queueKey(resource)), "the queue");
  }

  /**
   * A waiter's leave takes it out of the queue and the last-asked set, and its first grant's note
   * too: a vanished waiter's entries would otherwise stay until the queue's keys expire.
   */
  @Test
  void aWaiterThatLeavesLeavesNothingBehind(RedisCluster cluster) {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "leave-queue";
    assertTrue(ask(admin, resource, A), "the first, free");
    admin.command("DEL", resource);
    assertFalse(ask(admin, resource, B), "B behind A");
    leave(admin, resource, A);
    assertEquals(List.of(B), members(admin, queueKey(resource)), "the queue");
    assertEquals(List.of(B), members(admin, seenKey(resource)), "the last-asked set");
  }

  /**
   * A first waiter granted at the gate again more than two stale windows after its first grant
   * there, with another waiting, yields: it is refused, goes to the back of the queue, its note
   * goes, and the waiter now first is told it is its turn (on its client's own channel, or, if that
   * client does not hear it, on the resource's). Alone, or within the bound, it is granted.
   */
  @Test
  void aFirstWaiterGrantedForTwoStaleWindowsYieldsItsPlace(RedisCluster cluster) throws Exception {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "yield-queue";
    Duration longAgo = Duration.ofMillis(2 * WINDOW + 1_000);
    // Alone, it keeps its place however long ago its first grant was.
    long before = ScriptMasters.timeMicros(admin);
    assertTrue(ask(admin, resource, A), "the first, free");
    long noted = -score(admin, seenKey(resource), ">" + A);
    assertTrue(noted >= before, "its first grant noted at " + noted + ", before " + before);
    admin.command("DEL", resource);
    firstGrantedAgo(admin, resource, A, longAgo);
    assertTrue(ask(admin, resource, A), "alone, and granted long ago");
    admin.command("DEL", resource);
    // With B behind it: within two windows it is granted, past them it yields to B.
    assertFalse(ask(admin, resource, B), "B behind A");
    firstGrantedAgo(admin, resource, A, Duration.ofMillis(2 * WINDOW - 1_000));
    assertTrue(ask(admin, resource, A), "granted within two windows");
    admin.command("DEL", resource);
    firstGrantedAgo(admin, resource, A, longAgo);
    String clientB = "redlock:wake:@bbbbbbbbbbbbbbbb";
    try (Notices notices = new Notices(cluster, resource, clientB)) {
      assertFalse(ask(admin, resource, A), "granted past two windows, with B waiting");
      assertNull(admin.get(resource), "the key set");
      assertEquals(List.of(B, A), members(admin, queueKey(resource)), "the queue after the yield");
      assertNull(admin.command("ZSCORE", seenKey(resource), ">" + A), "A's note kept");
      assertEquals(List.of("0 " + clientB + " turn:" + B + resource), notices.messages(), "told");
    }
    // B yields back to A the same way; A's client does not listen: told on the resource's channel.
    assertTrue(ask(admin, resource, B), "B's turn");
    admin.command("DEL", resource);
    firstGrantedAgo(admin, resource, B, longAgo);
    try (Notices notices = new Notices(cluster, resource)) {
      assertFalse(ask(admin, resource, B), "B past two windows, with A waiting");
      assertEquals(List.of(A, B), members(admin, queueKey(resource)), "the queue after B yields");
      assertEquals(
          List.of("0 redlock:wake:" + resource + " turn:" + A), notices.messages(), "told");
    }
  }

  /**
   * The first waiter leaving while the key is free (its wait cancelled or out of time) tells the
   * waiter now first that it is its turn, on that waiter's client's channel (or, if no one hears it
   * there, on the resource's), as a release or a yield does: before, the next waiter learned it
   * only at its timer (the simulation saw a resource free 110 ms so). A waiter leaving from behind
   * the first, and the first leaving while it holds the key (granted: its release tells), tell no
   * one.
   */
  @Test
  void aFirstWaiterThatLeavesWhileTheKeyIsFreeTellsTheNextItsTurn(RedisCluster cluster)
      throws Exception {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "leave-turn";
    String clientC = "redlock:wake:@cccccccccccccccc";
    assertTrue(ask(admin, resource, A), "the first, free: granted");
    assertFalse(ask(admin, resource, B), "B behind A");
    assertFalse(ask(admin, resource, C), "C behind B");
    try (Notices notices = new Notices(cluster, resource, clientC)) {
      leaveAt(admin, resource, C); // from behind the first
      leaveAt(admin, resource, A); // the first, holding the key
      assertEquals(List.of(), notices.messages(), "no one told");
    }
    assertFalse(ask(admin, resource, C), "C behind B again");
    admin.command("DEL", resource); // A's release
    try (Notices notices = new Notices(cluster, resource, clientC)) {
      leaveAt(admin, resource, B); // the first, the key free
      assertEquals(List.of(C), members(admin, queueKey(resource)), "the queue");
      assertEquals(List.of("0 " + clientC + " turn:" + C + resource), notices.messages(), "told");
    }
    assertFalse(ask(admin, resource, A), "A behind C");
    try (Notices notices = new Notices(cluster, resource)) { // A's client does not listen
      leaveAt(admin, resource, C);
      assertEquals(
          List.of("0 redlock:wake:" + resource + " turn:" + A), notices.messages(), "told");
    }
  }

  /**
   * A join queues a set's waiter (issue 32, R6) as an acquire queues one, but never sets the key:
   * while it is first, the waiters behind it are refused even with the key free; first with the key
   * free for the first time since it queued, it is told its turn at once, once; held or behind
   * another, not. Its turns with the key free count as grants: past two stale windows, with others
   * waiting, it yields to the next, who is told.
   */
  @Test
  void aJoinedWaiterHoldsItsPlaceWithoutTheKeyAndYieldsAsAGrantedOne(RedisCluster cluster)
      throws Exception {
    RedisAdmin admin = cluster.node(0).admin();
    String resource = "join-queue";
    String clientA = "redlock:wake:@aaaaaaaaaaaaaaaa";
    String clientB = "redlock:wake:@bbbbbbbbbbbbbbbb";
    admin.command("SET", resource, OTHER);
    try (Notices notices = new Notices(cluster, resource, clientA)) {
      assertEquals(1L, join(admin, resource, A), "first, the key held");
      assertEquals(List.of(), notices.messages(), "not told: the key is held");
    }
    admin.command("DEL", resource);
    try (Notices notices = new Notices(cluster, resource, clientA)) {
      assertEquals(1L, join(admin, resource, A), "first, the key free");
      assertEquals(List.of("0 " + clientA + " turn:" + A + resource), notices.messages(), "told");
    }
    assertNull(admin.get(resource), "a join never sets the key");
    try (Notices notices = new Notices(cluster, resource, clientA, clientB)) {
      assertFalse(ask(admin, resource, B), "B behind A, refused with the key free");
      assertEquals(0L, join(admin, resource, C), "C behind B");
      assertEquals(1L, join(admin, resource, A), "A still first");
      assertEquals(List.of(), notices.messages(), "told once only, and no one behind");
    }
    assertEquals(List.of(A, B, C), members(admin, queueKey(resource)), "the queue");
    firstGrantedAgo(admin, resource, A, Duration.ofMillis(2 * WINDOW - 1_000));
    assertEquals(1L, join(admin, resource, A), "within two windows, still first");
    firstGrantedAgo(admin, resource, A, Duration.ofMillis(2 * WINDOW + 1_000));
    try (Notices notices = new Notices(cluster, resource, clientB)) {
      assertEquals(0L, join(admin, resource, A), "past two windows, with others waiting");
      assertEquals(List.of(B, C, A), members(admin, queueKey(resource)), "the queue after");
      assertEquals(List.of("0 " + clientB + " turn:" + B + resource), notices.messages(), "told");
    }
    assertNull(admin.get(resource), "the key still free");
    assertTrue(ask(admin, resource, B), "B's turn");
  }

  /** queue.lua's join for {@code waiter} (the stale window {@link #WINDOW}): 1 if first, else 0. */
  private static Object join(RedisAdmin admin, String resource, String waiter) {
    return ScriptMasters.eval(
        admin, "queue.lua", scriptKeys(resource), "join", "", "0", waiter, Long.toString(WINDOW));
  }

  /**
   * The keys the library sends queue.lua for {@code resource}: the lock's first, the queue's last.
   */
  private static List<String> scriptKeys(String resource) {
    return List.of(
        resource,
        "redlock:fence",
        "redlock:test:marker",
        "redlock:test:admitted",
        queueKey(resource),
        seenKey(resource));
  }

  /** queue.lua's leave for {@code waiter}, with the keys the library sends (the lock's first). */
  private static void leaveAt(RedisAdmin admin, String resource, String waiter) {
    assertEquals(
        1L,
        ScriptMasters.eval(
            admin, "queue.lua", scriptKeys(resource), "leave", "", "0", waiter, "0"));
  }

  private RedLock closing(RedLock redlock) {
    closing.add(redlock);
    return redlock;
  }
}
