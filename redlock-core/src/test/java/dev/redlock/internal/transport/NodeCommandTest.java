package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The command codec's decisions, reply by reply, without a master: how a reply becomes a vote, how
 * the acquire reads the master's clock ({@code TIME} in seconds and microseconds) and its fence
 * counters, and when the restart guard refuses a master's vote. The replies are what Redis sends
 * (RESP decoded: {@code byte[]}, {@link Long}, {@link List}, null, {@link ServerError}).
 */
class NodeCommandTest {

  private static final byte[] KEY = bytes("orders:42");
  private static final byte[] TOKEN = bytes("0123456789abcdef0123456789abcdef");
  private static final long GUARD_MILLIS = 60_000;
  private static final long SECOND = TimeUnit.SECONDS.toNanos(1);
  private static final String RUN = "a".repeat(40);

  /** The master's clock of these tests: 1,700,000,000 s and 123,456 µs. */
  private static final long MASTER_SECONDS = 1_700_000_000L;

  private static final long MASTER_MICROS_PART = 123_456L;
  private static final long MASTER_MILLIS = MASTER_SECONDS * 1000 + MASTER_MICROS_PART / 1000;

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  private static List<Object> time(long seconds, long micros) {
    return List.of(bytes(Long.toString(seconds)), bytes(Long.toString(micros)));
  }

  private static List<Object> masterTime() {
    return time(MASTER_SECONDS, MASTER_MICROS_PART);
  }

  /** {@code MGET counter marker admitted}: each null or the stored text. */
  private static List<Object> read(Object counter, Object marker, Object admitted) {
    return Arrays.asList(counter, marker, admitted);
  }

  private static byte[] number(long value) {
    return bytes(Long.toString(value));
  }

  /** An old run of a server that can lose writes on a restart: the guard judges its dataset. */
  private static Incarnation oldRun() {
    return new Incarnation(RUN, -1000 * SECOND, RUN, false, false, null);
  }

  /**
   * Answers a three-part acquire with its three replies, as the pipeline hands them over, and
   * returns the vote as the quorum layer counts it: the codec's answer judged by the restart guard
   * ({@link RestartGuardRule#judge}). The codec's own answer is never RESTARTED: it decides no
   * vote.
   */
  private static NodeReply answer(NodeCommand command, Object time, Object set, Object values) {
    assertTrue(command.collect(time), "the TIME reply is kept");
    assertTrue(command.collect(set), "the SET reply is kept");
    assertFalse(command.collect(values), "the MGET reply is the last");
    command.complete(values);
    return judged(command);
  }

  /** The command's answer as the quorum layer counts it; null if it failed. */
  private static NodeReply judged(NodeCommand command) {
    if (command.reply.isCompletedExceptionally()) {
      return null;
    }
    NodeReply codec = command.reply.getNow(null);
    assertNotEquals(Vote.RESTARTED, codec.status(), "the codec decides no vote");
    return RestartGuardRule.judge(codec, GUARD_MILLIS);
  }

