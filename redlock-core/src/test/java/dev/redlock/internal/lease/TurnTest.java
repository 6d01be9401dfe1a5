package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.ForwardingNodeClient;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.Vote;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * An acquisition's place among a resource's waiters, decided round by round on fake masters: when
 * it queues and under what name, which notices name it, the retries after a naming, the staleness
 * its gate is told, the leave, and the answers an attempt shows for the masters a gated round did
 * not ask.
 */
class TurnTest {

  private static final List<String> NAMES = List.of("a:1", "b:2", "c:3", "d:4", "e:5");
  private static final long RETRY_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  private static final String CLIENT = "0123456789abcdef";

  private final FakeTicker ticker = new FakeTicker();
  private final List<Recording> nodes = new ArrayList<>();
  private final List<FakeNode> fakes = new ArrayList<>();
  private final Masters masters;

  TurnTest() {
    for (int i = 0; i < NAMES.size(); i++) {
      FakeNode fake = new FakeNode(ticker);
      fakes.add(fake);
      nodes.add(new Recording(fake));
    }
    masters = FakeMasters.of(nodes, NAMES, ticker);
  }

  @Test
  void aWaiterIsNamedOnlyByItsOwnNameAndAPollingAcquisitionByNone() {
    for (int i = 0; i < 64; i++) {
      assertEquals(32, turn(bytes("r")).name().length(), "16 hex digits of its own, always");
    }
    Turn turn = turn(bytes("r"));
    String name = turn.name();
    assertTrue(name.startsWith(CLIENT), name);
    assertSame(name, turn.name(), "made once");
    assertTrue(turn.isNamedBy(name));
    assertFalse(turn.isNamedBy(CLIENT + "f".repeat(16)));
    Turn polling = new Turn(masters, LockKey.of(bytes("r")), RETRY_DELAY_NANOS, false, CLIENT);
    assertEquals(
        Vote.GRANTED,
        polling.acquire(nodes.get(0), 0, plain(bytes("r"))).join().status(),
        "the plain acquire's answer");
    assertNull(nodes.get(0).waiter, "not asked in turn");
    assertNull(polling.name(), "it does not queue: no name");
    assertFalse(polling.isNamedBy(name));
  }

  @Test
  void aRoundRefusedAtItsGateQueuesTheWaiterThereAndAnyOtherEndsThat() {
    byte[] key = bytes("r");
    Turn turn = turn(key);
    int gate = masters.gateOf(key);
    assertNull(turn.queuedAs());
    turn.decided(gate, refused(gate, Vote.TAKEN));
    assertEquals(turn.name(), turn.queuedAs(), "refused at the gate: queued");
    turn.decided(-1, refused(gate, Vote.TAKEN));
    assertNull(turn.queuedAs(), "a round without a gate queues nowhere");
    turn.decided(gate, refused(gate, Vote.GONE));
    assertNull(turn.queuedAs(), "the gate did not refuse in turn");
  }

  /**
   * A round decided before its gate answered (a slow gate, passed by: the others refused) leaves
   * the waiter unqueued; the gate's refusal in turn, when it comes, queues it after all, whichever
   * comes first, the answer or the decision. An older round's late answer changes nothing.
   */
  @Test
  void aGateThatRefusesAfterItsRoundWasDecidedStillQueuesTheWaiter() {
    byte[] key = bytes("r");
    Turn turn = turn(key);
    int gate = masters.gateOf(key);
    FakeNode slow = fakes.get(gate);
    slow.onSet = FakeNode.Answer.HANG;
    turn.acquire(nodes.get(gate), gate, plain(key));
    turn.decided(gate, refused(gate, Vote.PENDING));
    assertNull(turn.queuedAs(), "not heard from the gate yet");
    slow.hanging.poll().complete(Vote.TAKEN);
    assertEquals(turn.name(), turn.queuedAs(), "the gate's refusal came after: queued there");

    turn.acquire(nodes.get(gate), gate, plain(key));
    slow.hanging.poll().complete(Vote.TAKEN); // after the round was decided, before it was told
    turn.decided(gate, refused(gate, Vote.PENDING));
    assertEquals(turn.name(), turn.queuedAs(), "the refusal came before the decision was taken");

    turn.acquire(nodes.get(gate), gate, plain(key));
    turn.decided(gate, refused(gate, Vote.PENDING));
    CompletableFuture<Vote> older = slow.hanging.poll();
    turn.acquire(nodes.get(gate), gate, plain(key));
    turn.decided(gate, refused(gate, Vote.GONE));
    older.complete(Vote.TAKEN);
    assertNull(turn.queuedAs(), "an older round's answer, after a newer round was decided");
  }

