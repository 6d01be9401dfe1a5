package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.Vote;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * When an acquire round asks no master ({@link Abstentions}): when the masters the restart guard
 * refused with a time (held until then, at most {@link Abstentions#RECHECK_NANOS}, or until their
 * admission record changes) and the unfit leave too few to win.
 */
class AbstentionsTest {

  private static final byte[] RECORD = "run-1 marker-1".getBytes(StandardCharsets.US_ASCII);

  /** A master's client that answers nothing by itself: the test completes its reads. */
  private static final class Master implements NodeClient {
    final List<CompletableFuture<Object>> reads = new ArrayList<>();
    volatile NodeUnavailableException excluded;
    volatile boolean closed; // send throws, as a closed client's may

    @Override
    @SuppressWarnings("unchecked")
    public <R> CompletableFuture<R> send(Command<R> command) {
      if (closed) {
        throw new IllegalStateException("closed");
      }
      assertEquals(Command.Kind.QUERY, command.kind(), "only the admission record is read");
      assertArrayEquals(new String[] {"redlock:admitted"}, ((Command.Query) command).args());
      CompletableFuture<Object> read = new CompletableFuture<>();
      reads.add(read);
      return (CompletableFuture<R>) read;
    }

    @Override
    public NodeUnavailableException excluded() {
      return excluded;
    }

    @Override
    public void close() {}
  }

  private final FakeTicker ticker = new FakeTicker();
  private final List<Master> masters = List.of(new Master(), new Master(), new Master());
  private final Abstentions abstentions =
      new Abstentions(List.copyOf(masters), 2, ticker); // three masters: two must grant

  private static NodeReply refusal(String why, byte[] admitted) {
    return new NodeReply(
        Vote.RESTARTED, 0, 0, why, new NodeReply.GuardReading(1L, null, admitted, null, 0));
  }

  private static final NodeReply YOUNG =
      refusal("restarted 3 s ago: votes in 57 s, or once admitted", RECORD);

  @Test
  void oneMasterHeldOfThreeLeavesEveryMasterAsked() {
    assertNull(abstentions.known(), "nothing known: every master asked");
    assertSame(YOUNG, abstentions.judged(0, YOUNG));
    assertNull(abstentions.known(), "two can still win: the held one is asked too");
    assertEquals(0, masters.get(0).reads.size(), "asked, not read");
  }

  @Test
  void twoHeldOfThreeAskNoMasterForAtMostTheRecheck() {
    abstentions.judged(0, YOUNG);
    abstentions.judged(1, YOUNG);
    NodeReply[] known = abstentions.known();
    assertSame(YOUNG, known[0], "held: counted as refused, not asked");
    assertSame(YOUNG, known[1]);
    assertSame(QuorumRound.NOT_ASKED, known[2], "a master that could vote, not asked: in vain");

    ticker.advance(Duration.ofNanos(Abstentions.RECHECK_NANOS - 1));
    assertSame(YOUNG, abstentions.known()[0]);
    ticker.advance(Duration.ofNanos(1));
    assertNull(abstentions.known(), "asked again after the recheck, though they vote in 57 s");
  }

  @Test
  void aRefusalDueSoonerHoldsOnlyUntilThen() {
    abstentions.judged(0, YOUNG);
    abstentions.judged(1, refusal("dataset 59 s old: votes in 1 s, or once admitted", null));
    assertEquals(1_000_000_000L, Abstentions.RECHECK_NANOS, "the case needs the recheck at 1 s");
    ticker.advance(Duration.ofMillis(500));
    abstentions.judged(0, YOUNG); // held again from now: until 1.5 s
    ticker.advance(Duration.ofMillis(499));
    assertEquals(Vote.RESTARTED, abstentions.known()[1].status());
    ticker.advance(Duration.ofMillis(1));
    assertNull(abstentions.known(), "master 1 votes now: two can win");
  }

  @Test
  void aVoteThatCountsOrARefusalWithoutATimeHoldsNothing() {
    abstentions.judged(0, YOUNG);
    abstentions.judged(1, YOUNG);
    abstentions.judged(0, new NodeReply(Vote.TAKEN, 0, 0, ""));
    assertNull(abstentions.known(), "master 0 answered as any master: no longer held");
    abstentions.judged(2, refusal("the restart guard cannot see this master's restarts", null));
    assertNull(abstentions.known(), "no time to hold master 2 for");
    abstentions.judged(2, new NodeReply(Vote.RESTARTED, 0, 0, "votes in 9 s", null));
    assertNull(abstentions.known(), "nothing read to compare an admission with");
  }

  @Test
  void anAdmissionRecordOtherThanTheRefusalsEndsTheHoldAtOnce() {
    abstentions.judged(0, YOUNG);
    abstentions.judged(1, YOUNG);
    abstentions.known();
    abstentions.known();
    Master held = masters.get(0);
    assertEquals(1, held.reads.size(), "one read at a time");
    held.reads.get(0).complete(Arrays.asList(RECORD.clone()));
    assertSame(YOUNG, abstentions.known()[0], "the record it refused with: still held");
    assertEquals(2, held.reads.size(), "read again once the last read was answered");

    held.reads.get(1).complete(Arrays.asList("run-2 marker-1".getBytes(StandardCharsets.US_ASCII)));
    assertNull(abstentions.known(), "admitted since: asked again, with no time passed");
    assertEquals(0, masters.get(2).reads.size(), "a master not held is not read");
  }

  @Test
  void aFailedReadKeepsTheHoldAndReadsAgain() {
    abstentions.judged(0, YOUNG);
    abstentions.judged(1, YOUNG);
    abstentions.known();
    masters.get(0).reads.get(0).completeExceptionally(new NodeUnavailableException("lost"));
    assertSame(YOUNG, abstentions.known()[0]);
    assertEquals(2, masters.get(0).reads.size());
  }

  @Test
  void aReadThatCannotBeSentIsTriedAgainAtTheNextRound() {
    abstentions.judged(0, YOUNG);
    abstentions.judged(1, YOUNG);
    masters.get(0).closed = true;
    assertSame(YOUNG, abstentions.known()[0], "held: its hold ends at its time");
    masters.get(0).closed = false;
    abstentions.known();
    assertEquals(1, masters.get(0).reads.size(), "no read left under way by the one not sent");
  }

  @Test
  void aHeldMasterAndAnUnfitOneLeaveTooFewToWin() {
    abstentions.judged(0, YOUNG);
    masters.get(1).excluded = new NodeUnavailableException("unfit for Redlock: maxmemory-policy");
    NodeReply[] known = abstentions.known();
    assertSame(YOUNG, known[0]);
    assertEquals(Vote.FAILED, known[1].status());
    assertEquals("unfit for Redlock: maxmemory-policy", known[1].detail());
    assertSame(QuorumRound.NOT_ASKED, known[2]);

    masters.get(1).excluded = null;
    assertNull(abstentions.known(), "fit again: two can win, every master asked");
  }

  @Test
  void unfitMastersAloneLeavingTooFewAskNoMasterToo() {
    masters.get(0).excluded = new NodeUnavailableException("unfit for Redlock: maxmemory-policy");
    assertNull(abstentions.known());
    masters.get(2).excluded = new NodeUnavailableException("unfit for Redlock: maxmemory-policy");
    assertSame(QuorumRound.NOT_ASKED, abstentions.known()[1]);
  }

  @Test
  void anAdmissionByThisClientEndsEveryHold() {
    abstentions.judged(0, YOUNG);
    abstentions.judged(2, YOUNG);
    assertSame(YOUNG, abstentions.known()[2]);
    abstentions.clear();
    assertNull(abstentions.known());
  }
}
