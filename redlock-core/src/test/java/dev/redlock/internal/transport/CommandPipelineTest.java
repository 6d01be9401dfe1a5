package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.NodeCommand.Verb;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * How the pipeline gets commands through a master that lost its scripts, on a recording link whose
 * replies the test hands in one by one, in order, as a master would answer them: every case of the
 * class comment's argument, including those no real master can be made to produce on cue.
 */
class CommandPipelineTest {

  private static final ServerError NOSCRIPT =
      new ServerError("NOSCRIPT No matching script. Please use EVAL.");
  private static final byte[] KEY = bytes("job");
  private static final byte[] TOKEN_A = bytes("a".repeat(32));
  private static final byte[] TOKEN_B = bytes("b".repeat(32));

  private final FakeTicker ticker = new FakeTicker();
  private final RecordingLink link = new RecordingLink(true);
  private final CommandPipeline<RecordingLink> pipeline =
      new CommandPipeline<>(ticker, TimeUnit.SECONDS.toNanos(10), () -> {});

  @BeforeEach
  void open() {
    pipeline.connected(link, null, 0);
  }

  @Test
  void aCommandAnsweredNoscriptIsSentAgainWholeBehindTheReloadAndAnsweredThere() {
    NodeCommand extend =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    assertEquals(List.of("EVALSHA extend"), link.written);

    reply(NOSCRIPT);
    assertEquals(
        List.of("EVALSHA extend", "SCRIPT LOAD", "SCRIPT LOAD"), link.written.subList(0, 3));
    assertEquals(1 + LuaScript.ALL.size(), link.written.size(), "the reload, nothing else yet");
    assertFalse(extend.reply.isDone(), "answered by the command sent again");

    answerReload();
    assertEquals("EVAL extend", last(), "sent again whole, behind the reload");
    reply(1L);
    assertGranted(extend);
  }