  private static NodeCommand guarded(Incarnation incarnation) {
    NodeCommand command =
        NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, true, GUARD_MILLIS));
    command.incarnation = incarnation;
    return command;
  }

  private static String failure(NodeCommand command) {
    assertTrue(command.reply.isCompletedExceptionally(), () -> "answered " + command.reply);
    CompletionException thrown = assertThrows(CompletionException.class, command.reply::join);
    assertTrue(thrown.getCause() instanceof NodeUnavailableException, thrown::toString);
    return thrown.getCause().getMessage();
  }

  @Test
  void thePlainAcquireIsSetNxPxAndItsVoteIsWhetherTheKeyWasSet() {
    NodeCommand set = NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, false, 0));
    assertEquals(1, set.parts());
    assertEquals(NodeCommand.Verb.SET, set.verb(0));
    assertArrayEquals(
        new byte[][] {KEY, TOKEN, bytes("NX"), bytes("PX"), bytes("10000")}, set.arguments(0));
    assertFalse(set.collect(bytes("OK")), "one reply");
    set.complete(bytes("OK"));
    assertEquals(Vote.GRANTED, set.reply.join().status());

    NodeCommand taken = NodeCommand.set(KEY, TOKEN, 10_000);
    taken.complete(null);
    assertEquals(Vote.TAKEN, taken.reply.join().status());

    NodeCommand refused = NodeCommand.set(KEY, TOKEN, 10_000);
    refused.complete(new ServerError("OOM command not allowed\nsecond line"));
    assertEquals("OOM command not allowed", failure(refused));
  }

  @Test
  void aScriptsCodeIsItsVote() {
    assertEquals(Vote.GRANTED, scriptAnswer(1L).status());
    assertEquals(Vote.TAKEN, scriptAnswer(0L).status());
    assertEquals(Vote.GONE, scriptAnswer(-1L).status());
    NodeReply told = scriptAnswer(2L);
    assertEquals(Vote.GRANTED, told.status(), "released, and the waiters told");
    assertTrue(told.waitersTold());
    assertFalse(told.waitersListening());
    NodeReply listening = scriptAnswer(3L);
    assertEquals(Vote.GRANTED, listening.status(), "released, and waiters listen there");
    assertTrue(listening.waitersListening());
    assertFalse(listening.waitersTold());
    assertFalse(scriptAnswer(1L).waitersKnown());

    NodeCommand text = NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN));
    text.complete(bytes("1"));
    assertEquals("unexpected reply to SCRIPT", failure(text), "only an integer is a vote");
    NodeCommand error = NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN, 10_000));
    error.complete(new ServerError("BUSY Redis is busy running a script"));
    assertEquals("BUSY Redis is busy running a script", failure(error));
  }

  private static NodeReply scriptAnswer(long code) {
    NodeCommand release = NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN));
    assertFalse(release.collect(code));
    release.complete(code);
    return release.reply.join();
  }

  @Test
  void theFencedAcquireIsTimeThenSetThenTheReadOfTheCountersAndTheGuardsKeys() {
    NodeCommand acquire =
        NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, true, 0));
    assertEquals(3, acquire.parts());
    assertEquals(
        List.of(NodeCommand.Verb.TIME, NodeCommand.Verb.SET, NodeCommand.Verb.MGET),
        List.of(acquire.verb(0), acquire.verb(1), acquire.verb(2)));
    assertEquals(0, acquire.arguments(0).length);
    assertArrayEquals(
        new byte[][] {KEY, TOKEN, bytes("NX"), bytes("PX"), bytes("10000")}, acquire.arguments(1));
    assertArrayEquals(
        new byte[][] {LuaScript.FENCE_COUNTER, LuaScript.DATASET_MARKER, LuaScript.ADMITTED},
        acquire.arguments(2));
    assertTrue(acquire.ofAttempt());
    assertFalse(acquire.callsScript(), "three plain commands");
  }

  @Test
  void theMastersClockIsTimesSecondsAndMicrosecondsInMicroseconds() {
    NodeCommand acquire =
        NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, true, 0));
    NodeReply reply = answer(acquire, masterTime(), bytes("OK"), read(number(41), number(1), null));
    assertEquals(Vote.GRANTED, reply.status());
    // 1,700,000,000.123456 s: the token floor is the master's clock in µs, never in ms.
    assertEquals(1_700_000_000_123_456L, reply.timeMicros());
    assertEquals(41, reply.fence());

    NodeCommand microsOnly =
        NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, true, 0));
    assertEquals(
        999_999L, answer(microsOnly, time(0, 999_999), null, read(null, null, null)).timeMicros());
  }

  @Test
  void theFenceIsTheMastersCounter() {
    assertEquals(9, fenceOf(number(9)));
    assertEquals(0, fenceOf(null), "no lease was ever fenced there");
    // A counter Lua stored as a float (1.7e+12), as fence.lua may once have.
    assertEquals(1_700_000_000_000L, fenceOf(bytes("1.7e+12")));
  }

  private static long fenceOf(Object counter) {
    NodeCommand acquire =
        NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, true, 0));
    NodeReply reply = answer(acquire, masterTime(), null, read(counter, number(1), null));
    assertEquals(Vote.TAKEN, reply.status(), "the SET answered nil: the key is held");
    return reply.fence();
  }

  @Test
  void anyPartsErrorFailsTheAcquire() {
    List<Object> values = read(null, number(1), null);
    ServerError error = new ServerError("NOPERM no permissions\nmore");
    NodeCommand time = guarded(oldRun());
    answer(time, error, bytes("OK"), values);
    assertEquals("NOPERM no permissions", failure(time));
    NodeCommand set = guarded(oldRun());
    answer(set, masterTime(), error, values);
    assertEquals("NOPERM no permissions", failure(set));
    NodeCommand read = guarded(oldRun());
    answer(read, masterTime(), bytes("OK"), error);
    assertEquals("NOPERM no permissions", failure(read));
  }

  @Test
  void aMalformedReplyIsNoVote() {
    List<Object> values = read(null, number(1), null);
    NodeCommand shortTime = guarded(oldRun());
    answer(shortTime, List.of(number(MASTER_SECONDS)), bytes("OK"), values);
    assertEquals("unexpected reply to ACQUIRE", failure(shortTime));
    NodeCommand noList = guarded(oldRun());
    answer(noList, number(MASTER_SECONDS), bytes("OK"), values);
    assertEquals("unexpected reply to ACQUIRE", failure(noList));
    NodeCommand shortRead = guarded(oldRun());
    answer(shortRead, masterTime(), bytes("OK"), Arrays.asList(null, number(1)));
    assertEquals("unexpected reply to ACQUIRE", failure(shortRead));
    NodeCommand readNoList = guarded(oldRun());
    answer(readNoList, masterTime(), bytes("OK"), number(1));
    assertEquals("unexpected reply to ACQUIRE", failure(readNoList));
    NodeCommand setNumber = guarded(oldRun());
    answer(setNumber, masterTime(), 1L, values);
    assertEquals("unexpected reply to ACQUIRE", failure(setNumber));
    NodeCommand textFence = guarded(oldRun());
    answer(textFence, masterTime(), bytes("OK"), read(bytes("x"), number(1), null));
    assertEquals("unexpected reply to ACQUIRE", failure(textFence));
    NodeCommand textMarker = guarded(oldRun());
    answer(textMarker, masterTime(), bytes("OK"), read(null, bytes("x"), null));
    assertEquals("unexpected reply to ACQUIRE", failure(textMarker));
  }

  @Test
  void theGuardCountsADatasetExactlyAsOldAsTheGuardAndNotAMillisecondYounger() {
    // The age is the master's clock (TIME, in ms) minus the marker's birth (ms).
    NodeReply old =
        answer(
            guarded(oldRun()),
            masterTime(),
            bytes("OK"),
            read(null, number(MASTER_MILLIS - GUARD_MILLIS), null));
    assertEquals(Vote.GRANTED, old.status(), old::detail);
    assertEquals("", old.detail());

    NodeReply young =
        answer(
            guarded(oldRun()),
            masterTime(),
            bytes("OK"),
            read(number(3), number(MASTER_MILLIS - GUARD_MILLIS + 1), null));
    assertEquals(Vote.RESTARTED, young.status());
    assertEquals("dataset 59 s old: votes in 1 s, or once admitted", young.detail());
    assertEquals(3, young.fence(), "a refused vote still reports the counter");
    assertEquals(MASTER_SECONDS * 1_000_000 + MASTER_MICROS_PART, young.timeMicros());

    NodeReply taken =
        answer(
            guarded(oldRun()),
            masterTime(),
            null,
            read(null, number(MASTER_MILLIS - 2 * GUARD_MILLIS), null));
    assertEquals(Vote.TAKEN, taken.status(), "old enough, and the key is held");
  }

  @Test
  void withoutTheGuardAYoungDatasetVotes() {
    NodeCommand acquire =
        NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, true, 0));
    acquire.incarnation = new Incarnation(RUN, 0, RUN, false, false, null);
    NodeReply reply =
        answer(acquire, masterTime(), bytes("OK"), read(null, number(MASTER_MILLIS), null));
    assertEquals(Vote.GRANTED, reply.status());
  }

  @Test
  void aDatasetWithoutMarkerIsRefusedAndHasOneStored() {
    AtomicInteger stored = new AtomicInteger();
    NodeCommand acquire = guarded(oldRun());
    acquire.onNewDataset = stored::incrementAndGet;
    NodeReply reply = answer(acquire, masterTime(), bytes("OK"), read(null, null, null));
    assertEquals(Vote.RESTARTED, reply.status());
    assertEquals(
        "no dataset-birth marker (a new, flushed or emptied dataset; one is stored now): votes in"
            + " 60 s, or once admitted",
        reply.detail());
    assertEquals(1, stored.get());

    // Without the guard the marker is stored too (the guard may be turned on later), the vote
    // counts.
    AtomicInteger unguarded = new AtomicInteger();
    NodeCommand plain =
        NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, true, 0));
    plain.onNewDataset = unguarded::incrementAndGet;
    assertEquals(
        Vote.GRANTED, answer(plain, masterTime(), bytes("OK"), read(null, null, null)).status());
    assertEquals(1, unguarded.get());

    AtomicInteger marked = new AtomicInteger();
    NodeCommand withMarker = guarded(oldRun());
    withMarker.onNewDataset = marked::incrementAndGet;
    answer(withMarker, masterTime(), bytes("OK"), read(null, number(1), null));
    assertEquals(0, marked.get(), "a marker is stored only where there is none");
  }

  @Test
  void aRunTheClientCannotSeeIsRefused() {
    NodeReply notConnected =
        answer(guarded(null), masterTime(), bytes("OK"), read(null, number(1), null));
    assertEquals(Vote.RESTARTED, notConnected.status());
    assertEquals("the server run is unknown", notConnected.detail());

    NodeReply unseen =
        answer(
            guarded(new Incarnation(null, 0, null, true, false, "INFO refused: NOPERM")),
            masterTime(),
            bytes("OK"),
            read(null, number(1), null));
    assertEquals(Vote.RESTARTED, unseen.status());
    assertEquals(
        "the restart guard cannot see this master's restarts (INFO refused: NOPERM)",
        unseen.detail());
  }

  @Test
  void aYoungRunIsRefusedByItsAgeWhenTheCommandWasWritten() {
    // Up since 0 on this client's ticker, written at 59 s: a minute's guard refuses it.
    NodeCommand early = guarded(new Incarnation(RUN, 0, RUN, false, false, null));
    early.writtenAt = 59 * SECOND;
    NodeReply refused = answer(early, masterTime(), bytes("OK"), read(null, number(1), null));
    assertEquals(Vote.RESTARTED, refused.status());
    assertEquals("restarted 59 s ago: votes in 1 s, or once admitted", refused.detail());

    NodeCommand late = guarded(new Incarnation(RUN, 0, RUN, false, false, null));
    late.writtenAt = 60 * SECOND;
    assertEquals(
        Vote.GRANTED,
        answer(late, masterTime(), bytes("OK"), read(null, number(1), null)).status());

    // Its configuration does not vouch for a young run (Incarnation dates a restart that lost
    // nothing as the run before it): a lossless run is refused as young as any.
    NodeCommand lossless = guarded(new Incarnation(RUN, 0, RUN, true, false, null));
    lossless.writtenAt = 1;
    assertEquals(
        Vote.RESTARTED,
        answer(lossless, masterTime(), bytes("OK"), read(null, number(1), null)).status(),
        "a young run that loses nothing on a restart");
  }

  /**
   * An admission of a run vouches for a later run that holds its dataset whole (restarts that lost
   * nothing since, as this client saw them: {@link Incarnation#keptFrom}), and for no other.
   */
  @Test
  void anAdmissionVouchesForARunThatHoldsTheAdmittedRunsDatasetWhole() {
    byte[] marker = number(MASTER_MILLIS);
    byte[] record = bytes(RUN + " " + MASTER_MILLIS);
    String next = "c".repeat(40);
    NodeCommand kept = guarded(new Incarnation(next, 0, RUN, true, false, null));
    kept.writtenAt = 1;
    NodeReply reply = answer(kept, masterTime(), bytes("OK"), read(null, marker, record));
    assertEquals(Vote.GRANTED, reply.status(), reply::detail);
    NodeCommand other = guarded(new Incarnation(next, 0, next, true, false, null));
    other.writtenAt = 1;
    NodeReply refused = answer(other, masterTime(), bytes("OK"), read(null, marker, record));
    assertEquals(Vote.RESTARTED, refused.status(), refused::detail);
  }

  @Test
  void anAdmissionVouchesForTheDatasetAndTheRunItNamesOnly() {
    byte[] marker = number(MASTER_MILLIS); // born this very millisecond
    byte[] record = bytes(RUN + " " + MASTER_MILLIS);
    Incarnation young = new Incarnation(RUN, 0, RUN, false, false, null);

    NodeCommand admitted = guarded(young);
    admitted.writtenAt = 1;
    NodeReply reply = answer(admitted, masterTime(), bytes("OK"), read(null, marker, record));
    assertEquals(Vote.GRANTED, reply.status(), reply::detail);

    // Another marker: the admitted dataset was lost and a new one began; its age counts again.
    NodeCommand newDataset = guarded(young);
    newDataset.writtenAt = 1;
    NodeReply lost =
        answer(
            newDataset, masterTime(), bytes("OK"), read(null, number(MASTER_MILLIS - 1), record));
    assertEquals(Vote.RESTARTED, lost.status());
    assertTrue(lost.detail().startsWith("dataset 0 s old"), lost.detail());

    // Another run with the admitted dataset: a restart that reloaded it; the run's age counts.
    NodeCommand restarted =
        guarded(new Incarnation("b".repeat(40), 0, "b".repeat(40), false, false, null));
    restarted.writtenAt = SECOND;
    NodeReply run = answer(restarted, masterTime(), bytes("OK"), read(null, marker, record));
    assertEquals(Vote.RESTARTED, run.status());
    assertEquals("restarted 1 s ago: votes in 59 s, or once admitted", run.detail());

    // An old dataset on an admitted run: the run needs no age.
    NodeCommand oldDataset = guarded(young);
    oldDataset.writtenAt = 1;
    assertEquals(
        Vote.GRANTED,
        answer(oldDataset, masterTime(), bytes("OK"), read(null, number(1), bytes(RUN + " 1")))
            .status());
  }

  @Test
  void theKeySetAcquireReadsAsTheThreeReplies() {
    LockKey.Set set = LockKey.of(List.of(bytes("a"), bytes("b"), bytes("c")));
    NodeCommand acquire =
        NodeCommand.of(new Command.Acquire(set, TOKEN, 10_000, false, GUARD_MILLIS));
    acquire.incarnation = oldRun();
    assertEquals(1, acquire.parts());
    assertEquals(NodeCommand.Verb.EVALSHA, acquire.verb());
    assertTrue(acquire.ofAttempt());
    // counter, marker, admitted
    List<Object> read = Arrays.asList(number(11), number(1), null);
    assertFalse(acquire.collect(List.of(masterTime(), bytes("OK"), read)));
    acquire.complete(List.of(masterTime(), bytes("OK"), read));
    NodeReply reply = acquire.reply.join();
    assertEquals(Vote.GRANTED, reply.status(), reply::detail);
    assertEquals(11, reply.fence());
    assertEquals(1_700_000_000_123_456L, reply.timeMicros());

    assertEquals(4, keySetFence(number(4)));
    assertEquals(0, keySetFence(null));
    assertEquals(
        "unexpected reply to ACQUIRE_SET",
        keySetFailure(Arrays.asList(number(4), number(1), null, number(9))),
        "a read of another shape (a script of another version) is no vote");

    NodeCommand young =
        NodeCommand.of(new Command.Acquire(set, TOKEN, 10_000, false, GUARD_MILLIS));
    young.incarnation = oldRun();
    young.complete(
        List.of(
            masterTime(),
            bytes("OK"),
            Arrays.asList(null, number(MASTER_MILLIS - GUARD_MILLIS + 1), null)));
    assertEquals(Vote.RESTARTED, judged(young).status(), "the guard reads the marker");

    NodeCommand taken = NodeCommand.of(new Command.Acquire(set, TOKEN, 10_000, false, 0));
    taken.complete(List.of(masterTime(), new ArrayList<>(List.of()), read(null, null, null)));
    assertEquals("unexpected reply to ACQUIRE", failure(taken), "the SET part must be nil or OK");
  }

  private static String keySetFailure(List<Object> read) {
    LockKey.Set set = LockKey.of(List.of(bytes("a"), bytes("b"), bytes("c")));
    NodeCommand acquire = NodeCommand.of(new Command.Acquire(set, TOKEN, 10_000, false, 0));
    acquire.complete(Arrays.asList(masterTime(), null, read));
    return failure(acquire);
  }

  private static long keySetFence(Object counter) {
    LockKey.Set set = LockKey.of(List.of(bytes("a"), bytes("b"), bytes("c")));
    NodeCommand acquire = NodeCommand.of(new Command.Acquire(set, TOKEN, 10_000, false, 0));
    acquire.complete(Arrays.asList(masterTime(), null, Arrays.asList(counter, number(1), null)));
    NodeReply reply = acquire.reply.join();
    assertEquals(Vote.TAKEN, reply.status());
    return reply.fence();
  }

  @Test
  void aMalformedKeySetReplyIsNoVote() {
    LockKey.Set set = LockKey.of(List.of(bytes("a"), bytes("b")));
    for (Object answer :
        Arrays.asList(
            1L,
            List.of(masterTime(), bytes("OK")),
            Arrays.asList(masterTime(), bytes("OK"), number(1)),
            Arrays.asList(masterTime(), bytes("OK"), Arrays.asList(null, null)),
            Arrays.asList(
                masterTime(), bytes("OK"), Arrays.asList(null, number(1), null, bytes("x"))))) {
      NodeCommand acquire = NodeCommand.of(new Command.Acquire(set, TOKEN, 10_000, false, 0));
      acquire.complete(answer);
      assertTrue(failure(acquire).startsWith("unexpected reply to ACQUIRE"), answer::toString);
    }
    NodeCommand error = NodeCommand.of(new Command.Acquire(set, TOKEN, 10_000, false, 0));
    error.complete(new ServerError("NOSCRIPT No matching script"));
    assertEquals("NOSCRIPT No matching script", failure(error));
  }

  @Test
  void theAdmitNamesTheRunOfItsLinkAndFailsWhenTheRunIsUnknown() {
    NodeCommand admit = NodeCommand.of(new Command.Admit());
    admit.incarnation = oldRun();
    byte[][] words = admit.arguments();
    assertArrayEquals(bytes(RUN), words[words.length - 1]);
    assertArrayEquals(LuaScript.ADMIT.sha1(), words[0]);
    assertArrayEquals(bytes("2"), words[1], "two keys");
    admit.complete(1L);
    assertEquals(Vote.GRANTED, admit.reply.join().status());

    NodeCommand unconnected = NodeCommand.of(new Command.Admit());
    unconnected.complete(1L);
    assertEquals("cannot admit: the server run is unknown (not connected)", failure(unconnected));

    NodeCommand unseen = NodeCommand.of(new Command.Admit());
    unseen.incarnation = new Incarnation(null, 0, null, false, false, "INFO refused: NOPERM");
    assertEquals(0, unseen.arguments()[unseen.arguments().length - 1].length, "no run to admit");
    unseen.complete(1L);
    assertEquals("cannot admit: the server run is unknown (INFO refused: NOPERM)", failure(unseen));

    NodeCommand mark = NodeCommand.markBirth();
    mark.incarnation = oldRun();
    assertEquals(0, mark.arguments()[mark.arguments().length - 1].length, "admits no run");
    mark.complete(0L);
    assertEquals(Vote.TAKEN, mark.reply.join().status());
    assertFalse(
        mark.sameLease(NodeCommand.of(new Command.Admit())), "the admit belongs to no lease");
  }

  @Test
  void aQueryAnswersItsRawValueAndItsErrorAsAFailure() {
    NodeCommand info = NodeCommand.query(NodeCommand.Verb.INFO, "server");
    assertEquals(NodeCommand.Verb.INFO, info.verb());
    assertArrayEquals(new byte[][] {bytes("server")}, info.arguments());
    byte[] text = bytes("run_id:x");
    info.complete(text);
    assertSame(text, info.value.join());
    assertFalse(info.ofAttempt());
    assertFalse(info.callsScript());

    NodeCommand refused = NodeCommand.query(NodeCommand.Verb.CONFIG, "GET", "maxmemory");
    refused.complete(new ServerError("NOPERM config\nx"));
    CompletionException thrown = assertThrows(CompletionException.class, refused.value::join);
    assertEquals("NOPERM config", thrown.getCause().getMessage());
  }

  @Test
  void aScriptIsSentBySha1UntilItMustGoWhole() {
    NodeCommand extend = NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN, 5_000));
    assertEquals(NodeCommand.Verb.EVALSHA, extend.verb());
    assertArrayEquals(
        new byte[][] {LuaScript.EXTEND.sha1(), bytes("1"), KEY, TOKEN, bytes("5000")},
        extend.arguments());
    assertEquals(extend.bytes, extend.counted());
    extend.sendWhole = true;
    extend.countedWhole = true;
    assertEquals(NodeCommand.Verb.EVAL, extend.verb());
    assertArrayEquals(LuaScript.EXTEND.body(), extend.arguments()[0]);
    assertEquals(extend.bytes + LuaScript.EXTEND.body().length, extend.counted());

    NodeCommand load = NodeCommand.load(LuaScript.FENCE);
    assertEquals(NodeCommand.Verb.SCRIPT, load.verb());
    assertArrayEquals(new byte[][] {bytes("LOAD"), LuaScript.FENCE.body()}, load.arguments());
    load.complete(LuaScript.FENCE.sha1());
    assertEquals(Vote.GRANTED, load.reply.join().status());
    assertFalse(load.callsScript(), "SCRIPT LOAD cannot meet NOSCRIPT");
    assertTrue(load.bytes > LuaScript.FENCE.body().length, "a load carries the script's body");
  }

  @Test
  void onlyTheCleanupOfAnAcquireCountsAsAnAttemptAmongTheReleases() {
    assertTrue(NodeCommand.of(Command.releaseQuietly(LockKey.of(KEY), TOKEN)).ofAttempt());
    assertFalse(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN)).ofAttempt());
    assertFalse(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN, 1)).ofAttempt());
    assertTrue(NodeCommand.set(KEY, TOKEN, 1).ofAttempt());
    assertTrue(
        NodeCommand.of(Command.releaseQuietly((LockKey.of(List.of(KEY))), TOKEN)).ofAttempt());
    assertTrue(
        NodeCommand.of(new Command.AcquireInTurn(KEY, TOKEN, 1, 0, bytes("w"), 1)).ofAttempt());
    assertTrue(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN)).callsScript());
    assertTrue(
        NodeCommand.of(new Command.AcquireInTurn(KEY, TOKEN, 1, 0, bytes("w"), 1)).callsScript());
  }

  @Test
  void commandsOfOneLeaseAreTheScriptsWithItsKeyAndToken() {
    byte[] other = bytes("other");
    assertTrue(
        NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN))
            .sameLease(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN, 1))));
    assertTrue(
        NodeCommand.of(new Command.Fence(LockKey.of(KEY), TOKEN, 3))
            .sameLease(NodeCommand.of(new Command.Shorten(LockKey.of(KEY), TOKEN, 1))));
    assertFalse(
        NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN))
            .sameLease(NodeCommand.of(Command.release(LockKey.of(KEY), other))));
    assertFalse(
        NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN))
            .sameLease(NodeCommand.of(Command.release(LockKey.of(other), TOKEN))));
    assertFalse(
        NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN))
            .sameLease(NodeCommand.set(KEY, TOKEN, 1)));
    assertFalse(
        NodeCommand.set(KEY, TOKEN, 1)
            .sameLease(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN))));
    assertFalse(
        NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 1, true, 0))
            .sameLease(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN))));
    assertFalse(NodeCommand.of(new Command.Admit()).sameLease(NodeCommand.of(new Command.Admit())));
    LockKey.Set set = LockKey.of(List.of(bytes("a"), bytes("b")));
    assertTrue(
        NodeCommand.of(new Command.Acquire(set, TOKEN, 1, false, 0))
            .sameLease(NodeCommand.of(Command.release(set, TOKEN))));
    assertTrue(
        NodeCommand.of(new Command.AcquireInTurn(KEY, TOKEN, 1, 0, bytes("w"), 1))
            .sameLease(NodeCommand.of(Command.releaseAtGate(LockKey.of(KEY), TOKEN))));
  }

  /**
   * A waiter's place in a gate's queue is its own: its joins, leaves and acquires in turn are one
   * lease's commands (a leave that ran overtakes the same waiter's kept join), and another waiter's
   * are not, although joins and leaves carry no token (before, any two of them on one key were one
   * lease's, and one waiter's leave that ran dropped another's kept leave: a ghost in the queue).
   */
  @Test
  void queueCommandsAreOneLeasesWhenTheyAreOneWaitersOnOneKey() {
    byte[] first = bytes("waiter-1");
    byte[] second = bytes("waiter-2");
    NodeCommand leave = NodeCommand.of(new Command.Leave(KEY, first));
    assertTrue(leave.sameLease(NodeCommand.of(new Command.Join(KEY, first, 10))));
    assertTrue(
        leave.sameLease(NodeCommand.of(new Command.AcquireInTurn(KEY, TOKEN, 1, 0, first, 1))));
    assertFalse(leave.sameLease(NodeCommand.of(new Command.Leave(KEY, second))), "leaves");
    assertFalse(leave.sameLease(NodeCommand.of(new Command.Join(KEY, second, 10))), "join");
    assertFalse(
        leave.sameLease(NodeCommand.of(new Command.Leave(bytes("other"), first))), "other key");
    assertFalse(
        leave.sameLease(NodeCommand.of(Command.releaseAtGate(LockKey.of(KEY), new byte[0]))),
        "a release is no waiter's");
    assertFalse(
        NodeCommand.of(new Command.AcquireInTurn(KEY, TOKEN, 1, 0, first, 1))
            .sameLease(
                NodeCommand.of(new Command.AcquireInTurn(KEY, bytes("t2"), 1, 0, second, 1))),
        "two waiters' acquires in turn");
  }

  @Test
  void theReleasesAtTheGateAndAfterItCarryWhatTheScriptNeeds() {
    assertArrayEquals(
        new byte[][] {
          LuaScript.RELEASE.sha1(),
          bytes("3"),
          KEY,
          LuaScript.prefixed(LuaScript.QUEUE_PREFIX, KEY),
          LuaScript.prefixed(LuaScript.QUEUE_SEEN_PREFIX, KEY),
          TOKEN
        },
        NodeCommand.of(Command.releaseAtGate(LockKey.of(KEY), TOKEN)).arguments());
    assertArrayEquals(
        new byte[][] {LuaScript.RELEASE.sha1(), bytes("1"), KEY, TOKEN, bytes("next")},
        NodeCommand.of(Command.releaseAtNext(LockKey.of(KEY), TOKEN)).arguments());
    assertArrayEquals(
        new byte[][] {LuaScript.RELEASE.sha1(), bytes("1"), KEY, TOKEN, bytes("notice")},
        NodeCommand.of(new Command.Notice(KEY, TOKEN)).arguments());
    assertArrayEquals(
        new byte[][] {LuaScript.RELEASE.sha1(), bytes("1"), KEY, TOKEN, bytes("quiet")},
        NodeCommand.of(Command.releaseQuietly(LockKey.of(KEY), TOKEN)).arguments());
    assertArrayEquals(
        new byte[][] {
          LuaScript.FENCE.sha1(), bytes("2"), KEY, LuaScript.FENCE_COUNTER, TOKEN, bytes("7")
        },
        NodeCommand.of(new Command.Fence(LockKey.of(KEY), TOKEN, 7)).arguments());
    assertArrayEquals(
        new byte[][] {LuaScript.SHORTEN.sha1(), bytes("1"), KEY, TOKEN, bytes("900")},
        NodeCommand.of(new Command.Shorten(LockKey.of(KEY), TOKEN, 900)).arguments());
    assertArrayEquals(
        queueCall("leave", "0"),
        NodeCommand.of(new Command.Leave(KEY, bytes("waiter"))).arguments());
    assertArrayEquals(
        queueCall("join", "250"),
        NodeCommand.of(new Command.Join(KEY, bytes("waiter"), 250)).arguments());
    LockKey.Set set = LockKey.of(List.of(bytes("a")));
    assertArrayEquals(
        NodeCommand.of(Command.release(set, TOKEN)).arguments(),
        NodeCommand.of(Command.releaseAtGate(set, TOKEN)).arguments());
  }

  /** The arguments of queue.lua's {@code op} for the waiter named "waiter" on {@link #KEY}. */
  private static byte[][] queueCall(String op, String staleMillis) {
    return new byte[][] {
      LuaScript.QUEUE.sha1(),
      bytes("6"),
      KEY,
      LuaScript.FENCE_COUNTER,
      LuaScript.DATASET_MARKER,
      LuaScript.ADMITTED,
      LuaScript.prefixed(LuaScript.QUEUE_PREFIX, KEY),
      LuaScript.prefixed(LuaScript.QUEUE_SEEN_PREFIX, KEY),
      bytes(op),
      new byte[0],
      bytes("0"),
      bytes("waiter"),
      bytes(staleMillis)
    };
  }

  @Test
  void aFailureFailsTheReplyAndAQuerysValue() {
    NodeCommand query = NodeCommand.query(NodeCommand.Verb.TIME);
    NodeUnavailableException gone = new NodeUnavailableException("connection reset");
    query.fail(gone);
    assertTrue(query.reply.isCompletedExceptionally());
    CompletionException thrown = assertThrows(CompletionException.class, query.value::join);
    assertSame(gone, thrown.getCause());
    NodeCommand release = NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN));
    release.fail(gone);
    assertSame(gone, assertThrows(CompletionException.class, release.reply::join).getCause());
    assertNull(release.value);
  }

  @Test
  void theBytesCountedForACommandAreNeverFewerThanItWrites() {
    // The pipeline keeps the unanswered bytes under half the send buffer by this count.
    LockKey.Set set = LockKey.of(List.of(bytes("a"), bytes("b"), bytes("c")));
    for (NodeCommand command :
        List.of(
            NodeCommand.set(KEY, TOKEN, 10_000),
            NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, true, GUARD_MILLIS)),
            NodeCommand.of(new Command.Acquire(set, TOKEN, 10_000, false, GUARD_MILLIS)),
            NodeCommand.of(
                new Command.AcquireInTurn(
                    KEY, TOKEN, 10_000, GUARD_MILLIS, bytes("waiter"), 1_000)),
            NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN)),
            NodeCommand.of(new Command.Extend(set, TOKEN, 10_000)),
            NodeCommand.of(new Command.Fence(LockKey.of(KEY), TOKEN, 12)),
            NodeCommand.of(new Command.Admit()),
            NodeCommand.load(LuaScript.KEY_SET),
            NodeCommand.query(NodeCommand.Verb.CONFIG, "GET", "maxmemory-policy"))) {
      int written = 0;
      for (int part = 0; part < command.parts(); part++) {
        written += Resp.length(LinkOutput.verb(command.verb(part)), command.arguments(part));
      }
      assertTrue(command.bytes >= written, command.kind + ": " + command.bytes + " < " + written);
    }
  }
}
