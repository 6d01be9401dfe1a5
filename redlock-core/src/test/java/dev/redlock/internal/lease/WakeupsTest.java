package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NoticeLink;
import dev.redlock.internal.transport.TransportHooks;
import dev.redlock.internal.transport.Vote;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Who a notice wakes, decided on this side of the links: the notices, confirmations and losses are
 * told to the wake-ups by hand, as the links' threads tell them, so each case is exact. The links
 * are real but never connect (a closed port, their own events heard by no one): only the
 * subscriptions they are asked for matter, and the threads they start, which the close ends.
 */
class WakeupsTest {

  private static final List<String> NAMES = List.of("a:1", "b:2", "c:3", "d:4", "e:5");
  private static final long RETRY_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  private static final String R = "r";
  private static final String S = "s";
  private static final String T = "t";

  private final FakeTicker ticker = new FakeTicker();
  private final Set<Thread> threadsBefore = Thread.getAllStackTraces().keySet();
  private final List<dev.redlock.internal.transport.Subscriber> links = new ArrayList<>();
  private NoticeLink.Listener heard;
  private final Wakeups wakeups =
      new Wakeups(
          ticker,
          RETRY_DELAY_NANOS,
          true,
          listener -> {
            heard = listener;
            return DeafListener.deafLinks(3, links);
          });

  @AfterEach
  void close() {
    wakeups.close();
  }

  // ---- waiters not queued

  @Test
  void aNoticeWakesTheArmedWaitersOfItsResourceOnly() {
    Wakeups.Waiter r = wakeups.enter(LockKey.of(bytes(R)));
    Wakeups.Waiter s = wakeups.enter(LockKey.of(bytes(S)));
    CompletableFuture<Void> rNext = r.next();
    CompletableFuture<Void> sNext = s.next();
    assertFalse(rNext.isDone(), "nothing heard yet");
    heard.notice(R, "release-1");
    assertTrue(rNext.isDone(), "woken");
    assertFalse(sNext.isDone(), "another resource's waiter sleeps on");
    assertFalse(r.next().isDone(), "that notice was had: the next one waits");
  }

  @Test
  void aNoticeThatCameBetweenTwoRoundsIsFoundWhenTheWaiterArmsNext() {
    Wakeups.Waiter r = wakeups.enter(LockKey.of(bytes(R)));
    heard.notice(R, "release-1"); // while its round ran: not armed
    assertTrue(r.next().isDone(), "a release it may have missed: it asks again at once");
    assertFalse(r.next().isDone(), "once");
    Wakeups.Waiter late = wakeups.enter(LockKey.of(bytes(R)));
    assertFalse(late.next().isDone(), "a waiter that came after the notice did not miss it");
  }

  @Test
  void theFirstConfirmationWakesTheGroupAndOnlyOneAfterAResetWakesItAgain() {
    Wakeups.Waiter r = wakeups.enter(LockKey.of(bytes(R)));
    CompletableFuture<Void> first = r.next();
    heard.subscribed(R, false);
    assertTrue(first.isDone(), "the first confirmation: a release may have come before it");
    CompletableFuture<Void> second = r.next();
    heard.subscribed(R, false); // another master's
    assertFalse(second.isDone(), "another master's confirmation wakes no one again");
    heard.subscribed(R, true);
    assertTrue(second.isDone(), "a confirmation after a reset: notices may have been lost");
  }

  @Test
  void aLostLinkWakesTheGroupsItCarriedOnly() {
    wakeups.hearFrom(
        key ->
            switch (new String(key, StandardCharsets.ISO_8859_1)) {
              case R -> new int[] {0, 1};
              case S -> new int[] {2};
              default -> new int[] {3, -1}; // none of the links: every link
            });
    CompletableFuture<Void> r = wakeups.enter(LockKey.of(bytes(R))).next();
    CompletableFuture<Void> s = wakeups.enter(LockKey.of(bytes(S))).next();
    CompletableFuture<Void> t = wakeups.enter(LockKey.of(bytes(T))).next();
    heard.lost(links.get(0));
    assertTrue(r.isDone(), "r is heard on link 0");
    assertFalse(s.isDone(), "s only on link 2");
    assertTrue(t.isDone(), "t, named no link of ours, on every link");
    heard.lost(links.get(2));
    assertTrue(s.isDone());
  }

