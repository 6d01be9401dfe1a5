package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.CapturedLog;
import dev.redlock.internal.transport.CommandPipelineTest.RecordingLink;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A master's pipeline through its life, on fake links and a fake clock: the connection attempts and
 * who hears of them, the queue's bound as commands come and go (waiting, written, reloaded,
 * answered, failed), the stall limit, what a blocking transport's I/O thread is told to do, the
 * waits for the first attempt and for the drain, and the close. {@link CommandPipelineTest} has the
 * script reloads; {@link CommandPipelineBackOffTest} the back-off.
 */
class CommandPipelineLifecycleTest {

  private static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final byte[] KEY = bytes("job");
  private static final byte[] TOKEN = bytes("t".repeat(32));

  /** A wait the code under test has no reason to need: only a broken pipeline takes it. */
  private static final long BOUND_SECONDS = 10;

  private final FakeTicker ticker = new FakeTicker();
  private final AtomicInteger connects = new AtomicInteger();
  private final CommandPipeline<KickedLink> pipeline =
      new CommandPipeline<>(ticker, STALL_NANOS, connects::incrementAndGet);
  private final Heard heard = new Heard();
  @RegisterExtension final CapturedLog log = new CapturedLog();
  private final List<Thread> waiterThreads = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final ExecutorService waiters =
      Executors.newCachedThreadPool(
          task -> {
            Thread thread = new Thread(task, "pipeline-waiter");
            thread.setDaemon(true);
            waiterThreads.add(thread);
            return thread;
          });

  @AfterEach
  void stopWaiters() {
    waiters.shutdownNow(); // a wait the pipeline failed to end: interrupted, it returns
  }

  // ---- connection attempts, and who hears of them

  @Test
  void aWatcherHearsOfAFailedAttemptAtOnceWhenItComesLateAndOfEachLaterAttemptAsItEnds() {
    pipeline.watch(heard);
    assertEquals(List.of(), heard.told, "no attempt has ended yet");
    pipeline.connected(null, "connection refused", ticker.read());
    assertEquals(List.of("failed: connection refused"), heard.told);

    Heard late = new Heard();
    pipeline.watch(late);
    assertEquals(List.of("failed: connection refused"), late.told, "told at once: it came late");

    pipeline.submit(release()); // the retry time has come: a new attempt
    KickedLink link = new KickedLink();
    pipeline.connected(link, null, 0);
    assertEquals(List.of("failed: connection refused", "connected"), late.told);
    Heard afterOpening = new Heard();
    pipeline.watch(afterOpening);
    assertEquals(List.of(), afterOpening.told, "the last attempt opened a link: nothing to tell");
  }

  @Test
  void aWatcherWhoseFirstAttemptIsUnderWayHearsNothingUntilItEnds() {
    Heard early = new Heard();
    pipeline.watch(early);
    assertEquals(List.of(), early.told);
    pipeline.connected(new KickedLink(), null, 0);
    assertEquals(List.of("connected"), early.told);
  }

  @Test
  void anOpenedLinkSendsWhatWaitedAndIsKickedOnce() {
    NodeCommand first = submit(release());
    NodeCommand second = submit(release());
    assertFalse(first.reply.isDone(), "waits for the link");
    KickedLink link = new KickedLink();
    pipeline.connected(link, null, 0);
    assertEquals(2, link.written.size(), "both written on the new link");
    assertEquals(1, link.kicks.get(), "kicked once for what waited");
    assertFalse(second.reply.isDone());
    submit(release());
    assertEquals(2, link.kicks.get(), "and once for each command written on it");
  }

  @Test
  void aLinkThatBreaksWritingWhatWaitedIsClosedAndItsAttemptIsNoConnection() {
    pipeline.watch(heard);
    NodeCommand waited = submit(release());
    KickedLink breaking = new KickedLink();
    breaking.breaks = true;
    pipeline.connected(breaking, null, 0);
    assertTrue(breaking.closed, "closed");
    assertEquals(0, breaking.kicks.get(), "a broken link is not kicked");
    assertEquals(List.of(), heard.told, "neither connected nor a failed attempt");
    assertTrue(failure(waited).getMessage().contains("broken pipe"), failure(waited)::getMessage);
  }