  @Test
  void commandsAnsweredNoscriptAreSentAgainInTheirOrderAndLaterOnesWaitBehindThem() {
    NodeCommand extend =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    NodeCommand shorten =
        submit(NodeCommand.of(new Command.Shorten(LockKey.of(KEY), TOKEN_A, 2_000)));
    reply(NOSCRIPT); // the extend's; the reload is written
    NodeCommand release = submit(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN_A)));
    int written = link.written.size();
    assertEquals(2 + LuaScript.ALL.size(), written, "the release waits: nothing overtakes");

    reply(NOSCRIPT); // the shorten's
    assertEquals(written, link.written.size(), "sent again only once the reload is answered");
    answerReload();
    assertEquals(
        List.of("EVAL extend", "EVAL shorten", "EVALSHA release"),
        link.written.subList(written, link.written.size()),
        "in the order they were first sent, then what waited");
    reply(1L);
    reply(1L);
    reply(1L);
    assertGranted(extend);
    assertGranted(shorten);
    assertGranted(release);
  }

  @Test
  void aCommandIsNotSentAgainOnceALaterOneOfTheSameLeaseRan() {
    NodeCommand extendA =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    NodeCommand shortenA =
        submit(NodeCommand.of(new Command.Shorten(LockKey.of(KEY), TOKEN_A, 2_000)));
    NodeCommand extendB =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_B, 30_000)));
    reply(NOSCRIPT); // extend A
    // Another connection reloaded the scripts between: the shorten ran. The extend sent again
    // would run after it and lengthen the key again: it is a failed vote instead.
    reply(1L);
    assertGranted(shortenA);
    assertTrue(extendA.reply.isCompletedExceptionally(), "failed at once: a failed vote");
    ExecutionException failed = assertThrows(ExecutionException.class, extendA.reply::get);
    assertInstanceOf(NodeUnavailableException.class, failed.getCause());
    reply(NOSCRIPT); // extend B, another lease's: sent again
    int written = link.written.size();
    answerReload();
    assertEquals(List.of("EVAL extend"), link.written.subList(written, link.written.size()));
    reply(1L);
    assertGranted(extendB);
  }

  @Test
  void anAcquireInTurnIsNotSentAgainOnceItsLeasesReleaseRan() {
    // The queue script's first argument names the operation ("acquire"), its second the token:
    // the lease is told by the token, or the acquire sent again would set the key after its own
    // release ran, held until its TTL with no one to release it.
    NodeCommand acquire =
        submit(
            NodeCommand.of(
                new Command.AcquireInTurn(KEY, TOKEN_A, 30_000, 0, bytes("waiter"), 1_000)));
    NodeCommand release = submit(NodeCommand.of(Command.releaseAtGate(LockKey.of(KEY), TOKEN_A)));
    NodeCommand other =
        submit(
            NodeCommand.of(
                new Command.AcquireInTurn(KEY, TOKEN_B, 30_000, 0, bytes("other"), 1_000)));
    reply(NOSCRIPT); // the acquire
    reply(1L); // the release ran: another connection reloaded the scripts between
    assertGranted(release);
    assertTrue(acquire.reply.isCompletedExceptionally(), "failed at once: a failed vote");
    reply(NOSCRIPT); // another lease's acquire: sent again
    int written = link.written.size();
    answerReload();
    assertEquals(List.of("EVAL queue"), link.written.subList(written, link.written.size()));
    assertFalse(other.reply.isDone());
  }

  @Test
  void theKeptCommandsWaitForTheReloadsLastAnswer() {
    NodeCommand extend =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    reply(NOSCRIPT);
    int written = link.written.size();
    List<LuaScript> scripts = LuaScript.ALL;
    for (LuaScript script : scripts.subList(0, scripts.size() - 1)) {
      reply(script.sha1());
    }
    assertEquals(written, link.written.size(), "commands written before the reload may still run");
    reply(scripts.get(scripts.size() - 1).sha1());
    assertEquals("EVAL extend", last());
    reply(1L);
    assertGranted(extend);
  }

  @Test
  void aKeptCommandFailsWithItsLinkAndIsNeverSentOnTheNext() {
    NodeCommand extend =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    reply(NOSCRIPT);
    pipeline.lost(link, "connection reset");
    assertTrue(extend.reply.isCompletedExceptionally(), "failed with its link");
    RecordingLink next = new RecordingLink(true);
    pipeline.connected(next, null, 0);
    NodeCommand release = submit(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN_B)));
    assertTrue(pipeline.replied(next, NOSCRIPT));
    for (LuaScript script : LuaScript.ALL) {
      assertTrue(pipeline.replied(next, script.sha1()));
    }
    assertEquals(
        "EVAL release",
        next.written.get(next.written.size() - 1),
        "the failed extend is not written again");
    assertEquals(2 + LuaScript.ALL.size(), next.written.size(), next.written::toString);
    assertTrue(pipeline.replied(next, 1L));
    assertGranted(release);
  }

  @Test
  void aLinkThatBreaksWhileWritingTheReloadFailsTheCommandAtOnce() {
    NodeCommand extend =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    link.breaksAt = "SCRIPT LOAD";
    assertFalse(pipeline.replied(link, NOSCRIPT), "the link broke: its reader stops");
    assertFailedWithTheBrokenLink(extend);
  }

  @Test
  void aLinkThatBreaksWhileSendingAKeptCommandAgainFailsItAtOnce() {
    NodeCommand extend =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    reply(NOSCRIPT);
    link.breaksAt = "EVAL extend";
    List<LuaScript> scripts = LuaScript.ALL;
    for (LuaScript script : scripts.subList(0, scripts.size() - 1)) {
      reply(script.sha1());
    }
    assertFalse(
        pipeline.replied(link, scripts.get(scripts.size() - 1).sha1()),
        "the link broke sending the extend again: its reader stops");
    assertFailedWithTheBrokenLink(extend);
  }

  /**
   * The link broke while the pipeline wrote to it: it is closed, {@code command} failed with it at
   * once, and later commands open a new link.
   */
  private void assertFailedWithTheBrokenLink(NodeCommand command) {
    assertTrue(link.closed, "the broken link is closed");
    ExecutionException failed = assertThrows(ExecutionException.class, command.reply::get);
    assertTrue(
        failed.getCause().getMessage().contains("broken pipe"),
        "failed with the link, at once: " + failed.getCause());
    assertLaterCommandsReconnect();
  }

  /** After a broken link, the next command opens a new one (the link had answered: no back-off). */
  private void assertLaterCommandsReconnect() {
    NodeCommand release = submit(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN_B)));
    assertFalse(release.reply.isDone(), "waits for the new link");
    RecordingLink next = new RecordingLink(true);
    pipeline.connected(next, null, 0);
    assertEquals(List.of("EVALSHA release"), next.written);
  }

  @Test
  void aCommandIsSentAgainAtMostOnce() {
    NodeCommand extend =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    reply(NOSCRIPT);
    answerReload();
    int written = link.written.size();
    reply(NOSCRIPT); // no master answers EVAL so, but should one
    assertTrue(extend.reply.isCompletedExceptionally(), "a failed vote");
    assertEquals(written + LuaScript.ALL.size(), link.written.size(), "only a reload written");
  }

  @Test
  void aTransientReloadErrorSendsTheCommandWholeAndTheNextNoscriptReloadsAgain() {
    NodeCommand extend =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    reply(NOSCRIPT);
    for (int i = 0; i < LuaScript.ALL.size(); i++) {
      reply(new ServerError("BUSY Redis is busy running a script."));
    }
    assertEquals("EVAL extend", last());
    reply(1L);
    assertGranted(extend);

    NodeCommand later =
        submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    assertEquals("EVALSHA extend", last(), "scripts still go by SHA-1");
    reply(NOSCRIPT);
    assertEquals("SCRIPT LOAD", last(), "reloaded again");
    answerReload();
    reply(1L);
    assertGranted(later);
  }

  @Test
  void aPermanentReloadRefusalSendsEveryLaterScriptWhole() {
    submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    reply(NOSCRIPT);
    for (int i = 0; i < LuaScript.ALL.size(); i++) {
      reply(new ServerError("NOPERM User locker has no permissions to run the 'script|load'"));
    }
    reply(1L);
    submit(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN_A)));
    assertEquals("EVAL release", last());
  }

  @Test
  void aLinkWhoseHandshakeLoadedNoScriptsSendsThemWhole() {
    RecordingLink whole = new RecordingLink(false);
    CommandPipeline<RecordingLink> other =
        new CommandPipeline<>(ticker, TimeUnit.SECONDS.toNanos(10), () -> {});
    other.connected(whole, null, 0);
    other.submit(NodeCommand.of(new Command.Extend(LockKey.of(KEY), TOKEN_A, 30_000)));
    assertEquals(List.of("EVAL extend"), whole.written);
  }

  @Test
  void onlyARefusalThatCannotChangeOnThisConnectionIsPermanent() {
    assertTrue(new ServerError("NOPERM this user has no permissions").refusesScriptLoad());
    assertTrue(new ServerError("ERR unknown command 'SCRIPT', with args").refusesScriptLoad());
    assertTrue(new ServerError("ERR unknown subcommand 'LOAD'.").refusesScriptLoad());
    for (String transient_ :
        List.of(
            "LOADING Redis is loading the dataset in memory",
            "BUSY Redis is busy running a script.",
            "TRYAGAIN Multiple keys request during rehashing of slot",
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            "OOM command not allowed when used memory > 'maxmemory'.")) {
      assertFalse(new ServerError(transient_).refusesScriptLoad(), transient_);
    }
  }

  @Test
  void anAcquireOrItsCleanupBeyondTheirShareFailsAtOnceAsTheClientsOwnWhileAHeldLeaseFindsRoom() {
    int share = QueueLimit.COMMANDS * QueueLimit.ACQUIRE_SHARE_PERCENT / 100;
    List<NodeCommand> acquires = new ArrayList<>();
    for (int i = 0; i < share; i++) {
      acquires.add(submit(NodeCommand.set(bytes("k" + i), TOKEN_A, 10_000)));
    }
    NodeUnavailableException refused =
        failure(submit(NodeCommand.set(bytes("one-more"), TOKEN_A, 10_000)));
    assertTrue(refused.clientSide(), "the client's own failure: " + refused.getMessage());
    assertTrue(refused.getMessage().startsWith(QueueLimit.QUEUE_FULL), refused.getMessage());
    assertEquals(Trouble.CLIENT_LIMIT, Trouble.ofError(refused.getMessage()));
    assertTrue(
        failure(submit(NodeCommand.of(Command.releaseQuietly(LockKey.of(bytes("k0")), TOKEN_A))))
            .clientSide(),
        "a failed acquire's cleanup is held to the acquires' share too");

    NodeCommand fence = submit(NodeCommand.of(new Command.Fence(LockKey.of(KEY), TOKEN_B, 7)));
    assertEquals("EVALSHA fence", last(), "a held lease's command is written at once");
    assertFalse(fence.reply.isDone());
    for (int i = share + 1; i < QueueLimit.COMMANDS; i++) {
      submit(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN_B)));
    }
    NodeUnavailableException full =
        failure(submit(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN_B))));
    assertTrue(full.clientSide(), "beyond the whole bound, any command is refused");
    assertTrue(full.getMessage().contains("the limit is " + QueueLimit.COMMANDS + " commands"));

    reply(bytes("OK")); // the first acquire answered: room for one more command
    assertGranted(acquires.get(0));
    assertTrue(
        failure(submit(NodeCommand.set(bytes("again"), TOKEN_A, 10_000))).clientSide(),
        "not an acquire: the queue still holds more than the acquires' share");
    NodeCommand release = submit(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN_B)));
    assertFalse(release.reply.isDone(), "written, not refused");
  }

  @Test
  void aCommandAfterTheCloseFailsAsTheClientsOwn() {
    NodeCommand inFlight = submit(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN_A)));
    pipeline.close();
    assertTrue(failure(inFlight).clientSide(), "cut off by the client's close");
    assertTrue(
        failure(submit(NodeCommand.of(Command.release(LockKey.of(KEY), TOKEN_A)))).clientSide());
  }

  private static NodeUnavailableException failure(NodeCommand command) {
    assertTrue(command.reply.isCompletedExceptionally(), "failed at once");
    ExecutionException failed = assertThrows(ExecutionException.class, command.reply::get);
    return assertInstanceOf(NodeUnavailableException.class, failed.getCause());
  }

  /** Replies complete on the reading thread, here the test's: done by now, or never. */
  private static void assertGranted(NodeCommand command) {
    assertTrue(command.reply.isDone(), "answered");
    assertEquals(Vote.GRANTED, command.reply.join().status());
  }

  private NodeCommand submit(NodeCommand command) {
    pipeline.submit(command);
    return command;
  }

  private void reply(Object reply) {
    assertTrue(pipeline.replied(link, reply), "the link is still the pipeline's");
  }

  private void answerReload() {
    for (LuaScript script : LuaScript.ALL) {
      reply(script.sha1());
    }
  }

  private String last() {
    return link.written.get(link.written.size() - 1);
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  /** Records what is written, as "VERB script", e.g. "EVALSHA extend" or "SCRIPT LOAD". */
  static final class RecordingLink implements CommandPipeline.Link {
    private static final Map<String, LuaScript> SCRIPTS =
        Map.of(
            "fence", LuaScript.FENCE,
            "release", LuaScript.RELEASE,
            "extend", LuaScript.EXTEND,
            "admit", LuaScript.ADMIT,
            "shorten", LuaScript.SHORTEN,
            "queue", LuaScript.QUEUE,
            "keyset", LuaScript.KEY_SET);

    final List<String> written = new ArrayList<>();
    private final boolean scriptsLoaded;
    // Writes of this ("SCRIPT LOAD", "EVAL extend", ...) throw: the connection broke there.
    String breaksAt = "";
    boolean closed;

    RecordingLink(boolean scriptsLoaded) {
      this.scriptsLoaded = scriptsLoaded;
    }

    @Override
    public void write(NodeCommand command) {
      Verb verb = command.verb();
      if (verb == Verb.SCRIPT) {
        write("SCRIPT LOAD");
        return;
      }
      byte[] first = command.arguments()[0];
      String name = "?";
      for (Map.Entry<String, LuaScript> entry : SCRIPTS.entrySet()) {
        LuaScript script = entry.getValue();
        if (first == script.sha1() || first == script.body()) {
          name = entry.getKey();
        }
      }
      write(verb + " " + name);
    }

    private void write(String what) {
      if (what.equals(breaksAt)) {
        throw new IllegalStateException("broken pipe");
      }
      written.add(what);
    }

    @Override
    public void close() {
      closed = true;
    }

    @Override
    public Incarnation.Facts facts() {
      return Incarnation.Facts.unknown("a recording link has no server");
    }

    @Override
    public boolean scriptsLoaded() {
      return scriptsLoaded;
    }

    @Override
    public int sendBufferBytes() {
      return 1 << 20;
    }
  }
}