  @Test
  void theClientsOwnChannelNamesTheWaiterAndTheResourceAndIgnoresAnythingElse() {
    Turn turn = queuedTurn(R);
    Wakeups.Waiter r = following(turn, R);
    CompletableFuture<Void> next = r.next();
    String channel = Wakeups.CLIENT + turn.name().substring(0, 16);
    heard.notice(channel, Wakeups.TURN + turn.name()); // no resource after the waiter
    heard.notice(channel, "release-1" + turn.name() + R); // not a turn
    heard.notice(channel, Wakeups.TURN + "short"); // cut short
    assertFalse(next.isDone(), "neither is a notice");
    heard.notice(channel, Wakeups.TURN + turn.name() + R);
    assertTrue(next.isDone(), "its turn, told on its client's channel");
    assertTrue(turn.takeNamed(), "the turn hears it was named");
  }

  @Test
  void aConfirmationOfTheClientsChannelAfterAResetWakesEveryGroup() {
    Turn turn = queuedTurn(R);
    String channel = Wakeups.CLIENT + turn.name().substring(0, 16);
    CompletableFuture<Void> r = wakeups.enter(LockKey.of(bytes(R))).next();
    CompletableFuture<Void> s = wakeups.enter(LockKey.of(bytes(S))).next();
    heard.subscribed(channel, false);
    assertFalse(r.isDone(), "the first confirmation of the client's channel is no news");
    heard.subscribed(channel, true);
    assertTrue(r.isDone(), "turns named while the link was down are lost: every group asks");
    assertTrue(s.isDone());
  }

  @Test
  void theWaitersSubscribeTheirLinksAndTheLastToLeaveUnsubscribes() {
    wakeups.hearFrom(
        key ->
            new String(key, StandardCharsets.ISO_8859_1).equals(R)
                ? new int[] {0, 1}
                : new int[] {1});
    Wakeups.Waiter r1 = wakeups.enter(LockKey.of(bytes(R)));
    Wakeups.Waiter r2 = wakeups.enter(LockKey.of(bytes(R)));
    String client = clientChannel((NoticeLink) links.get(0));
    assertEquals(Set.of(R, client), wanted(0), "its resource, and the client's channel");
    assertEquals(Set.of(R, client), wanted(1));
    assertEquals(Set.of(), wanted(2), "a link it does not hear");
    Wakeups.Waiter s = wakeups.enter(LockKey.of(bytes(S)));
    assertEquals(Set.of(R, S, client), wanted(1));
    r1.close();
    r1.close(); // idempotent: r2 still waits
    assertEquals(Set.of(R, S, client), wanted(1), "r2 still waits");
    r2.close();
    assertEquals(Set.of(), wanted(0), "no group left there: the client's channel goes too");
    assertEquals(Set.of(S, client), wanted(1));
    s.close();
    assertEquals(Set.of(), wanted(1));
    assertEquals(0, wakeups.subscribed());
  }

  @Test
  void noCallLeavesTheLockHeld() throws Exception {
    Turn turn = queuedTurn(R);
    String channel = Wakeups.CLIENT + turn.name().substring(0, 16);
    Wakeups.Waiter r = wakeups.enter(LockKey.of(bytes(R)));
    r.next();
    heard.notice(R, "release-1");
    heard.notice(channel, Wakeups.TURN + turn.name() + R);
    heard.subscribed(R, false);
    heard.subscribed(channel, true);
    heard.lost(links.get(0));
    wakeups.releasedToWaiters(bytes(R));
    wakeups.handOffNanos(bytes(R));
    wakeups.subscribed();
    r.next();
    r.close();
    onAnotherThread(wakeups::subscribed);
    wakeups.close();
    onAnotherThread(wakeups::subscribed);
  }

