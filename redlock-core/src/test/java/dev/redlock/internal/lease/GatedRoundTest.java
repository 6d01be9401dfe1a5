package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.lease.QuorumRound.Mode;
import dev.redlock.internal.lease.QuorumRound.Tally;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.ForwardingNodeClient;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.TransportHooks;
import dev.redlock.internal.transport.Vote;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The gated round (a waiter's: see {@link Masters#gateOf}): the gate master is asked first and the
 * others only once it granted or failed, or the gate wait passed; a refusal at the gate decides the
 * round with nothing sent elsewhere, so nothing is to be released there. And every client that
 * names the masters alike picks the same gate for a key, whatever order it configures them in.
 */
class GatedRoundTest {

  private static final List<String> NAMES = List.of("a:1", "b:2", "c:3", "d:4", "e:5");
  private static final int GATE = 2;

  private final long[] timeouts = new long[NAMES.size()];
  private final List<CompletableFuture<NodeReply>> sent =
      new ArrayList<>(Collections.nCopies(NAMES.size(), null));
  private final int[] asked = new int[NAMES.size()];

  GatedRoundTest() {
    Arrays.fill(timeouts, TimeUnit.SECONDS.toNanos(1));
  }

  private QuorumRound start(int gate) {
    return start(gate, () -> true);
  }

  private QuorumRound start(int gate, java.util.function.BooleanSupplier wanted) {
    return start(gate, wanted, QuorumRound.Verdict.AS_ANSWERED);
  }

  private QuorumRound start(
      int gate, java.util.function.BooleanSupplier wanted, QuorumRound.Verdict verdict) {
    return QuorumRound.start(
        NAMES,
        timeouts,
        3,
        Mode.QUORUM,
        Ticker.system(),
        i -> {
          asked[i]++;
          CompletableFuture<NodeReply> reply = new CompletableFuture<>();
          sent.set(i, reply);
          return reply;
        },
        gate,
        wanted,
        verdict);
  }

  private static NodeReply reply(Vote vote) {
    return new NodeReply(vote, 0, 0, "");
  }

  private Tally freeze(QuorumRound round) {
    return round.freeze(Ticker.system().read() + TimeUnit.SECONDS.toNanos(1));
  }

  private static final NodeReply HELD =
      new NodeReply(Vote.RESTARTED, 0, 0, "restarted 3 s ago: votes in 57 s, or once admitted");

  /** A round whose masters below {@code held} are known to refuse, and the rest not asked. */
  private QuorumRound startKnowing(int gate, int held, NodeReply rest) {
    return start(
        gate,
        () -> true,
        new QuorumRound.Verdict() {
          @Override
          public NodeReply known(int i) {
            return i < held ? HELD : rest;
          }
        });
  }

  @Test
  void aMasterKnownToRefuseIsNotAskedLeftNothingAndTimesNoRoundTrip() {
    QuorumRound round = startKnowing(-1, 2, null);
    assertArrayEquals(new int[] {0, 0, 1, 1, 1}, asked, "the two known to refuse are not asked");
    assertFalse(round.decided(), "three can still grant");
    for (int i = 2; i < 5; i++) {
      sent.get(i).complete(reply(Vote.GRANTED));
    }
    Tally tally = freeze(round);
    assertTrue(tally.reachedQuorum());
    for (int i = 0; i < 2; i++) {
      assertEquals(Vote.RESTARTED, tally.outcomes().get(i).vote());
      assertEquals(HELD.detail(), tally.outcomes().get(i).detail());
      assertEquals(null, tally.replies().get(i), "no master's reply");
      assertTrue(tally.landing().leftNothing(i), "sent nothing: nothing to release");
      assertFalse(tally.landing().mayHaveRun(i));
    }
  }

  @Test
  void aRoundTooFewCanWinAsksNoOneNotEvenItsGateAndIsDecidedAtOnce() {
    QuorumRound round = startKnowing(GATE, 3, QuorumRound.NOT_ASKED);
    assertArrayEquals(new int[5], asked, "no master asked");
    assertTrue(round.decided(), "three of five refuse: decided with nothing sent");
    Tally tally = freeze(round);
    assertFalse(tally.reachedQuorum());
    assertFalse(tally.timedByAnswers(), "no round trip: it times nothing");
    for (int i = 0; i < 5; i++) {
      assertTrue(tally.landing().leftNothing(i), "nothing to release at " + i);
    }
    for (int i = 3; i < 5; i++) {
      assertEquals(Vote.PENDING, tally.outcomes().get(i).vote());
      assertEquals(QuorumRound.NOT_ASKED.detail(), tally.outcomes().get(i).detail());
    }
  }

  @Test
  void eachMastersAnswerSaysWhetherTheAcquireMayHaveSetTheKeyThereAndWhetherItLeftNothing() {
    QuorumRound round = start(-1);
    sent.get(0).complete(reply(Vote.GRANTED));
    sent.get(1).complete(reply(Vote.TAKEN));
    sent.get(2).complete(reply(Vote.GONE));
    sent.get(3).completeExceptionally(TransportHooks.lostInFlight("connection lost"));
    // Master 4 has not answered yet.
    Tally tally = freeze(round);
    Landing landing = tally.landing();
    assertTrue(landing.mayHaveRun(0), "granted: our key is there");
    assertFalse(landing.leftNothing(0));
    for (int refused : new int[] {1, 2}) {
      assertFalse(landing.mayHaveRun(refused), "refused: nothing set at " + refused);
      assertTrue(landing.leftNothing(refused), "no release needed at " + refused);
    }
    assertTrue(landing.mayHaveRun(3), "written, then lost: it may have run");
    assertFalse(landing.leftNothing(3));
    assertTrue(landing.lostInFlight(3));
    assertTrue(landing.mayHaveRun(4), "not answered: it may run yet");
    assertFalse(landing.leftNothing(4));
    assertEquals("connection lost", tally.outcomes().get(3).detail(), "its own message");

    sent.get(4).completeExceptionally(new NodeUnavailableException("refused before written"));
    assertFalse(landing.mayHaveRun(4), "failed unwritten, learned after the decision");
    assertFalse(landing.leftNothing(4), "a failure is no refusal: not known to be empty");
  }

  @Test
  void aFailureIsDescribedByItsTypeAndMessageAndARestartedMasterMayHaveSetTheKey() {
    QuorumRound round = start(-1);
    sent.get(1)
        .completeExceptionally(
            new java.util.concurrent.CompletionException(
                new NodeUnavailableException("timed out")));
    sent.get(2).completeExceptionally(new IllegalStateException("boom"));
    sent.get(0).completeExceptionally(new IllegalStateException()); // the third: decided
    Tally tally = freeze(round);
    assertEquals("timed out", tally.outcomes().get(1).detail(), "unwrapped, its own message");
    assertEquals("IllegalStateException: boom", tally.outcomes().get(2).detail());
    assertEquals("IllegalStateException", tally.outcomes().get(0).detail());
    sent.get(3).complete(reply(Vote.RESTARTED)); // learned after the decision
    assertTrue(tally.landing().mayHaveRun(3), "its SET ran: the guard refused it after");
    assertFalse(tally.landing().leftNothing(3));
  }

  @Test
  void aGatedRoundAsksTheGateAlone() {
    start(GATE);
    assertArrayEquals(new int[] {0, 0, 1, 0, 0}, asked);
  }

  @Test
  void anUngatedRoundAsksEveryMasterAtOnce() {
    start(-1);
    assertArrayEquals(new int[] {1, 1, 1, 1, 1}, asked);
  }

  @Test
  void aRefusalAtTheGateDecidesTheRoundWithoutAskingTheOthers() {
    QuorumRound round = start(GATE);
    sent.get(GATE).complete(reply(Vote.TAKEN));

    assertTrue(round.decided(), "refused at the gate: decided at once");
    round.openGate(); // the gate wait passing after the decision asks no one
    assertArrayEquals(new int[] {0, 0, 1, 0, 0}, asked);
    Tally tally = freeze(round);
    assertFalse(tally.reachedQuorum());
    assertEquals(Vote.TAKEN, tally.outcomes().get(GATE).vote());
    for (int i = 0; i < NAMES.size(); i++) {
      if (i != GATE) {
        assertEquals(Vote.PENDING, tally.outcomes().get(i).vote(), "decided without " + i);
        assertFalse(tally.landing().mayHaveRun(i), "never sent to " + i + ": nothing to release");
      }
    }
    assertEquals(0, tally.unreachable(), "a refusal, not an outage");
  }

  @Test
  void aGrantAtTheGateAsksTheOthersAndAMajorityDecides() {
    QuorumRound round = start(GATE);
    sent.get(GATE).complete(reply(Vote.GRANTED));

    assertArrayEquals(new int[] {1, 1, 1, 1, 1}, asked);
    assertFalse(round.decided());
    sent.get(0).complete(reply(Vote.GRANTED));
    sent.get(4).complete(reply(Vote.GRANTED));
    assertTrue(round.decided());
    assertTrue(freeze(round).reachedQuorum());
  }

  /**
   * An acquisition that stopped (an asynchronous one, cancelled) while its gate was asked: the
   * gate's grant, or its failure, no longer asks the others, whose grants would make a lease no one
   * wants; the round is decided at once, no lease, and only the gate may need the release.
   */
  @Test
  void aGateThatAnswersAfterTheAcquisitionStoppedAsksNoOneElse() {
    boolean[] wanted = {true};
    QuorumRound round = start(GATE, () -> wanted[0]);
    wanted[0] = false; // cancelled while the gate is asked
    sent.get(GATE).complete(reply(Vote.GRANTED));

    assertArrayEquals(new int[] {0, 0, 1, 0, 0}, asked, "the others asked");
    assertTrue(round.decided(), "decided at the gate's answer");
    Tally tally = freeze(round);
    assertFalse(tally.reachedQuorum());
    assertTrue(tally.landing().mayHaveRun(GATE), "granted at the gate: released there");
    for (int i = 0; i < NAMES.size(); i++) {
      if (i != GATE) {
        assertFalse(tally.landing().mayHaveRun(i), "never sent to " + i + ": nothing to release");
      }
    }
    QuorumRound failing = start(GATE, () -> false);
    sent.get(GATE).completeExceptionally(new NodeUnavailableException("refused"));
    assertTrue(failing.decided(), "a failed gate opens no round either");
  }

  @Test
  void aGateThatFailsIsPassedBy() {
    QuorumRound round = start(GATE);
    sent.get(GATE).completeExceptionally(new NodeUnavailableException("connection refused"));

    assertArrayEquals(new int[] {1, 1, 1, 1, 1}, asked, "the others decide without the gate");
    for (int i : new int[] {0, 1, 3}) {
      sent.get(i).complete(reply(Vote.GRANTED));
    }
    assertTrue(freeze(round).reachedQuorum());
  }

  @Test
  void theGateWaitAsksTheOthersOnce() {
    QuorumRound round = start(GATE);
    round.openGate(); // the gate did not answer within the gate wait
    round.openGate();
    sent.get(GATE).complete(reply(Vote.GRANTED)); // and its late answer opens nothing more

    assertArrayEquals(new int[] {1, 1, 1, 1, 1}, asked);
    assertFalse(round.decided());
  }

  @Test
  void aRoundThatWaitedForTheGateOrForATimeoutDoesNotTimeTheMasters() {
    QuorumRound answered = start(GATE);
    sent.get(GATE).complete(reply(Vote.GRANTED));
    sent.get(0).complete(reply(Vote.GRANTED));
    sent.get(1).complete(reply(Vote.GRANTED));
    assertTrue(freeze(answered).timedByAnswers(), "decided by answers alone");

    QuorumRound passedBy = start(GATE);
    passedBy.openGate(); // the gate wait passed, the gate silent
    for (int i : new int[] {0, 1, 3}) {
      sent.get(i).complete(reply(Vote.GRANTED));
    }
    Tally afterGateWait = freeze(passedBy);
    assertTrue(afterGateWait.reachedQuorum());
    assertFalse(afterGateWait.timedByAnswers(), "its time holds the gate wait");

    QuorumRound split = start(-1);
    sent.get(0).complete(reply(Vote.GRANTED));
    sent.get(1).complete(reply(Vote.GRANTED));
    sent.get(3).complete(reply(Vote.TAKEN));
    sent.get(4).complete(reply(Vote.TAKEN));
    Tally atDeadline = split.freeze(Ticker.system().read()); // the silent master decides: late
    assertEquals(Vote.TIMED_OUT, atDeadline.outcomes().get(GATE).vote());
    assertFalse(atDeadline.timedByAnswers(), "its time is a node timeout");
  }

  /**
   * A round decided by this client's own failures, no master's answer (masters excluded as unfit, a
   * full queue, open breakers: each fails at once), took no round trip: timed, it would drag the
   * average round time toward nothing, and with it the spread of a named waiter's retries, so that
   * the waiter retried in a hot loop (the simulation's seed 30 of a fitness rollout: 100,000 rounds
   * at one instant).
   */
  @Test
  void aRoundNoMasterAnsweredDoesNotTimeTheMasters() {
    QuorumRound local = start(-1);
    for (int i : new int[] {0, 1, 3}) {
      sent.get(i).completeExceptionally(new NodeUnavailableException("unfit: excluded"));
    }
    Tally failedAtOnce = freeze(local);
    assertFalse(failedAtOnce.reachedQuorum());
    assertFalse(failedAtOnce.timedByAnswers(), "no master answered: no round trip to time");

    QuorumRound oneAnswer = start(-1);
    sent.get(0).completeExceptionally(new NodeUnavailableException("unfit: excluded"));
    sent.get(1).completeExceptionally(new NodeUnavailableException("unfit: excluded"));
    sent.get(3).complete(reply(Vote.TAKEN));
    sent.get(4).completeExceptionally(new NodeUnavailableException("unfit: excluded"));
    assertTrue(freeze(oneAnswer).timedByAnswers(), "a master's answer decided it with the rest");
  }

  @Test
  void clientsThatConfigureTheMastersInAnotherOrderPickTheSameGate() {
    FakeTicker ticker = new FakeTicker();
    List<String> reversed = new ArrayList<>(NAMES);
    Collections.reverse(reversed);
    Masters forward = masters(NAMES, ticker);
    Masters backward = masters(reversed, ticker);
    int[] gates = new int[NAMES.size()];
    for (int k = 0; k < 200; k++) {
      byte[] key = ("resource-" + k).getBytes(StandardCharsets.UTF_8);
      String one = NAMES.get(forward.gateOf(key));
      String other = reversed.get(backward.gateOf(key));
      assertEquals(one, other, "the gate of resource-" + k);
      gates[NAMES.indexOf(one)]++;
    }
    for (int count : gates) {
      assertNotEquals(0, count, "every master is the gate of some keys: " + Arrays.toString(gates));
    }
  }

  @Test
  void aGatedVoteAsksTheOthersOnlyOnceTheGateGranted() {
    List<FakeNode> fakes = new ArrayList<>();
    Masters masters = fakeMasters(fakes);
    byte[] key = "r".getBytes(StandardCharsets.UTF_8);
    byte[] token = "t".getBytes(StandardCharsets.UTF_8);
    int gate = masters.gateOf(key);
    Masters.Call acquire =
        (node, i) -> node.send(new Command.Acquire(LockKey.of(key), token, 1000, false, 0));

    fakes.get(gate).onSet = FakeNode.Answer.TAKEN;
    Tally refused = masters.vote(acquire, gate, TimeUnit.MILLISECONDS.toNanos(10));
    assertFalse(refused.reachedQuorum());
    for (int i = 0; i < fakes.size(); i++) {
      assertEquals(i == gate ? 1 : 0, fakes.get(i).received().size(), "asked of master " + i);
    }

    fakes.get(gate).onSet = FakeNode.Answer.GRANT;
    Tally granted = masters.vote(acquire, gate, TimeUnit.MILLISECONDS.toNanos(10));
    assertTrue(granted.reachedQuorum());
    for (int i = 0; i < fakes.size(); i++) {
      assertEquals(i == gate ? 2 : 1, fakes.get(i).received().size(), "asked of master " + i);
    }
  }

  /**
   * A gated round's validity is timed from before the gate was asked: the gate's answer (400 ms on
   * the fake clock) is part of the round's time, by which the lease's validity is cut. Timed from
   * when the others were asked, a lease would be trusted 400 ms after its keys at the gate (set
   * when the gate answered, 400 ms into the round at the latest) could have expired.
   */
  @Test
  void aGatedRoundIsTimedFromBeforeTheGateWasAsked() {
    FakeTicker ticker = new FakeTicker();
    List<FakeNode> fakes = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      fakes.add(new FakeNode(ticker));
    }
    Masters masters = FakeMasters.of(fakes, NAMES, ticker);
    byte[] key = "r".getBytes(StandardCharsets.UTF_8);
    Masters.Call acquire =
        (node, i) ->
            node.send(new Command.Acquire(LockKey.of(key), "t".getBytes(), 10_000, false, 0));
    int gate = masters.gateOf(key);
    long gateTook = TimeUnit.MILLISECONDS.toNanos(400);
    fakes.get(gate).latency = java.time.Duration.ofNanos(gateTook);

    long asked = ticker.read();
    Tally tally = masters.vote(acquire, gate, TimeUnit.SECONDS.toNanos(1));
    assertTrue(tally.reachedQuorum());
    assertTrue(tally.startNanos() - asked < gateTook, "started " + (tally.startNanos() - asked));
    assertTrue(
        tally.elapsedNanos() >= gateTook,
        "the round took " + tally.elapsedNanos() / 1_000_000 + " ms; the gate alone 400 ms");
    long ttl = TimeUnit.SECONDS.toNanos(10);
    assertTrue(Validity.remainingNanos(ttl, tally.elapsedNanos(), 0.01) <= ttl - gateTook);
  }

  /** As above, for a gate that did not answer within the gate wait: the wait is in the time. */
  @Test
  void aRoundThatPassedASilentGateIsTimedFromBeforeTheGateWasAsked() {
    FakeTicker ticker = new FakeTicker();
    long asked = ticker.read();
    QuorumRound round =
        QuorumRound.start(
            NAMES,
            timeouts,
            3,
            Mode.QUORUM,
            ticker,
            i -> {
              CompletableFuture<NodeReply> reply = new CompletableFuture<>();
              sent.set(i, reply);
              return reply;
            },
            GATE,
            () -> true,
            QuorumRound.Verdict.AS_ANSWERED);
    ticker.advance(java.time.Duration.ofMillis(300)); // the gate wait, the gate silent
    round.openGate();
    for (int i : new int[] {0, 1, 3}) {
      sent.get(i).complete(reply(Vote.GRANTED));
    }
    Tally tally = round.freeze(ticker.read() + TimeUnit.SECONDS.toNanos(1));
    assertTrue(tally.reachedQuorum());
    assertTrue(tally.startNanos() <= asked, "started " + (tally.startNanos() - asked) + " ns late");
    assertTrue(
        tally.elapsedNanos() >= TimeUnit.MILLISECONDS.toNanos(300),
        "the round took " + tally.elapsedNanos() / 1_000_000 + " ms; the gate wait alone 300 ms");
  }

  @Test
  void theWaitersHearTheGateAndTheNextMasterByName() {
    Masters masters = masters(NAMES, new FakeTicker());
    for (int k = 0; k < 50; k++) {
      byte[] key = ("resource-" + k).getBytes(StandardCharsets.UTF_8);
      int gate = masters.gateOf(key);
      // NAMES are in the order of their names: the next is the following one, the last's the first.
      assertArrayEquals(new int[] {gate, (gate + 1) % NAMES.size()}, masters.heardFor(key));
    }
    Masters two = masters(List.of("a:1", "b:2"), new FakeTicker());
    assertArrayEquals(new int[] {0, 1}, two.heardFor("r".getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void theGateWaitIsFourRoundsBetweenTwoMillisecondsAndHalfTheNodeTimeout() {
    Masters masters = masters(NAMES, new FakeTicker()); // node timeouts of 50 ms
    long ms = TimeUnit.MILLISECONDS.toNanos(1);
    assertEquals(2 * ms, masters.gateWaitNanos(0, ms / 10));
    assertEquals(12 * ms, masters.gateWaitNanos(0, 3 * ms));
    assertEquals(25 * ms, masters.gateWaitNanos(0, 10 * ms));
  }

  @Test
  void noGateWithFewerThanThreeMasters() {
    Masters two = masters(List.of("a:1", "b:2"), new FakeTicker());
    assertEquals(-1, two.gateOf("r".getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void aRefusedFirstRoundQueuesAtOnceOnlyWhileTheGateCanBeAsked() {
    boolean[] open = {false};
    List<NodeClient> nodes = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      nodes.add(
          new ForwardingNodeClient(new FakeNode(new FakeTicker())) {
            @Override
            public boolean closed() {
              return !open[0];
            }
          });
    }
    Masters masters = FakeMasters.of(nodes, NAMES, Ticker.system());
    byte[] key = "r".getBytes(StandardCharsets.UTF_8);
    Turn turn =
        new Turn(
            masters, LockKey.of(key), TimeUnit.MILLISECONDS.toNanos(50), true, "0123456789abcdef");
    assertTrue(turn.queueAtOnce(), "a waiter not yet queued queues at once");

    open[0] = true; // the gate's breaker opened: a gated round would ask every master, as the first
    assertFalse(turn.queueAtOnce(), "a round without a gate would only repeat the first");

    open[0] = false;
    int gate = masters.gateOf(key);
    List<Outcome> outcomes = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      outcomes.add(new Outcome(NAMES.get(i), i == gate ? Vote.TAKEN : Vote.PENDING, 0, ""));
    }
    turn.decided(gate, new Attempt(null, outcomes, false));
    assertFalse(turn.queueAtOnce(), "queued at the gate already");

    Turn polling =
        new Turn(
            masters, LockKey.of(key), TimeUnit.MILLISECONDS.toNanos(50), false, "0123456789abcdef");
    assertFalse(polling.queueAtOnce(), "without wake-ups nothing queues");
  }

  @Test
  void aNamedWaiterThatOvertookTheReleaseAsksEveryMasterAgainUntilQueuedOrGranted() {
    Masters masters = masters(NAMES, new FakeTicker());
    byte[] key = "r".getBytes(StandardCharsets.UTF_8);
    int gate = masters.gateOf(key);
    Turn turn =
        new Turn(
            masters, LockKey.of(key), TimeUnit.MILLISECONDS.toNanos(50), true, "0123456789abcdef");
    turn.nextGate(); // the first round, ungated
    turn.decided(-1, refused(gate, Vote.TAKEN, Vote.TAKEN)); // refused everywhere: not queued
    assertEquals(gate, turn.nextGate());
    turn.decided(gate, refused(gate, Vote.TAKEN, Vote.PENDING)); // queued at the gate
    assertFalse(turn.wasNamed());
    assertEquals(turn.name(), turn.queuedAs(), "queued");

    turn.named(); // a release named it
    assertTrue(turn.takeNamed(), "its next round asks every master at once");
    // The gate paused: no answer from it, the others refused (the release not there yet).
    turn.decided(gate, refused(gate, Vote.PENDING, Vote.TAKEN));
    assertTrue(turn.wasNamed(), "tries again soon");
    assertTrue(turn.takeNamed(), "and asks every master at once again, not the paused gate first");
    turn.decided(gate, refused(gate, Vote.GRANTED, Vote.TAKEN)); // granted at the gate only
    assertTrue(turn.takeNamed(), "still not granted, still not queued");

    turn.decided(gate, refused(gate, Vote.TAKEN, Vote.PENDING)); // refused at the gate: queued
    assertEquals(turn.name(), turn.queuedAs(), "queued again");
    // A few rounds more (Turn.NAMED_RETRIES): the gate's key may be a failed round's.
    for (int rounds = 1; turn.takeNamed(); rounds++) {
      assertTrue(rounds <= Turn.NAMED_RETRIES, "the retries end");
      turn.decided(gate, refused(gate, Vote.TAKEN, Vote.PENDING));
    }
    assertFalse(turn.wasNamed(), "then it waits to be named");
    assertFalse(turn.takeNamed(), "its next round is gated");
  }

  @Test
  void aSetsWaiterAsksEveryMasterForEightRoundsAfterAPlainNotice() {
    Masters masters = masters(NAMES, new FakeTicker());
    LockKey key = ResourceSet.of(List.of("r1", "r2")).key();
    int gate = masters.gateOf(key.bytes());
    Turn turn = new Turn(masters, key, TimeUnit.MILLISECONDS.toNanos(50), true, "0123456789abcdef");
    turn.nextGate(); // the first round, ungated
    turn.decided(-1, refused(gate, Vote.TAKEN, Vote.TAKEN));
    assertEquals(gate, turn.nextGate(), "then gated, as every waiter's round");
    turn.decided(gate, refused(gate, Vote.TAKEN, Vote.PENDING));
    assertFalse(turn.takeNamed(), "a set is not queued: only a notice makes it ask everyone");

    turn.noticed(); // a plain notice: the release ran at the gate of one of its resources
    // A release takes some rounds to reach every master: each round refused (even at the set's
    // own gate, which may not have run it yet) asks every master again, for 8 rounds.
    for (int round = 1; round <= 8; round++) {
      assertTrue(turn.takeNamed(), "round " + round + " after the notice asks every master");
      turn.decided(gate, refused(gate, Vote.TAKEN, Vote.TAKEN));
    }
    assertFalse(turn.takeNamed(), "then back to the gate first, until the next notice");

    turn.noticed();
    assertTrue(turn.takeNamed(), "a new notice, a new budget");
  }

  /** A refused attempt: {@code atGate} at the gate, {@code elsewhere} at every other master. */
  private static Attempt refused(int gate, Vote atGate, Vote elsewhere) {
    List<Outcome> outcomes = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      outcomes.add(new Outcome(NAMES.get(i), i == gate ? atGate : elsewhere, 0, ""));
    }
    return new Attempt(null, outcomes, false);
  }

  private static Masters fakeMasters(List<FakeNode> fakes) {
    FakeTicker ticker = new FakeTicker();
    for (int i = 0; i < NAMES.size(); i++) {
      fakes.add(new FakeNode(ticker));
    }
    return FakeMasters.of(fakes, NAMES, Ticker.system());
  }

  private static Masters masters(List<String> names, FakeTicker ticker) {
    List<NodeClient> nodes = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      nodes.add(new FakeNode(ticker));
    }
    return FakeMasters.of(nodes, names, ticker);
  }
}