  @Test
  void aWaiterWhoseGateIsTheFirstMasterQueuesThereToo() {
    byte[] key = keyWithGate(0);
    Turn turn = turn(key);
    assertTrue(turn.queueAtOnce(), "its gate can be asked");
    turn.decided(0, refused(0, Vote.TAKEN));
    assertEquals(turn.name(), turn.queuedAs());
    assertFalse(turn.queueAtOnce(), "queued already");
  }

  @Test
  void theGateIsToldTheWaitersNameAndHowLongItStaysQueuedWithoutAsking() {
    byte[] key = bytes("r");
    Turn turn = turn(key);
    int gate = masters.gateOf(key);
    CompletableFuture<NodeReply> reply = turn.acquire(nodes.get(gate), gate, plain(key));
    assertEquals(Vote.GRANTED, reply.join().status(), "the gate's answer");
    Recording asked = nodes.get(gate);
    assertEquals(turn.name(), asked.waiter);
    // Twice the retry delay and twice the node timeout: 2 * 50 ms + 2 * 50 ms.
    assertEquals(200, asked.staleMillis);
    Turn fast = new Turn(masters, LockKey.of(key), 0, true, CLIENT);
    fast.acquire(nodes.get(gate), gate, plain(key));
    assertEquals(100, asked.staleMillis, "the node timeouts alone");
  }

  @Test
  void theLeaveTellsTheGateItQueuedAtOnceAndEndsTheWanting() {
    byte[] key = keyWithGate(0);
    Turn turn = turn(key);
    assertTrue(turn.wanted());
    turn.acquire(nodes.get(0), 0, plain(key));
    turn.leave();
    assertFalse(turn.wanted(), "stopped: a late gate opens no round");
    assertEquals(List.of(turn.name()), nodes.get(0).left, "left the queue at its gate");
    turn.leave();
    assertEquals(1, nodes.get(0).left.size(), "once");
    Turn never = turn(key);
    never.leave();
    assertTrue(nodes.get(0).left.size() == 1, "never queued: nothing to leave");
  }

  /**
   * An acquisition that stopped (an asynchronous one cancelled) after its round was built but
   * before the gate was asked does not queue there: a waiter queued with no one left to leave would
   * keep the others behind it until it went stale.
   */
  @Test
  void aWaiterThatStoppedBeforeItsGateWasAskedQueuesNothing() {
    byte[] key = keyWithGate(0);
    Turn turn = turn(key);
    turn.leave();
    CompletableFuture<NodeReply> reply = turn.acquire(nodes.get(0), 0, plain(key));
    assertTrue(reply.isCompletedExceptionally(), "not asked: " + reply);
    assertEquals(List.of(), nodes.get(0).calls, "nothing asked of the gate");
  }

  /**
   * A cancel whose leave runs while the acquire in turn is being handed to the gate (it saw the
   * waiter queued there, or not yet) is followed by a leave sent after that acquire: the gate's
   * last word from this waiter is its leave, whichever way the race went.
   */
  @Test
  void aLeaveRacingTheGatesCallIsSentAfterIt() {
    byte[] key = keyWithGate(0);
    Turn turn = turn(key);
    nodes.get(0).whileQueuing = turn::leave;
    turn.acquire(nodes.get(0), 0, plain(key));
    List<String> calls = nodes.get(0).calls;
    assertEquals("leave:" + turn.name(), calls.get(calls.size() - 1), "the gate's calls: " + calls);
  }