  // ---- queued waiters

  @Test
  void aQueuedWaiterSleepsThroughAnotherWaitersTurnAndWakesAtItsOwn() {
    Turn turn = queuedTurn(R);
    Wakeups.Waiter queued = following(turn, R);
    Wakeups.Waiter plain = wakeups.enter(LockKey.of(bytes(R)));
    CompletableFuture<Void> queuedNext = queued.next();
    CompletableFuture<Void> plainNext = plain.next();
    heard.notice(R, Wakeups.TURN + "f".repeat(Wakeups.WAITER_LENGTH));
    assertFalse(queuedNext.isDone(), "another waiter's turn");
    assertTrue(plainNext.isDone(), "a waiter not queued wakes at any notice");
    assertFalse(turn.takeNamed());

    heard.notice(R, Wakeups.TURN + turn.name());
    assertTrue(queuedNext.isDone(), "its own turn");
    assertTrue(turn.takeNamed(), "named");
    assertTrue(plain.next().isDone(), "the other waiter missed that one between its rounds");
  }

  @Test
  void aQueuedWaiterBetweenRoundsMissesOnlyItsOwnTurnsAndTheConfirmations() {
    Turn turn = queuedTurn(R);
    Wakeups.Waiter queued = following(turn, R);
    heard.notice(R, Wakeups.TURN + "f".repeat(Wakeups.WAITER_LENGTH));
    heard.notice(R, "release-1"); // plain: the queued waiter is told by its turn
    CompletableFuture<Void> armed = queued.next();
    assertFalse(armed.isDone(), "nothing it waits for came between its rounds");

    heard.notice(R, Wakeups.TURN + turn.name());
    assertTrue(armed.isDone(), "its turn, armed");
    assertTrue(turn.takeNamed(), "named");
    heard.notice(R, Wakeups.TURN + turn.name()); // again, not armed: its round was running
    assertTrue(queued.next().isDone(), "its turn came between its rounds");
    assertTrue(turn.takeNamed(), "and the turn hears it was named");

    CompletableFuture<Void> next = queued.next();
    assertFalse(next.isDone(), "once");
    heard.subscribed(R, false);
    assertTrue(next.isDone(), "a confirmation: a release may have been missed");
    heard.lost(links.get(1)); // not armed
    assertTrue(queued.next().isDone(), "a lost link, between rounds, likewise");
    assertFalse(queued.next().isDone());
  }

  @Test
  void anArmedQueuedWaiterWakesAtAPlainNoticeThatNamesNoOne() {
    Turn turn = queuedTurn(R);
    Wakeups.Waiter queued = following(turn, R);
    CompletableFuture<Void> next = queued.next();
    heard.notice(R, "release-1");
    assertTrue(next.isDone(), "a plain release, the gate silent: it asks");
    assertFalse(turn.takeNamed(), "a single resource's turn heeds only its naming");
  }

  // ---- sets, the bound, the close

  @Test
  void aSetsTurnHearsAPlainNoticeOfAnyResourceButNotAConfirmation() {
    LockKey.Set set = LockKey.of(List.of(bytes(R), bytes(S)));
    Turn turn = wakeups.turn(masters(), set, RETRY_DELAY_NANOS);
    Wakeups.Waiter waiter = wakeups.enter(set);
    waiter.follow(turn);
    waiter.next();
    heard.subscribed(R, false);
    assertFalse(turn.takeNamed(), "a confirmation is no release");
    waiter.next();
    heard.notice(S, "release-1");
    assertTrue(turn.takeNamed(), "a plain release of one of its resources: it asks everyone");
  }

