package dev.redlock.internal.preflight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeCommand;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.Vote;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/**
 * Every command of the {@link NodeClient} port is either a vote, which an excluded master refuses
 * without sending it, or not, which goes through. The commands are {@link Command.Kind}'s
 * constants, and {@link #sample} switches over them exhaustively: a command added to the port does
 * not compile here until it has a sample, and then it is sent through an excluded master like every
 * other.
 */
class FitNodeClientTest {

  /** What an excluded master refuses: every command that grants a lease or moves its deadline. */
  private static final Set<Command.Kind> VOTES =
      EnumSet.of(
          Command.Kind.ACQUIRE,
          Command.Kind.ACQUIRE_IN_TURN,
          Command.Kind.FENCE,
          Command.Kind.EXTEND);

  /** A command of {@code kind}. */
  private static Command<?> sample(Command.Kind kind) {
    byte[] k = {'k'};
    return switch (kind) {
      case ACQUIRE -> new Command.Acquire(LockKey.of(k), k, 1, true, 1);
      case ACQUIRE_IN_TURN -> new Command.AcquireInTurn(k, k, 1, 1, k, 1);
      case FENCE -> new Command.Fence(LockKey.of(k), k, 1);
      case EXTEND -> new Command.Extend(LockKey.of(k), k, 1);
      case RELEASE -> Command.release(LockKey.of(k), k);
      case SHORTEN -> new Command.Shorten(LockKey.of(k), k, 1);
      case NOTICE -> new Command.Notice(k, k);
      case JOIN -> new Command.Join(k, k, 1);
      case LEAVE -> new Command.Leave(k, k);
      case ADMIT -> new Command.Admit();
      case QUERY -> new Command.Query(NodeCommand.Verb.INFO, "server");
    };
  }

  @Test
  void theCommandsThatCarryAVoteAreTheOnesThatGrantOrKeepALease() {
    for (Command.Kind kind : Command.Kind.values()) {
      assertEquals(VOTES.contains(kind), kind.role() == Command.Role.VOTE, kind.name());
      assertEquals(kind, sample(kind).kind(), "the sample of " + kind);
    }
  }

  /**
   * A master that answers every command but the diagnostics GRANTED and records it; its diagnostics
   * are {@code node}'s.
   */
  private static NodeClient recording(FakeNode node, List<Command.Kind> received) {
    NodeReply granted =
        node.send(Command.release(LockKey.of(new byte[] {'k'}), new byte[] {'t'})).join();
    assertEquals(Vote.GRANTED, granted.status());
    return new NodeClient() {
      @Override
      @SuppressWarnings("unchecked") // every command but a query answers a NodeReply
      public <R> CompletableFuture<R> send(Command<R> command) {
        if (command.kind() == Command.Kind.QUERY) {
          return node.send(command);
        }
        received.add(command.kind());
        return (CompletableFuture<R>) CompletableFuture.completedFuture(granted);
      }

      @Override
      public void close() {}
    };
  }

  private static FitNodeClient fit(NodeClient master, boolean exclude, FakeTicker ticker) {
    FitNodeClient client =
        new FitNodeClient(
            master,
            new Preflight(false, 0),
            "127.0.0.1:7000",
            "",
            exclude,
            Long.MAX_VALUE,
            ticker,
            Runnable::run);
    client.awaitFirstCheck(ticker.read() + 1_000_000_000L);
    return client;
  }