  @Test
  void aLinkOpenedAfterTheCloseIsClosedAndNoOneHearsOfIt() {
    pipeline.watch(heard);
    pipeline.close();
    KickedLink late = new KickedLink();
    pipeline.connected(late, null, 0);
    assertTrue(late.closed, "the closed pipeline does not keep it");
    assertEquals(0, late.kicks.get());
    pipeline.connected(null, "connection refused", 0);
    assertEquals(List.of(), heard.told, "a closed client's attempts are no news");
  }

  @Test
  void aFailedAttemptFailsWhatWaitedWithItsErrorAndTheNextLinkNeverSendsIt() {
    NodeCommand waited = submit(release());
    pipeline.connected(null, "connection refused", ticker.read());
    NodeUnavailableException failed = failure(waited);
    assertEquals("connection refused", failed.getMessage());
    assertFalse(failed.mayHaveRun(), "never written");
    assertFalse(failed.clientSide(), "the master's doing");

    NodeCommand next = submit(release());
    assertEquals(1, connects.get(), "the next command starts the next attempt");
    KickedLink link = new KickedLink();
    pipeline.connected(link, null, 0);
    assertEquals(1, link.written.size(), "only the next command: the failed one is gone");
    assertFalse(next.reply.isDone());
    assertEquals(QueueLimit.COMMANDS - 1, roomLeft(), "and only it is counted");
  }

  @Test
  void untilTheRetryTimeCommandsFailAtOnceWithTheAttemptsError() {
    pipeline.connected(
        null, "connection refused", ticker.read() + TimeUnit.MILLISECONDS.toNanos(5));
    NodeUnavailableException refused = failure(submit(release()));
    assertEquals("connection refused", refused.getMessage());
    assertFalse(refused.clientSide());
    assertEquals(0, connects.get());
    ticker.advance(Duration.ofMillis(5));
    assertFalse(submit(release()).reply.isDone(), "at the retry time: a new attempt");
    assertEquals(1, connects.get());
  }

  // ---- the queue's bound as commands come and go

  @Test
  void commandsWaitingForTheFirstLinkCountAndBeyondTheBoundFailAsTheClientsOwn() {
    for (int i = 0; i < roomBeforeALink(); i++) {
      assertFalse(submit(release()).reply.isDone(), "waits for the link");
    }
    NodeUnavailableException full = failure(submit(release()));
    assertTrue(full.clientSide(), full.getMessage());
    assertTrue(full.getMessage().startsWith(QueueLimit.QUEUE_FULL), full.getMessage());
  }

  @Test
  void theCommandThatStartsAnAttemptCountsAsTheOnesThatWaitForIt() {
    KickedLink link = open();
    pipeline.lost(link, "connection closed by the master");
    submit(release()); // starts the attempt
    assertEquals(1, connects.get());
    for (int i = 1; i < QueueLimit.COMMANDS; i++) {
      assertFalse(submit(release()).reply.isDone()); // the last link's send buffer: commands bind
    }
    assertTrue(failure(submit(release())).clientSide(), "the bound counts the first one too");
  }

  @Test
  void answeredCommandsLeaveTheQueue() {
    KickedLink link = open();
    for (int i = 0; i < 3 * QueueLimit.COMMANDS; i++) {
      NodeCommand command = submit(release());
      assertTrue(pipeline.replied(link, 1L));
      assertTrue(command.reply.isDone(), "answered");
    }
    assertEquals(QueueLimit.COMMANDS, roomLeft(), "all room back");
  }