  @Test
  void aWaiterBeyondTheBoundOrClosedIsNeverWoken() {
    Wakeups.Waiter r = wakeups.enter(LockKey.of(bytes(R)));
    r.close();
    CompletableFuture<Void> closed = r.next();
    heard.notice(R, "release-1");
    assertFalse(closed.isDone(), "closed: never woken again");
    try (Wakeups deaf = new Wakeups(ticker, RETRY_DELAY_NANOS, true, listener -> List.of())) {
      assertFalse(deaf.on());
      Wakeups.Waiter timersOnly = deaf.enter(LockKey.of(bytes(R)));
      assertFalse(timersOnly.woken());
      assertFalse(timersOnly.next().isDone());
    }
    assertTrue(wakeups.on());
    try (Contention polling = Contention.polling()) {
      Contention.Waiting timersOnly = polling.enter(LockKey.of(bytes(R)));
      assertFalse(timersOnly.woken());
      assertNull(timersOnly.next(), "polling: the timer alone ends each pause");
      Turn turn = polling.turn(masters(), LockKey.of(bytes(R)), RETRY_DELAY_NANOS);
      assertFalse(turn.queueAtOnce(), "polling: never queued at a gate");
      assertEquals(0, polling.handOff(bytes(R), turn), "polling: no hand-off pause");
    }
  }

  @Test
  void aRoundAfterAReleaseToWaitersGoesBehindThemAndPausesFirst() {
    Turn behind = wakeups.turn(masters(), LockKey.of(bytes(R)), RETRY_DELAY_NANOS);
    wakeups.releasedToWaiters(bytes(R));
    assertEquals(Wakeups.MIN_HAND_OFF_NANOS, wakeups.handOff(bytes(R), behind), "the pause");
    assertTrue(behind.nextGate() >= 0, "its first round goes through the gate");
    Turn first = wakeups.turn(masters(), LockKey.of(bytes(R)), RETRY_DELAY_NANOS);
    assertEquals(0, wakeups.handOff(bytes(R), first), "each release answered once");
    assertEquals(-1, first.nextGate(), "a first round asks every master at once");
  }

  @Test
  void afterThePauseTheRoundStillGoesBehindTheWaitersForTheRetryDelayNotAtItsEnd() {
    wakeups.releasedToWaiters(bytes(R));
    ticker.advance(Duration.ofNanos(Wakeups.MIN_HAND_OFF_NANOS + RETRY_DELAY_NANOS - 1));
    assertEquals(0, wakeups.handOffNanos(bytes(R)), "behind them, at once");
    wakeups.releasedToWaiters(bytes(S));
    ticker.advance(Duration.ofNanos(Wakeups.MIN_HAND_OFF_NANOS + RETRY_DELAY_NANOS));
    assertEquals(Wakeups.NO_WAITERS, wakeups.handOffNanos(bytes(S)), "over");
  }

  @Test
  void aWokenWaitersSpreadIsTwoRoundsDoublingWithEachSplitUpToTheCap() {
    long round = wakeups.rounds().nanos();
    long far = TimeUnit.HOURS.toNanos(1);
    assertEquals(2 * round, wakeups.rounds().spreadNanos(0, far));
    assertEquals(4 * round, wakeups.rounds().spreadNanos(1, far));
    assertEquals(
        (2 * round) << 16, wakeups.rounds().spreadNanos(40, far), "the doubling stops at 16");
    assertEquals(3 * round, wakeups.rounds().spreadNanos(5, 3 * round), "capped");
    assertEquals(1, wakeups.rounds().spreadNanos(0, 0), "at least 1 ns");
  }

  @Test
  void aSetsWaiterWakesAtANoticeOfAnyOfItsResources() {
    LockKey.Set set = LockKey.of(List.of(bytes(R), bytes(S)));
    Wakeups.Waiter waiter = wakeups.enter(set);
    assertTrue(waiter.woken());
    assertEquals(2, wakeups.subscribed(), "one group per resource");
    CompletableFuture<Void> next = waiter.next();
    heard.notice(S, "release-1");
    assertTrue(next.isDone());
    waiter.close();
    assertEquals(0, wakeups.subscribed(), "the last to leave unsubscribes");
  }