  @Test
  void aGrantLeavesTheQueueBeforeTheCallerHasTheLease() {
    byte[] key = keyWithGate(0);
    Turn turn = turn(key);
    turn.acquire(nodes.get(0), 0, plain(key));
    turn.decided(0, granted());
    assertFalse(turn.wanted());
    assertEquals(List.of(turn.name()), nodes.get(0).left);
  }

  @Test
  void aNamedWaiterThatIsRefusedTriesEveryMasterAgain() {
    byte[] key = bytes("r");
    int gate = masters.gateOf(key);
    Turn turn = turn(key);
    assertFalse(turn.takeNamed(), "not named");
    turn.named();
    assertTrue(turn.takeNamed(), "named: its next round asks every master");
    assertFalse(turn.takeNamed(), "once per naming");
    assertTrue(turn.wasNamed(), "its round is a named one");
    // Its round, in turn at the gate and at every master at once, overtook the release: refused
    // by the others, the gate not heard in time. Not queued.
    turn.decided(gate, refused(gate, Vote.PENDING));
    assertTrue(turn.takeNamed(), "asks everyone again");
    assertTrue(turn.wasNamed());
    turn.decided(gate, refused(gate, Vote.TAKEN)); // refused at the gate: queued again
    assertEquals(turn.name(), turn.queuedAs(), "queued: the next release names it");
    assertTrue(turn.takeNamed(), "and it asks everyone again meanwhile");
  }

  /**
   * A named waiter refused at its gate is queued there again, but the key that refused it may be a
   * failed round's (a client that was not waiting, or a set's waiter, asks the gate past the
   * queue), whose cleanup is quiet: no release will name it. So it still asks every master again,
   * {@link Turn#NAMED_RETRIES} rounds in all, and then waits to be named. Found by the simulation:
   * a named waiter slept its timer, 12 to 73 ms against a bound of 10 (the calm faults together, 7
   * seeds of 1,400). Red before: it stopped at its first refusal at the gate.
   */
  @Test
  void aNamedWaiterRefusedAtItsGateStillAsksEveryMasterAFewRounds() {
    byte[] key = bytes("r");
    int gate = masters.gateOf(key);
    Turn turn = turn(key);
    turn.named();
    // The gate's key held: refused there, queued.
    assertEquals(Turn.NAMED_RETRIES, namedRounds(turn, gate, refused(gate, Vote.TAKEN)));
    assertFalse(turn.wasNamed(), "then it waits to be named");
    turn.named(); // the next release names it: retries anew
    assertTrue(turn.takeNamed());
  }

  @Test
  void aWaiterWhoseGateIsTheFirstMasterIsNamedAndRetriesAsAnyOther() {
    Turn turn = turn(keyWithGate(0));
    turn.named();
    assertTrue(turn.takeNamed());
    turn.decided(0, refused(0, Vote.PENDING));
    assertTrue(turn.takeNamed(), "refused, not queued: asks everyone again");
  }

  @Test
  void aRefusedRoundOfAWaiterNotNamedNamesNothingAndKeepsANamingNotYetTaken() {
    byte[] key = bytes("r");
    int gate = masters.gateOf(key);
    Turn turn = turn(key);
    turn.decided(gate, refused(gate, Vote.PENDING));
    assertFalse(turn.takeNamed(), "never named");
    assertFalse(turn.wasNamed());
    turn.named(); // a release named it while its round ran
    turn.decided(gate, refused(gate, Vote.PENDING));
    assertTrue(turn.takeNamed(), "the naming waits for its next round");
  }

  @Test
  void aSetNoticedRetriesEveryMasterAFixedNumberOfRounds() {
    LockKey.Set set = LockKey.of(List.of(bytes("r"), bytes("s")));
    Turn turn = turn(set);
    Turn single = turn(bytes("r"));
    single.noticed();
    assertFalse(single.takeNamed(), "a single resource heeds only its naming");

    turn.noticed();
    assertFalse(turn.wasNamed(), "noticed: its named round has not begun");
    assertEquals(Turn.SET_RETRIES, namedRounds(turn, -1, refused(0, Vote.TAKEN)));
    assertFalse(turn.wasNamed());
  }