  @Test
  void aLostLinksCommandsLeaveTheQueueAndMayHaveRunWhereWritten() {
    KickedLink link = open();
    submit(release());
    assertTrue(pipeline.replied(link, 1L)); // it answered: a loss reconnects at once
    List<NodeCommand> written = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      written.add(submit(release()));
    }
    pipeline.lost(link, "connection reset");
    for (NodeCommand command : written) {
      NodeUnavailableException lost = failure(command);
      assertEquals("connection lost: connection reset", lost.getMessage());
      assertTrue(lost.mayHaveRun(), "written, unanswered: the master may have run it");
      assertFalse(lost.clientSide());
    }
    submit(release()); // reconnects
    assertEquals(1, connects.get());
    pipeline.connected(new KickedLink(), null, 0);
    assertEquals(QueueLimit.COMMANDS - 1, roomLeft(), "only the new command is counted");
  }

  @Test
  void theReloadAndTheCommandsThatWaitBehindItCountAndLeaveWhenAnswered() {
    KickedLink link = open();
    NodeCommand extend = submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN, 30_000)));
    int kicks = link.kicks.get();
    assertTrue(pipeline.replied(link, noScript()));
    assertEquals(kicks + 1, link.kicks.get(), "kicked for the reload");
    int scripts = LuaScript.ALL.size();
    assertEquals(1 + scripts, link.written.size(), "the extend, then the reload");
    List<NodeCommand> behind = new ArrayList<>();
    while (true) {
      NodeCommand command = submit(release());
      if (command.reply.isDone()) {
        assertTrue(failure(command).clientSide());
        break;
      }
      behind.add(command);
    }
    assertEquals(
        QueueLimit.COMMANDS - 1 - scripts,
        behind.size(),
        "the extend kept for sending again and the reload's commands count");
    for (LuaScript script : LuaScript.ALL) {
      assertTrue(pipeline.replied(link, script.sha1()));
    }
    assertTrue(pipeline.replied(link, 1L)); // the extend, sent again
    assertTrue(extend.reply.isDone());
    for (NodeCommand command : behind) {
      assertTrue(pipeline.replied(link, 1L));
      assertTrue(command.reply.isDone());
    }
    assertEquals(QueueLimit.COMMANDS, roomLeft(), "all room back after the reload");
  }

  @Test
  void aCommandOvertakenDuringAReloadLeavesTheQueue() {
    KickedLink link = open();
    NodeCommand extend = submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN, 30_000)));
    NodeCommand shorten =
        submit(NodeCommand.of(new Command.Shorten(LockKey.of(KEY), TOKEN, 2_000)));
    assertTrue(pipeline.replied(link, noScript())); // the extend's: kept, a reload written
    assertTrue(pipeline.replied(link, 1L)); // the shorten ran: the extend is overtaken
    assertTrue(shorten.reply.isDone());
    assertTrue(extend.reply.isCompletedExceptionally(), "overtaken: failed");
    for (LuaScript script : LuaScript.ALL) {
      assertTrue(pipeline.replied(link, script.sha1()));
    }
    assertEquals(QueueLimit.COMMANDS, roomLeft(), "the overtaken extend is out of the count");
  }

  @Test
  void aScriptSentWholeCountsItsBodyAgainstTheBytesBound() {
    KickedLink whole = new KickedLink();
    whole.scriptsLoaded = false; // every script goes by EVAL, body and all
    whole.sendBufferBytes = 0; // the bytes' bound is its least
    pipeline.connected(whole, null, 0);
    int sha = release().bytes;
    int body = LuaScript.RELEASE.body().length;
    // Room for one more while what is queued, and the next by its SHA-1, fit the bound.
    assertEquals((QueueLimit.MIN_BYTES - sha) / (sha + body) + 1, roomLeft());
  }

  // ---- the stall limit

  @Test
  void aLinkWhoseOldestCommandWaitedPastTheStallLimitIsDroppedByTheNextCommand() {
    KickedLink link = open();
    NodeCommand stalled = submit(release());
    ticker.advance(Duration.ofNanos(STALL_NANOS));
    NodeCommand atTheLimit = submit(release());
    assertFalse(link.closed, "at the limit, not past it");
    assertFalse(stalled.reply.isDone());
    assertEquals(2, link.written.size());

    ticker.advance(Duration.ofNanos(1));
    NodeCommand next = submit(release());
    assertTrue(link.closed, "dropped");
    NodeUnavailableException dropped = failure(stalled);
    assertEquals("connection dropped: no reply for 10000 ms", dropped.getMessage());
    assertTrue(dropped.mayHaveRun());
    assertTrue(atTheLimit.reply.isCompletedExceptionally());
    assertEquals(1, connects.get(), "the next command reconnects at once");
    KickedLink fresh = new KickedLink();
    pipeline.connected(fresh, null, 0);
    assertEquals(1, fresh.written.size(), "it was written on the new link");
    assertFalse(next.reply.isDone());
  }

  @Test
  void theStallLimitIsTwentyNodeTimeoutsAndNeverUnderTwoSeconds() {
    assertEquals(CommandPipeline.MIN_STALL_NANOS, CommandPipeline.stallNanos(ms(50)));
    assertEquals(CommandPipeline.MIN_STALL_NANOS, CommandPipeline.stallNanos(ms(100)));
    assertEquals(ms(20_000), CommandPipeline.stallNanos(ms(1_000)));
  }

  private static long ms(long millis) {
    return TimeUnit.MILLISECONDS.toNanos(millis);
  }

  @Test
  void aCommandWhoseWriteBreaksTheLinkFailsWithItAndTheLinksOthers() {
    KickedLink link = open();
    NodeCommand earlier = submit(release());
    link.breaks = true;
    NodeCommand breaking = submit(release());
    assertTrue(link.closed);
    assertEquals("connection dropped: broken pipe", failure(breaking).getMessage());
    assertEquals("connection dropped: broken pipe", failure(earlier).getMessage());
    assertTrue(failure(earlier).mayHaveRun(), "written before the break");
  }

  // ---- replies

  @Test
  void aCommandIsTimedFromItsWriteToItsAnswer() {
    NodeCommand waiting = submit(release());
    assertEquals(-1, waiting.reply.silentNanos(ticker.read()), "not written: not timed");
    KickedLink link = open();
    ticker.advance(Duration.ofMillis(3));
    assertEquals(TimeUnit.MILLISECONDS.toNanos(3), waiting.reply.silentNanos(ticker.read()));
    ticker.advance(Duration.ofMillis(4));
    assertTrue(pipeline.replied(link, 1L));
    assertEquals(TimeUnit.MILLISECONDS.toNanos(7), waiting.reply.masterNanos());
  }

  @Test
  void aDifferentServerRunUpSinceBeforeTheLastWasHeardIsLoggedOnceAsAReplacement() {
    KickedLink first = new KickedLink();
    first.facts = new Incarnation.Facts("run-a", 100, false, null);
    pipeline.connected(first, null, 0);
    pipeline.lost(first, "connection reset");
    KickedLink sameRun = new KickedLink();
    sameRun.facts = new Incarnation.Facts("run-a", 100, false, null);
    pipeline.submit(release());
    pipeline.connected(sameRun, null, 0);
    assertEquals(List.of(), log.lines("WARN", "a different server"), "the same run: no news");

    pipeline.lost(sameRun, "connection reset");
    ticker.advance(Duration.ofMillis(1));
    KickedLink other = new KickedLink();
    other.facts = new Incarnation.Facts("run-b", 100, false, null); // up 99 s: before run-a's
    pipeline.submit(release());
    pipeline.connected(other, null, 0);
    List<String> warned = log.lines("WARN", "a different server answers");
    assertEquals(1, warned.size(), log::text);
    assertTrue(warned.get(0).contains("run-a -> run-b"), warned.get(0));
  }

  @Test
  void aReplyFromALinkNoLongerThePipelinesStopsItsReaderAndCompletesNothing() {
    KickedLink old = open();
    pipeline.lost(old, "connection reset");
    submit(release());
    pipeline.connected(new KickedLink(), null, 0);
    NodeCommand pending = submit(release());
    assertFalse(pipeline.replied(old, 1L), "not the pipeline's link: its reader stops");
    assertFalse(pending.reply.isDone(), "the reply was not the new link's");
  }

  @Test
  void eachPartOfAnAcquireKeepsItsReaderGoingAndTheLastCompletesIt() {
    KickedLink link = open();
    NodeCommand acquire =
        submit(NodeCommand.of(new Command.Acquire(LockKey.of(KEY), TOKEN, 10_000, true, 0)));
    assertEquals(3, acquire.parts());
    assertTrue(pipeline.replied(link, List.of(bytes("1700000000"), bytes("0"))), "the TIME");
    assertTrue(pipeline.replied(link, bytes("OK")), "the SET");
    assertFalse(acquire.reply.isDone(), "two of three parts");
    List<Object> counters = new ArrayList<>(List.of(bytes("7"), bytes("7")));
    counters.add(null);
    counters.add(null);
    assertTrue(pipeline.replied(link, counters), "the MGET");
    assertTrue(acquire.reply.isDone(), "the last part completes it");
  }

  @Test
  void aCommandAnsweredNoscriptTwiceWhoseReloadBreaksTheLinkFailsAtOnce() {
    Reloading reloading = extendAnsweredNoscript();
    RecordingLink link = reloading.link();
    CommandPipeline<RecordingLink> recorded = reloading.pipeline();
    NodeCommand extend = reloading.extend();
    for (LuaScript script : LuaScript.ALL) {
      assertTrue(recorded.replied(link, script.sha1()));
    }
    link.breaksAt = "SCRIPT LOAD";
    assertFalse(
        recorded.replied(link, noScript()), "sent whole and refused again; the reload broke");
    NodeUnavailableException lost = failure(extend);
    assertEquals("connection lost: broken pipe", lost.getMessage());
  }

  @Test
  void aCommandAnsweredNoscriptAfterItWasSentWholeLeavesTheQueue() {
    KickedLink link = open();
    NodeCommand extend = submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN, 30_000)));
    assertTrue(pipeline.replied(link, noScript()));
    answerReload(link);
    assertTrue(pipeline.replied(link, noScript()), "sent whole, refused again: a failed vote");
    assertTrue(extend.reply.isCompletedExceptionally());
    answerReload(link); // the second reload
    assertEquals(QueueLimit.COMMANDS, roomLeft(), "nothing left counted");
  }

  @Test
  void aLinkThatBreaksSendingWhatWaitedBehindTheReloadFailsItAndStopsItsReader() {
    Reloading reloading = extendAnsweredNoscript();
    RecordingLink link = reloading.link();
    CommandPipeline<RecordingLink> recorded = reloading.pipeline();
    NodeCommand extend = reloading.extend();
    NodeCommand behind = NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN));
    recorded.submit(behind); // waits behind the reload
    link.breaksAt = "EVALSHA release";
    List<LuaScript> scripts = LuaScript.ALL;
    for (LuaScript script : scripts.subList(0, scripts.size() - 1)) {
      assertTrue(recorded.replied(link, script.sha1()));
    }
    assertFalse(
        recorded.replied(link, scripts.get(scripts.size() - 1).sha1()),
        "the link broke sending the release: its reader stops");
    assertTrue(link.closed);
    assertEquals("connection lost: broken pipe", failure(behind).getMessage());
    assertEquals("connection lost: broken pipe", failure(extend).getMessage());
  }

  // ---- a blocking transport's I/O thread

  @Test
  void theIoThreadIsToldToConnectThenToReadTheLinkThenToStop() throws Exception {
    assertInstanceOf(CommandPipeline.Connect.class, within(pipeline::awaitWork));
    KickedLink link = new KickedLink();
    pipeline.connected(link, null, 0);
    CommandPipeline.Work<KickedLink> read = within(pipeline::awaitWork);
    assertEquals(new CommandPipeline.Read<>(link), read);
    pipeline.close();
    assertInstanceOf(CommandPipeline.Stop.class, within(pipeline::awaitWork));
  }

  @Test
  void anIdleIoThreadWaitsUntilACommandAsksForALinkOrTheClose() throws Exception {
    KickedLink link = open();
    pipeline.lost(link, "connection closed by the master");
    Future<CommandPipeline.Work<KickedLink>> work = waiters.submit(pipeline::awaitWork);
    awaitWaiting(work);
    submit(release());
    assertInstanceOf(CommandPipeline.Connect.class, work.get(BOUND_SECONDS, TimeUnit.SECONDS));

    pipeline.connected(null, "connection refused", ticker.read());
    Future<CommandPipeline.Work<KickedLink>> stop = waiters.submit(pipeline::awaitWork);
    awaitWaiting(stop);
    pipeline.close();
    assertInstanceOf(CommandPipeline.Stop.class, stop.get(BOUND_SECONDS, TimeUnit.SECONDS));
  }

  @Test
  void theIoThreadsOwnFailureFailsEveryCommandAsTheClientsOwnAndStopsThePipeline() {
    KickedLink link = open();
    NodeCommand written = submit(release());
    pipeline.failed("OutOfMemoryError");
    NodeUnavailableException failed = failure(written);
    assertEquals("I/O thread failed: OutOfMemoryError", failed.getMessage());
    assertTrue(failed.clientSide(), "not the master's doing");
    assertTrue(failed.mayHaveRun());
    NodeUnavailableException after = failure(submit(release()));
    assertEquals(CommandPipeline.CLIENT_CLOSED, after.getMessage());
    assertTrue(after.clientSide());
    assertFalse(link.closed, "the transport closes its own link");
  }

  // ---- the waits for the first attempt and for the drain

  @Test
  void theWaitForTheFirstAttemptEndsWhenItEnds() throws Exception {
    Future<?> first = waiters.submit(() -> pipeline.awaitFirstAttempt(far()));
    awaitWaiting(first);
    pipeline.connected(new KickedLink(), null, 0);
    first.get(BOUND_SECONDS, TimeUnit.SECONDS);
    within(() -> pipeline.awaitFirstAttempt(far())); // ended already: returns at once
  }

  @Test
  void theWaitForTheFirstAttemptEndsWhenItFails() throws Exception {
    Future<?> first = waiters.submit(() -> pipeline.awaitFirstAttempt(far()));
    awaitWaiting(first);
    pipeline.connected(null, "connection refused", 0);
    first.get(BOUND_SECONDS, TimeUnit.SECONDS);
  }

  @Test
  void noCallLeavesThePipelinesLockHeld() throws Exception {
    KickedLink link = open();
    pipeline.watch(heard);
    pipeline.awaitFirstAttempt(ticker.read());
    submit(release());
    pipeline.awaitDrained(ticker.read());
    within(() -> pipeline.submit(release())); // another thread takes the lock
    assertTrue(pipeline.replied(link, 1L));
    pipeline.failed("OutOfMemoryError");
    within(() -> pipeline.submit(release()));
  }

  @Test
  void theWaitForTheFirstAttemptEndsWithTheClose() throws Exception {
    Future<?> first = waiters.submit(() -> pipeline.awaitFirstAttempt(far()));
    awaitWaiting(first);
    pipeline.close();
    first.get(BOUND_SECONDS, TimeUnit.SECONDS);
  }

  @Test
  void theDrainWaitsForTheLastReply() throws Exception {
    KickedLink link = open();
    submit(release());
    submit(release());
    Future<?> drained = waiters.submit(() -> pipeline.awaitDrained(far()));
    awaitWaiting(drained);
    assertTrue(pipeline.replied(link, 1L));
    awaitWaiting(drained); // one still in flight
    assertTrue(pipeline.replied(link, 1L));
    drained.get(BOUND_SECONDS, TimeUnit.SECONDS);
  }

  @Test
  void theDrainEndsWhenTheLinkIsLost() throws Exception {
    KickedLink link = open();
    submit(release());
    Future<?> drained = waiters.submit(() -> pipeline.awaitDrained(far()));
    awaitWaiting(drained);
    pipeline.lost(link, "connection reset");
    drained.get(BOUND_SECONDS, TimeUnit.SECONDS);
  }

  @Test
  void theDrainEndsAtItsDeadlineWithCommandsStillInFlight() throws Exception {
    open();
    NodeCommand unanswered = submit(release());
    long now = ticker.read();
    within(() -> pipeline.awaitDrained(now)); // the deadline is now: returns at once
    within(() -> pipeline.awaitDrained(now - 1));
    assertFalse(unanswered.reply.isDone());
  }

  @Test
  @Timeout(10) // parked on the condition instead, the fake clock never reaches the deadline
  void aPipelineWithItsOwnWaitsDrainsThroughThemOnTheCallersThread() {
    // A simulation's waits run its events (here, one master's reply each) on the caller's thread
    // until the pipeline has drained: the caller is never parked on the condition.
    KickedLink[] link = new KickedLink[1];
    List<Long> deadlines = new ArrayList<>();
    CommandPipeline<KickedLink>[] waited = newPipelineArray();
    waited[0] =
        new CommandPipeline<>(
            ticker,
            STALL_NANOS,
            () -> {},
            null,
            (done, deadlineNanos) -> {
              assertFalse(done.getAsBoolean(), "asked to wait only while not drained");
              deadlines.add(deadlineNanos);
              assertTrue(waited[0].replied(link[0], 1L)); // an event: the next reply comes
            });
    link[0] = new KickedLink();
    waited[0].connected(link[0], null, 0);
    NodeCommand first = release();
    NodeCommand second = release();
    waited[0].submit(first);
    waited[0].submit(second);
    long deadline = ticker.read() + STALL_NANOS;
    waited[0].awaitDrained(deadline);
    assertTrue(first.reply.isDone() && second.reply.isDone(), "both answered");
    assertEquals(List.of(deadline, deadline), deadlines, "one wait per reply, to the deadline");
  }

  @Test
  @Timeout(10) // parked on the condition instead, the fake clock never reaches the deadline
  void aPipelineWithItsOwnWaitsStopsAtTheDeadline() {
    // Waits that bring no reply but move the clock (a simulation with nothing left to run) end
    // the drain at its deadline, the command still in flight.
    CommandPipeline<KickedLink> waited =
        new CommandPipeline<>(
            ticker,
            STALL_NANOS,
            () -> {},
            null,
            (done, deadlineNanos) -> ticker.advance(java.time.Duration.ofMillis(1)));
    waited.connected(new KickedLink(), null, 0);
    NodeCommand unanswered = release();
    waited.submit(unanswered);
    waited.awaitDrained(ticker.read() + TimeUnit.MILLISECONDS.toNanos(5));
    assertFalse(unanswered.reply.isDone());
  }

  @SuppressWarnings("unchecked")
  private static CommandPipeline<KickedLink>[] newPipelineArray() {
    return (CommandPipeline<KickedLink>[]) new CommandPipeline<?>[1];
  }

  @Test
  void anInterruptEndsTheDrainAndStaysSet() throws Exception {
    open();
    submit(release());
    Boolean stillInterrupted =
        within(
            () -> {
              Thread.currentThread().interrupt();
              pipeline.awaitDrained(far());
              return Thread.interrupted();
            });
    assertTrue(stillInterrupted, "the interrupt stays set for the caller");
  }

  // ---- the close

  @Test
  void theCloseClosesTheLinkAndFailsItsCommandsAsTheClientsOwn() {
    KickedLink link = open();
    NodeCommand written = submit(release());
    pipeline.close();
    assertTrue(link.closed);
    NodeUnavailableException closed = failure(written);
    assertEquals(CommandPipeline.CLIENT_CLOSED, closed.getMessage());
    assertTrue(closed.clientSide());
    pipeline.close(); // idempotent
  }

  // ---- describe

  @Test
  void anErrorIsDescribedByItsMessageOrItsCausesOrItsType() {
    assertEquals("broken pipe", CommandPipeline.describe(new IllegalStateException("broken pipe")));
    assertEquals(
        "connection reset",
        CommandPipeline.describe(wrapped(new java.io.IOException("connection reset"))),
        "no message of its own: its cause's");
    assertEquals("EOFException", CommandPipeline.describe(wrapped(new java.io.EOFException())));
    assertEquals("IllegalStateException", CommandPipeline.describe(new IllegalStateException()));
    assertEquals(
        "outer",
        CommandPipeline.describe(new RuntimeException("outer", new RuntimeException("inner"))),
        "a message of its own wins over the cause's");
  }

  // ---- helpers

  /** A runtime exception with no message of its own around {@code cause}. */
  private static RuntimeException wrapped(Throwable cause) {
    RuntimeException e = new RuntimeException((String) null);
    e.initCause(cause);
    return e;
  }

  /** A pipeline on a recording link whose extend was answered NOSCRIPT: the reload is written. */
  private Reloading extendAnsweredNoscript() {
    RecordingLink link = new RecordingLink(true);
    CommandPipeline<RecordingLink> recorded = new CommandPipeline<>(ticker, STALL_NANOS, () -> {});
    recorded.connected(link, null, 0);
    NodeCommand extend = NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN, 30_000));
    recorded.submit(extend);
    assertTrue(recorded.replied(link, noScript()));
    return new Reloading(link, recorded, extend);
  }

  private record Reloading(
      RecordingLink link, CommandPipeline<RecordingLink> pipeline, NodeCommand extend) {}

  private void answerReload(KickedLink link) {
    for (LuaScript script : LuaScript.ALL) {
      assertTrue(pipeline.replied(link, script.sha1()));
    }
  }

  private KickedLink open() {
    KickedLink link = new KickedLink();
    pipeline.connected(link, null, 0);
    return link;
  }

  /** Submits releases until one is refused; returns how many found room (they stay queued). */
  private int roomLeft() {
    int accepted = 0;
    while (true) {
      NodeCommand command = submit(release());
      if (command.reply.isCompletedExceptionally()) {
        NodeUnavailableException refused = failure(command);
        assertTrue(refused.clientSide(), refused.getMessage());
        assertTrue(refused.getMessage().startsWith(QueueLimit.QUEUE_FULL), refused.getMessage());
        return accepted;
      }
      accepted++;
      assertNotEquals(10 * QueueLimit.COMMANDS, accepted, "the bound never refused");
    }
  }

  private NodeCommand submit(NodeCommand command) {
    pipeline.submit(command);
    return command;
  }

  private static NodeCommand release() {
    return NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN));
  }

  private static ServerError noScript() {
    return new ServerError("NOSCRIPT No matching script. Please use EVAL.");
  }

  /** How many releases wait for a link before the bytes' least bound refuses one. */
  private static int roomBeforeALink() {
    return (int) Math.min(QueueLimit.COMMANDS, QueueLimit.MIN_BYTES / release().bytes);
  }

  /** A deadline the fake clock never reaches. */
  private long far() {
    return ticker.read() + TimeUnit.DAYS.toNanos(1);
  }

  private static NodeUnavailableException failure(NodeCommand command) {
    assertTrue(command.reply.isCompletedExceptionally(), "failed at once");
    ExecutionException failed = assertThrows(ExecutionException.class, command.reply::get);
    return assertInstanceOf(NodeUnavailableException.class, failed.getCause());
  }

  /** Runs {@code call} on another thread; it must return within the bound. */
  private <T> T within(Callable<T> call) throws Exception {
    return waiters.submit(call).get(BOUND_SECONDS, TimeUnit.SECONDS);
  }

  private void within(Runnable run) throws Exception {
    waiters.submit(run).get(BOUND_SECONDS, TimeUnit.SECONDS);
  }

  /**
   * Waits until the task parks in a wait of the pipeline's (a thread of {@link #waiters} in WAITING
   * or TIMED_WAITING); fails if it ended instead, or never parked within the bound.
   */
  private void awaitWaiting(Future<?> task) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_SECONDS);
    while (System.nanoTime() < deadline) {
      if (task.isDone()) {
        task.get(); // rethrows its failure
        throw new AssertionError("ended without waiting for what it waits for");
      }
      if (waiterThreads.stream().anyMatch(CommandPipelineLifecycleTest::parkedInPipeline)) {
        return;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // look again, leaving the cores free
    }
    throw new TimeoutException("never waited");
  }

  private static boolean parkedInPipeline(Thread thread) {
    Thread.State state = thread.getState();
    if (state != Thread.State.WAITING && state != Thread.State.TIMED_WAITING) {
      return false;
    }
    for (StackTraceElement frame : thread.getStackTrace()) {
      if (frame.getClassName().equals(CommandPipeline.class.getName())) {
        return true;
      }
    }
    return false;
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  /** Hears how connection attempts end, in order. */
  private static final class Heard implements NodeClient.Watcher {
    final List<String> told = new ArrayList<>();

    @Override
    public void connected() {
      told.add("connected");
    }

    @Override
    public void connectFailed(String error) {
      told.add("failed: " + error);
    }
  }

  /** A link that records its writes and kicks, and can break. */
  static final class KickedLink implements CommandPipeline.Link {
    final List<NodeCommand> written = new ArrayList<>();
    final AtomicInteger kicks = new AtomicInteger();
    boolean breaks;
    boolean closed;
    boolean scriptsLoaded = true;
    Incarnation.Facts facts = Incarnation.Facts.unknown("a fake link has no server");
    int sendBufferBytes = 1 << 20; // the bytes' bound: half of it, above the commands' bound

    @Override
    public void write(NodeCommand command) {
      if (breaks || closed) {
        throw new IllegalStateException("broken pipe");
      }
      written.add(command);
    }

    @Override
    public void kick() {
      kicks.incrementAndGet();
    }

    @Override
    public void close() {
      closed = true;
    }

    @Override
    public boolean scriptsLoaded() {
      return scriptsLoaded;
    }

    @Override
    public Incarnation.Facts facts() {
      return facts;
    }

    @Override
    public int sendBufferBytes() {
      return sendBufferBytes;
    }
  }
}