  @Test
  void atMostMaxGroupsResourcesAreSubscribedAndTheOthersWaitOnTheirTimers() {
    List<Wakeups.Waiter> waiters = new ArrayList<>();
    for (int i = 0; i < Wakeups.MAX_GROUPS; i++) {
      Wakeups.Waiter waiter = wakeups.enter(LockKey.of(bytes("k" + i)));
      assertTrue(waiter.woken(), "within the bound: " + i);
      waiters.add(waiter);
    }
    assertEquals(Wakeups.MAX_GROUPS, wakeups.subscribed());
    Wakeups.Waiter beyond = wakeups.enter(LockKey.of(bytes("one-more")));
    assertFalse(beyond.woken(), "beyond the bound");
    assertFalse(wakeups.enter((LockKey.of(List.of(bytes("x"), bytes("y"))))).woken());
    assertTrue(
        wakeups.enter(LockKey.of(bytes("k0"))).woken(), "a subscribed resource takes more waiters");
    waiters.get(1).close();
    assertTrue(wakeups.enter(LockKey.of(bytes("one-more"))).woken(), "a group left: room for one");
  }

  /**
   * A waiter beyond the bound hears no notice of its resource, so its acquisition does not queue at
   * the gate (queued, only a release naming it would wake it, and first in the queue it would keep
   * the others out between its timer's rounds): its rounds ask every master at once, as a poller's
   * do. One within the bound queues.
   */
  @Test
  void aWaiterBeyondTheBoundDoesNotQueueAtTheGate() {
    Masters masters = masters();
    for (int i = 0; i < Wakeups.MAX_GROUPS; i++) {
      wakeups.enter(LockKey.of(bytes("k" + i)));
    }
    byte[] key = bytes("one-more");
    assertTrue(masters.gateOf(key) >= 0, "the key has a gate");
    Turn beyond = wakeups.turn(masters, LockKey.of(key), RETRY_DELAY_NANOS);
    wakeups.enter(LockKey.of(key)).follow(beyond);
    assertFalse(beyond.queueAtOnce(), "queues at once");
    beyond.nextGate(); // its first round
    assertEquals(-1, beyond.nextGate(), "a later round's gate");
    Turn within = wakeups.turn(masters, LockKey.of(bytes("k0")), RETRY_DELAY_NANOS);
    wakeups.enter(LockKey.of(bytes("k0"))).follow(within);
    assertTrue(within.queueAtOnce(), "within the bound: queues at once");
    within.nextGate();
    assertEquals(masters.gateOf(bytes("k0")), within.nextGate(), "within the bound: gated");
  }

  @Test
  void theCloseForgetsEveryGroupAndHandOffAndEndsTheLinksThreads() throws Exception {
    Wakeups.Waiter r = wakeups.enter(LockKey.of(bytes(R)));
    wakeups.releasedToWaiters(bytes(S));
    assertEquals(1, wakeups.subscribed());
    wakeups.close();
    assertEquals(0, wakeups.subscribed());
    assertEquals(Wakeups.NO_WAITERS, wakeups.handOffNanos(bytes(S)), "hand-offs forgotten");
    assertFalse(wakeups.enter(LockKey.of(bytes(S))).woken(), "closed: timers only");
    assertFalse(r.next().isDone());
    for (Thread thread : Thread.getAllStackTraces().keySet()) {
      if (!threadsBefore.contains(thread) && thread.getName().startsWith("redlock-wake-")) {
        thread.join(TimeUnit.SECONDS.toMillis(10));
        assertFalse(thread.isAlive(), thread.getName() + " still runs");
      }
    }
  }