  /**
   * A set's waiter named by the release at one of its resources' gates retries every master as
   * after a plain notice: that release may not have reached the other masters yet (named once and
   * refused, it slept its timer: WakeUpRacesIT's set test failed once in four runs under load).
   */
  @Test
  void aSetNamedRetriesEveryMasterAsAfterAPlainNotice() {
    Turn turn = turn(LockKey.of(List.of(bytes("r"), bytes("s"))));
    turn.named();
    assertEquals(Turn.SET_RETRIES, namedRounds(turn, -1, refused(0, Vote.TAKEN)));
  }

  /**
   * A set's waiter (issue 32, R6) is queued at each of its resources' gates, as a single waiter is
   * at its one gate: after each refused round it joins there (named by its own name, with its stale
   * window), never asks there in turn (its rounds take every key at once), is not queued as a
   * single waiter is (any notice wakes it), and leaves every one of them when granted; a release
   * naming it names it.
   */
  @Test
  void aSetsWaiterJoinsEachOfItsResourcesQueuesAfterARefusedRoundAndLeavesThemWhenGranted() {
    byte[] r = keyWithGate(1);
    byte[] s = keyWithGate(3);
    LockKey.Set set =
        LockKey.of(List.of(r, s).stream().sorted(java.util.Arrays::compareUnsigned).toList());
    Turn turn = turn(set);
    String name = turn.name();
    assertTrue(name.startsWith(CLIENT), name);
    int gate = masters.gateOf(set.bytes());
    turn.nextGate();
    turn.decided(-1, refused(gate, Vote.TAKEN));
    assertEquals(List.of("join:" + name), nodes.get(1).calls, "joined at r's gate");
    assertEquals(List.of("join:" + name), nodes.get(3).calls, "joined at s's gate");
    assertEquals(200, nodes.get(1).staleMillis, "with its stale window, as a single waiter's");
    assertNull(turn.queuedAs(), "not queued as a single waiter: any notice wakes it");
    assertEquals(
        Vote.GRANTED,
        turn.acquire(nodes.get(gate), gate, new Command.Acquire(set, bytes("t"), 1_000, false, 0))
            .join()
            .status(),
        "its round's acquire at the set's gate is the plain one");
    assertNull(nodes.get(gate).waiter, "never asked in turn");
    assertTrue(turn.isNamedBy(name), "a release naming it names it");
    turn.decided(gate, refused(gate, Vote.TAKEN));
    assertEquals(List.of("join:" + name, "join:" + name), nodes.get(1).calls, "asked again");
    turn.decided(-1, granted());
    assertEquals(List.of("join:" + name, "join:" + name, "leave:" + name), nodes.get(1).calls);
    assertEquals(List.of("join:" + name, "join:" + name, "leave:" + name), nodes.get(3).calls);
    turn.leave();
    assertEquals(3, nodes.get(1).calls.size(), "left once");
    turn.decided(-1, refused(gate, Vote.TAKEN));
    assertEquals(3, nodes.get(3).calls.size(), "stopped: joins nothing again");
  }

