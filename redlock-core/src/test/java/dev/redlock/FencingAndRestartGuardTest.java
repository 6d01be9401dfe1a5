package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.NodeReply;
import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Quorum fencing tokens and the restart guard, against scripted masters. */
class FencingAndRestartGuardTest {

  private static final Duration TTL = Duration.ofSeconds(1);

  private final FakeCluster cluster = new FakeCluster();
  private final FakeTicker ticker = cluster.ticker;
  private final List<FakeNode> nodes = cluster.nodes;
  private RedLock redlock;

  private void build(int n, UnaryOperator<RedLockBuilder> options) {
    RedLockBuilder builder = cluster.builder(n).nodeTimeout(Duration.ofMillis(20));
    redlock = options.apply(builder).build();
  }

  @AfterEach
  void close() {
    redlock.close();
  }

  private long count(int node, String prefix) {
    return nodes.get(node).received().stream().filter(s -> s.startsWith(prefix)).count();
  }

  @Test
  void fencingTokensRiseWithEveryLeaseOnAResource() {
    build(3, b -> b);
    long previous = 0;
    for (int i = 0; i < 5; i++) {
      Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
      assertTrue(lease.fencingToken() > previous, lease.fencingToken() + " after " + previous);
      previous = lease.fencingToken();
      lease.close();
    }
    assertEquals(5, previous, "max stored + 1 from an empty start");
    assertEquals(
        6,
        redlock.tryAcquire("other", TTL).orElseThrow().fencingToken(),
        "one counter per master, shared by every resource");
  }

  @Test
  void theNextTokenExceedsTheCounterOfAnyMajorityThatStoredTheLastOne() {
    build(3, b -> b);
    // Lease one is granted, and its token stored, by masters 0 and 1 only.
    nodes.get(2).onSet = Answer.TAKEN;
    nodes.get(2).onFence = Answer.TAKEN;
    Lease first = redlock.tryAcquire("r", TTL).orElseThrow();
    long firstToken = first.fencingToken();
    first.close();
    assertEquals(0L, nodes.get(2).fenceCounter.get(), "master 2 never stored it");
    // Lease two is granted by masters 1 and 2: master 1 carries lease one's token across.
    nodes.get(2).onSet = Answer.GRANT;
    nodes.get(2).onFence = Answer.GRANT;
    nodes.get(0).onSet = Answer.TAKEN;
    Lease second = redlock.tryAcquire("r", TTL).orElseThrow();
    assertTrue(second.fencingToken() > firstToken);
  }

  @Test
  void tokensNeverFallBelowAMastersClockSoAWipedMajorityCannotRewindThem() {
    build(3, b -> b);
    nodes.forEach(node -> node.timeMicros = 1_000_000);
    Lease before = redlock.tryAcquire("r", TTL).orElseThrow();
    long beforeToken = before.fencingToken();
    before.close();
    nodes.forEach(node -> node.fenceCounter.set(0)); // every master lost its data
    nodes.forEach(node -> node.timeMicros = 2_000_000);
    Lease after = redlock.tryAcquire("r", TTL).orElseThrow();
    assertTrue(after.fencingToken() > beforeToken);
    assertEquals(2_000_000, after.fencingToken());
  }

  @Test
  void theAcquireIsOneRoundAndTheTokenIsStoredOnceWhenFirstAsked() {
    build(3, b -> b);
    nodes.get(0).latency = Duration.ofMillis(10);
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    assertEquals(Duration.ofMillis(978), lease.remainingValidity(), "1000 - 10 - (10 + 2)");
    assertEquals(0, count(0, "FENCE"), "nothing stored until the token is asked for");
    long token = lease.fencingToken();
    assertEquals(token, lease.fencingToken());
    for (int i = 0; i < 3; i++) {
      assertEquals(1, count(i, "FENCE " + "r " + token), "stored once on master " + i);
    }
    assertEquals(Duration.ofMillis(978), lease.remainingValidity(), "the store cost no validity");
  }

  @Test
  void aTokenNoMajorityStoredIsNeverReturnedAndALaterCallTriesAgain() {
    build(3, b -> b);
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    nodes.get(0).onFence = Answer.GONE;
    nodes.get(1).onFence = Answer.FAIL;
    QuorumUnavailableException e =
        assertThrows(QuorumUnavailableException.class, lease::fencingToken);
    assertEquals(
        List.of(Status.GONE, Status.FAILED, Status.PENDING), // decided: no majority possible
        e.outcomes().stream().map(NodeOutcome::status).toList());
    assertTrue(lease.isValid(), "no majority refused: the lease stands");
    nodes.get(1).onFence = Answer.GRANT;
    assertTrue(lease.fencingToken() > 0, "stored by masters 1 and 2 on the next call");
  }