  @Test
  void atMostMaxHandOffsReleasesAreRememberedTheOldestForgottenFirst() {
    for (int i = 0; i < Wakeups.MAX_HAND_OFFS; i++) {
      wakeups.releasedToWaiters(bytes("k" + i));
    }
    assertTrue(wakeups.handOffNanos(bytes("k0")) > 0, "all " + Wakeups.MAX_HAND_OFFS + " kept");
    wakeups.releasedToWaiters(bytes("k0")); // remembered again: now the newest
    wakeups.releasedToWaiters(bytes("k" + Wakeups.MAX_HAND_OFFS)); // one more: k1 goes
    assertEquals(Wakeups.NO_WAITERS, wakeups.handOffNanos(bytes("k1")), "the oldest forgotten");
    assertTrue(wakeups.handOffNanos(bytes("k0")) > 0);
    assertTrue(wakeups.handOffNanos(bytes("k2")) > 0);
  }

  @Test
  void withoutHandOffNoReleaseIsRemembered() {
    try (Wakeups plain = new Wakeups(ticker, RETRY_DELAY_NANOS, false, listener -> List.of())) {
      plain.releasedToWaiters(bytes(R));
      assertEquals(Wakeups.NO_WAITERS, plain.handOffNanos(bytes(R)));
      assertFalse(plain.enter(LockKey.of(bytes(R))).woken(), "no links: timers only");
    }
  }

  /**
   * The client's and its waiters' names come from the randomness it is given, so that a
   * simulation's seed orders the gates' queues alike every time (a queue orders waiters that first
   * asked in the same microsecond by name).
   */
  @Test
  void namesComeFromTheRandomnessGiven() {
    List<String> first = new ArrayList<>();
    List<String> second = new ArrayList<>();
    for (List<String> names : List.of(first, second)) {
      java.util.Random seeded = new java.util.Random(7);
      try (Wakeups named =
          new Wakeups(
              ticker,
              RETRY_DELAY_NANOS,
              true,
              listener -> DeafListener.deafLinks(3, new ArrayList<>()),
              seeded::nextLong)) {
        for (String resource : List.of("a", "b")) {
          names.add(named.turn(masters(), LockKey.of(bytes(resource)), RETRY_DELAY_NANOS).name());
        }
      }
    }
    assertEquals(first, second);
    assertEquals(2, new java.util.HashSet<>(first).size(), "two waiters, two names: " + first);
    assertEquals(first.get(0).substring(0, 16), first.get(1).substring(0, 16), "one client");
  }

  // ---- helpers

  private Masters masters() {
    List<FakeNode> nodes = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      nodes.add(new FakeNode(ticker));
    }
    return FakeMasters.of(nodes, NAMES, ticker);
  }

  private Set<String> wanted(int link) {
    return TransportHooks.wanted((NoticeLink) links.get(link));
  }

  /** The client's channel among what {@code link} is asked to subscribe. */
  private static String clientChannel(NoticeLink link) {
    return TransportHooks.wanted(link).stream()
        .filter(key -> key.startsWith(Wakeups.CLIENT))
        .findFirst()
        .orElseThrow();
  }

  private static void onAnotherThread(Runnable call) throws Exception {
    CompletableFuture.runAsync(call).get(10, TimeUnit.SECONDS);
  }

  /** A waiter of {@code resource} that follows {@code turn}. */
  private Wakeups.Waiter following(Turn turn, String resource) {
    Wakeups.Waiter waiter = wakeups.enter(LockKey.of(bytes(resource)));
    waiter.follow(turn);
    return waiter;
  }

  /** A turn of {@code resource} queued at its gate by a refused round there. */
  private Turn queuedTurn(String resource) {
    Masters masters = masters();
    byte[] key = bytes(resource);
    Turn turn = wakeups.turn(masters, LockKey.of(key), RETRY_DELAY_NANOS);
    int gate = masters.gateOf(key);
    List<Outcome> outcomes = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      outcomes.add(new Outcome(NAMES.get(i), i == gate ? Vote.TAKEN : Vote.PENDING, 0, ""));
    }
    turn.name();
    turn.decided(gate, new Attempt(null, outcomes, false));
    assertEquals(turn.name(), turn.queuedAs(), "queued");
    return turn;
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.ISO_8859_1);
  }
}