  private static FakeNode evicting(FakeTicker ticker) {
    FakeNode node = new FakeNode(ticker);
    node.queries.put("CONFIG GET maxmemory", List.of("maxmemory", "67108864"));
    node.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "allkeys-lru"));
    return node;
  }

  @Test
  void anExcludedMasterRefusesEveryVoteUnsentAndPassesEveryOtherCommand() {
    FakeTicker ticker = new FakeTicker();
    List<Command.Kind> received = new ArrayList<>();
    FitNodeClient client = fit(recording(evicting(ticker), received), true, ticker);
    assertFalse(client.permits(), "an excluded master does not count toward a quorum");
    assertTrue(client.exclusion().getMessage().startsWith(FitNodeClient.UNFIT));
    for (Command.Kind kind : Command.Kind.values()) {
      if (kind == Command.Kind.QUERY) {
        continue; // the preflight's own: answered by the master's diagnostics, above
      }
      received.clear();
      CompletableFuture<?> answer = client.send(sample(kind));
      if (VOTES.contains(kind)) {
        assertTrue(answer.isCompletedExceptionally(), kind + " was not refused");
        CompletionException refused =
            org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class, answer::join);
        assertInstanceOf(NodeUnavailableException.class, refused.getCause());
        assertTrue(
            refused.getCause().getMessage().startsWith("unfit for Redlock: maxmemory 67108864"),
            refused.getCause().getMessage());
        assertEquals(List.of(), received, kind + " reached the master");
      } else {
        assertEquals(List.of(kind), received, kind + " did not go through");
      }
    }
  }

  @Test
  void withExclusionOffAnUnfitMasterGetsEveryCommand() {
    FakeTicker ticker = new FakeTicker();
    List<Command.Kind> received = new ArrayList<>();
    FitNodeClient client = fit(recording(evicting(ticker), received), false, ticker);
    assertTrue(client.permits());
    for (Command.Kind kind : Command.Kind.values()) {
      if (kind == Command.Kind.QUERY) {
        continue;
      }
      received.clear();
      assertFalse(client.send(sample(kind)).isCompletedExceptionally(), kind.name());
      assertEquals(List.of(kind), received, kind.name());
    }
  }

  @Test
  void aCorrectedMasterIsCheckedAgainOnlyAfterTheIntervalAndThenVotes() {
    FakeTicker ticker = new FakeTicker();
    FakeNode node = evicting(ticker);
    FitNodeClient client = checkedUnfit(node, ticker);

    node.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "noeviction"));
    ticker.advance(INTERVAL);
    assertFalse(client.permits(), "exactly the interval: the verdict stands");
    ticker.advance(java.time.Duration.ofNanos(1));
    assertTrue(client.permits(), "checked again when used past the interval: it votes");
    assertEquals(null, client.exclusion());

    node.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "allkeys-lru"));
    ticker.advance(INTERVAL.plusNanos(1));
    assertFalse(client.permits(), "unfit again at the next check: excluded again");
    assertTrue(
        client
            .send(
                new Command.Acquire(LockKey.of(new byte[] {'k'}), new byte[] {'t'}, 1000, false, 0))
            .isCompletedExceptionally());
  }

  /** Every query fails as if the master were restarting: nothing is read. */
  private static java.util.Map<String, Object> unreachable(FakeNode node) {
    java.util.Map<String, Object> answers = new java.util.HashMap<>(node.queries);
    node.queries.replaceAll((command, answer) -> new NodeUnavailableException("connection lost"));
    node.failTime = true;
    return answers;
  }

  private static void reachable(FakeNode node, java.util.Map<String, Object> answers) {
    node.queries.putAll(answers);
    node.failTime = false;
  }

  /**
   * A re-check that cannot reach the master (it restarts just then) leaves the last verdict
   * standing, and the next use a tenth of the interval later checks again: a master found unfit
   * stays out, and one that turned unfit since the last verdict is found then, not a whole interval
   * later (the simulation's calm faults, seed 73: an evicting master voted for a client whose
   * re-check met the master's restart, 10 s on).
   */
  @Test
  void aRecheckThatCannotReachTheMasterKeepsTheVerdictAndComesAgainSoon() {
    FakeTicker ticker = new FakeTicker();
    FakeNode node = evicting(ticker);
    FitNodeClient unfit = checkedUnfit(node, ticker);
    java.util.Map<String, Object> answers = unreachable(node);
    ticker.advance(INTERVAL.plusNanos(1));
    unfit.permits(); // the re-check, which reaches nothing
    assertFalse(unfit.permits(), "not reached: still excluded");
    assertInstanceOf(NodeUnavailableException.class, unfit.exclusion());

    FakeNode turning = new FakeNode(ticker);
    FitNodeClient fit = recheckingEvery(turning, ticker);
    assertTrue(fit.permits(), "fit at first");
    java.util.Map<String, Object> healthy = unreachable(turning);
    ticker.advance(INTERVAL.plusNanos(1));
    assertTrue(fit.permits(), "not reached: the last verdict, fit, stands");
    reachable(turning, healthy);
    turning.queries.put("CONFIG GET maxmemory", List.of("maxmemory", "67108864"));
    turning.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "allkeys-lru"));
    ticker.advance(INTERVAL.dividedBy(10).plusNanos(1));
    fit.permits(); // the next use after a tenth of the interval checks again
    assertFalse(fit.permits(), "evicting, found at the check a tenth of the interval later");
  }

  /**
   * A verdict is as old as the check that read it: the next check is due an interval after the last
   * one began, however long its answers took. (The simulation, seed 20 of unfit masters, partitions
   * and steady contention one step in 2: a check read the master's policy 210 ms before it turned
   * evicting, its answers came 630 ms later, and the master voted for that client 10.5 s after it
   * turned, past the interval; a vote was due to stop within it.)
   */
  @Test
  void theNextCheckIsDueAnIntervalAfterTheLastBeganHoweverLongItsAnswersTook() {
    FakeTicker ticker = new FakeTicker();
    FakeNode node = new FakeNode(ticker);
    CompletableFuture<Void> answersCome = new CompletableFuture<>();
    boolean[] holding = {false};
    NodeClient slow =
        new dev.redlock.internal.transport.ForwardingNodeClient(node) {
          @Override
          public <R> CompletableFuture<R> send(Command<R> command) {
            CompletableFuture<R> answer = node.send(command); // read now, as the master does
            return holding[0] ? answer.thenCombine(answersCome, (r, come) -> r) : answer;
          }
        };
    FitNodeClient client = recheckingEvery(slow, ticker);
    assertTrue(client.permits(), "fit at first");

    holding[0] = true;
    ticker.advance(INTERVAL.plusNanos(1));
    assertTrue(client.permits(), "the re-check begins; fit until it says otherwise");
    assertTrue(answersCome.getNumberOfDependents() > 0, "the re-check's reads are on their way");
    node.queries.put("CONFIG GET maxmemory", List.of("maxmemory", "67108864"));
    node.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "allkeys-lru"));
    ticker.advance(INTERVAL.dividedBy(5)); // its answers, read before the change, come late
    holding[0] = false;
    answersCome.complete(null);
    assertTrue(client.permits(), "fit as the re-check read it");

    ticker.advance(INTERVAL.minus(INTERVAL.dividedBy(5)).plusNanos(1)); // past an interval since
    client.permits(); // the next use checks again
    assertFalse(client.permits(), "evicting: found an interval after the last check began");
  }

  /**
   * A re-check that reaches the master but cannot read the setting that made it unfit (the
   * connection lost half-way) does not find it fixed: it stays out.
   */
  @Test
  void anUnfitMasterWhoseSettingCannotBeReadAgainStaysExcluded() {
    FakeTicker ticker = new FakeTicker();
    FakeNode node = evicting(ticker);
    FitNodeClient client = checkedUnfit(node, ticker);
    node.queries.put(
        "CONFIG GET maxmemory-policy", new NodeUnavailableException("connection lost"));
    ticker.advance(INTERVAL.plusNanos(1));
    client.permits();
    assertFalse(client.permits(), "its policy unread: not known to be fixed");
  }

  /** The re-check's interval of the tests that re-check. */
  private static final java.time.Duration INTERVAL = java.time.Duration.ofSeconds(10);

  /** A client of {@code master}, an evicting one, its first verdict in: excluded. */
  private static FitNodeClient checkedUnfit(FakeNode master, FakeTicker ticker) {
    FitNodeClient client = recheckingEvery(master, ticker);
    assertFalse(client.permits(), "unfit: excluded");
    return client;
  }

  private static FitNodeClient recheckingEvery(NodeClient master, FakeTicker ticker) {
    FitNodeClient client =
        new FitNodeClient(
            master,
            new Preflight(false, 0),
            "127.0.0.1:7000",
            "",
            true,
            INTERVAL.toNanos(),
            ticker,
            Runnable::run);
    client.awaitFirstCheck(ticker.read() + 1_000_000_000L);
    return client;
  }
}