  @Test
  void aTokenAMajorityRefusesLosesTheLease() {
    build(3, b -> b);
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    nodes.get(0).onFence = Answer.GONE;
    nodes.get(1).onFence = Answer.TAKEN;
    assertThrows(LeaseLostException.class, lease::fencingToken);
    assertTrue(lease.isLost());
    assertThrows(LeaseLostException.class, lease::fencingToken, "and stays lost");
  }

  @Test
  void fencingCanBeTurnedOffForASingleRoundAcquire() {
    build(3, b -> b.fencing(false));
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    IllegalStateException e = assertThrows(IllegalStateException.class, lease::fencingToken);
    assertTrue(e.getMessage().contains("fencing"));
    assertEquals(0, count(0, "FENCE"));
  }

  @Test
  void extendKeepsTheFencingToken() {
    build(3, b -> b);
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    long token = lease.fencingToken();
    assertTrue(lease.extend(TTL));
    assertEquals(token, lease.fencingToken());
  }

  @Test
  void restartedMastersVotesDoNotCount() {
    build(3, b -> b);
    nodes.get(0).onSet = Answer.RESTARTED;
    nodes.get(1).onSet = Answer.RESTARTED;
    QuorumUnavailableException e =
        assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", TTL));
    assertEquals(Status.RESTARTED, e.outcomes().get(0).status());
    nodes.get(1).onSet = Answer.GRANT;
    assertTrue(redlock.tryAcquire("r", TTL).isPresent(), "one young master of three is fine");
  }

  /**
   * The restart guard's vote is the quorum layer's: masters that answered GRANTED with what the
   * guard refuses (here, a server run the connection could not see) count as RESTARTED, blocking
   * and asynchronous alike; without the guard, the same answers count as they came.
   */
  @Test
  void theCoordinatorCountsTheGuardsVoteNotTheMastersAnswer() throws Exception {
    build(3, b -> b);
    NodeReply.GuardReading unseenRun = new NodeReply.GuardReading(null, null, null, null, 0);
    nodes.get(0).reading = unseenRun;
    nodes.get(1).reading = unseenRun;
    QuorumUnavailableException e =
        assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", TTL));
    assertEquals(Status.RESTARTED, e.outcomes().get(0).status());
    assertEquals("the server run is unknown", e.outcomes().get(0).detail());
    java.util.concurrent.ExecutionException async =
        assertThrows(
            java.util.concurrent.ExecutionException.class,
            () -> redlock.tryAcquireAsync("r", TTL).get(5, java.util.concurrent.TimeUnit.SECONDS));
    assertTrue(async.getCause() instanceof QuorumUnavailableException, async.toString());
    redlock.close();
    build(3, b -> b.restartGuard(false));
    assertTrue(redlock.tryAcquire("r", TTL).isPresent(), "no guard: the answers as they came");
  }

  @Test
  void theGuardAsksForADatasetOlderThanTheMaximumLeaseTime() {
    build(3, b -> b.maxLeaseTime(Duration.ofSeconds(30)));
    redlock.tryAcquire("r", TTL).orElseThrow();
    assertEquals(30_600, nodes.get(0).lastGuardMillis, "30 s and twice the 1% drift factor");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> redlock.tryAcquire("r", Duration.ofSeconds(31)));
    assertTrue(e.getMessage().contains("maxLeaseTime"), e.getMessage());
  }

  @Test
  void withoutTheGuardEveryDatasetVotesAndAnyTtlUpToADayIsAllowed() {
    build(3, b -> b.restartGuard(false).maxLeaseTime(Duration.ofSeconds(1)));
    redlock.tryAcquire("r", Duration.ofMinutes(5)).orElseThrow();
    assertEquals(0, nodes.get(0).lastGuardMillis);
  }

  @Test
  void admitFreshNodesIsAnExplicitCallOnEveryMaster() {
    build(3, b -> b);
    List<NodeOutcome> outcomes = redlock.admitFreshNodes();
    assertEquals(3, outcomes.size());
    assertTrue(outcomes.stream().allMatch(o -> o.status() == Status.GRANTED));
    for (int i = 0; i < 3; i++) {
      // The admission names no lease time: it holds for every client's maxLeaseTime.
      assertEquals(List.of("ADMIT"), nodes.get(i).received());
    }
  }

  @Test
  void aClosedRedLockNeitherAdmitsNorInspects() {
    build(3, b -> b);
    redlock.close();
    assertThrows(IllegalStateException.class, redlock::admitFreshNodes);
    assertThrows(IllegalStateException.class, redlock::inspect);
    for (int i = 0; i < 3; i++) {
      assertEquals(List.of(), nodes.get(i).received(), "nothing sent to master " + i);
    }
  }

  @Test
  void resourcesInTheLibrarysOwnNamespaceAreRefused() {
    build(3, b -> b);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> redlock.tryAcquire("redlock:fence:r", TTL));
    assertTrue(e.getMessage().contains("redlock:"), e.getMessage());
    assertFalse(nodes.get(0).received().stream().anyMatch(s -> s.startsWith("SET")));
  }
}