  @Test
  void aRefusedGatedRoundShowsEachUnaskedMastersLatestAnswerButNotAGrant() {
    byte[] key = bytes("r");
    int gate = masters.gateOf(key);
    Turn turn = turn(key);
    List<Outcome> first = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      Vote vote = i == gate ? Vote.TAKEN : i == (gate + 1) % 5 ? Vote.GRANTED : Vote.GONE;
      first.add(new Outcome(NAMES.get(i), vote, 0, ""));
    }
    Attempt firstAttempt = new Attempt(null, first, false);
    assertSame(firstAttempt, turn.decided(-1, firstAttempt), "the first: as it was");
    Attempt gated = refused(gate, Vote.TAKEN);
    List<Outcome> shown = turn.decided(gate, gated).outcomes();
    for (int i = 0; i < NAMES.size(); i++) {
      Vote expected = i == gate ? Vote.TAKEN : i == (gate + 1) % 5 ? Vote.PENDING : Vote.GONE;
      assertEquals(expected, shown.get(i).vote(), "master " + i + ": " + shown);
    }
    Attempt again = refused(gate, Vote.TAKEN);
    List<Outcome> later = turn.decided(gate, again).outcomes();
    assertEquals(Vote.GONE, later.get((gate + 2) % 5).vote(), "still the latest it knows");
  }

  @Test
  void aGrantedAttemptIsShownAsItWas() {
    byte[] key = bytes("r");
    int gate = masters.gateOf(key);
    Turn turn = turn(key);
    turn.decided(-1, refused(gate, Vote.GONE));
    Attempt granted = granted();
    assertSame(granted, turn.decided(-1, granted));
    Attempt allPending = refused(gate, Vote.PENDING);
    Turn fresh = turn(key);
    fresh.decided(-1, allPending);
    assertSame(allPending, fresh.decided(-1, allPending), "nothing known to fill in");
  }

  // ---- helpers

  private Turn turn(byte[] key) {
    return turn(LockKey.of(key));
  }

  private Turn turn(LockKey key) {
    return new Turn(masters, key, RETRY_DELAY_NANOS, true, CLIENT);
  }

  /** An attempt refused: {@code vote} at {@code gate}, the other masters not heard (PENDING). */
  /**
   * How many rounds {@code turn} asks every master at once (each a named round) while each ends as
   * {@code refusal} (gated by {@code gate}); fails if they do not end.
   */
  private static int namedRounds(Turn turn, int gate, Attempt refusal) {
    int rounds = 0;
    while (turn.takeNamed()) {
      rounds++;
      assertTrue(turn.wasNamed(), "a named round");
      turn.decided(gate, refusal);
      assertTrue(rounds <= 2 * Turn.SET_RETRIES, "the retries never end");
    }
    return rounds;
  }

  private static Attempt refused(int gate, Vote vote) {
    List<Outcome> outcomes = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      outcomes.add(new Outcome(NAMES.get(i), i == gate ? vote : Vote.PENDING, 0, ""));
    }
    return new Attempt(null, outcomes, false);
  }

  private Attempt granted() {
    List<Outcome> outcomes = new ArrayList<>();
    for (String name : NAMES) {
      outcomes.add(new Outcome(name, Vote.GRANTED, 0, ""));
    }
    long deadline = ticker.read() + TimeUnit.SECONDS.toNanos(10);
    Grant grant =
        new Grant(null, "r", LockKey.of(bytes("r")), bytes("t"), deadline, 1, null, deadline);
    return new Attempt(grant, outcomes, false);
  }

  private byte[] keyWithGate(int gate) {
    for (int i = 0; i < 10_000; i++) {
      byte[] key = bytes("r" + i);
      if (masters.gateOf(key) == gate) {
        return key;
      }
    }
    throw new AssertionError("no key with gate " + gate);
  }

  /** The round's acquire of {@code key}, which a turn sends as it is where it does not queue. */
  private static Command.Acquire plain(byte[] key) {
    return new Command.Acquire(LockKey.of(key), bytes("t"), 1_000, false, 0);
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Records what the gate is told: the waiter, its staleness, the leaves, and the order of the
   * queue's calls ({@code queue:} or {@code leave:} and the waiter).
   */
  private static final class Recording extends ForwardingNodeClient {
    volatile String waiter;
    volatile long staleMillis = -1;
    final List<String> left = new ArrayList<>();
    final List<String> calls = new ArrayList<>();

    /** Runs as the acquire in turn is handed to this master, before it is sent. */
    volatile Runnable whileQueuing = () -> {};

    Recording(FakeNode node) {
      super(node);
    }

    @Override
    public <R> CompletableFuture<R> send(Command<R> command) {
      if (command instanceof Command.AcquireInTurn inTurn) {
        this.waiter = new String(inTurn.waiter(), StandardCharsets.US_ASCII);
        this.staleMillis = inTurn.staleMillis();
        whileQueuing.run();
        calls.add("queue:" + this.waiter);
      } else if (command instanceof Command.Join join) {
        this.staleMillis = join.staleMillis();
        calls.add("join:" + new String(join.waiter(), StandardCharsets.US_ASCII));
      } else if (command instanceof Command.Leave leave) {
        String name = new String(leave.waiter(), StandardCharsets.US_ASCII);
        left.add(name);
        calls.add("leave:" + name);
      }
      return super.send(command);
    }
  }
}
