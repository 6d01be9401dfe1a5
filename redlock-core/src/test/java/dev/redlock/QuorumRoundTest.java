package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The acquire round against scripted masters: votes, validity, and release on failure. */
class QuorumRoundTest {

  private static final Duration TTL = Duration.ofMillis(1000);
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(20);

  private final FakeCluster cluster = new FakeCluster();
  private final FakeTicker ticker = cluster.ticker;
  private final List<FakeNode> nodes = cluster.nodes;
  private RedLock redlock;

  @AfterEach
  void close() {
    if (redlock != null) {
      redlock.close();
    }
  }

  private RedLock cluster(int n) {
    return cluster(n, Duration.ZERO);
  }

  private RedLock cluster(int n, Duration minValidity) {
    RedLockBuilder builder =
        cluster
            .builder(n)
            .nodeTimeout(NODE_TIMEOUT)
            .minValidity(minValidity)
            .retryDelay(Duration.ofMillis(1));
    redlock = builder.build();
    return redlock;
  }

  enum Expect {
    LEASE,
    EMPTY,
    UNAVAILABLE
  }

  static Stream<Arguments> rounds() {
    return Stream.of(
        Arguments.of("1 of 1 grants", "G", 5, Expect.LEASE, 983),
        Arguments.of("1 of 1 taken", "T", 5, Expect.EMPTY, 0),
        Arguments.of("1 of 1 fails", "F", 5, Expect.UNAVAILABLE, 0),
        Arguments.of("all 3 grant", "GGG", 5, Expect.LEASE, 983),
        Arguments.of("2 of 3 grant", "GGT", 5, Expect.LEASE, 983),
        Arguments.of("1 of 3 grants", "GTT", 5, Expect.EMPTY, 0),
        Arguments.of("2 of 3 fail", "GFF", 5, Expect.UNAVAILABLE, 0),
        Arguments.of("all 5 grant", "GGGGG", 10, Expect.LEASE, 978),
        Arguments.of("3 of 5 grant, 2 taken", "GGGTT", 10, Expect.LEASE, 978),
        Arguments.of("3 of 5 grant, 2 failed", "GGGFF", 10, Expect.LEASE, 978),
        Arguments.of("2 of 5 grant, 3 taken", "GGTTT", 10, Expect.EMPTY, 0),
        Arguments.of("2 granted, 1 taken, 2 failed", "GGTFF", 10, Expect.EMPTY, 0),
        Arguments.of("2 granted, 3 failed", "GGFFF", 10, Expect.UNAVAILABLE, 0),
        Arguments.of(
            "majority granted but the round ate the TTL", "GGGGG", 988, Expect.UNAVAILABLE, 0),
        Arguments.of("majority granted with 1 ms of validity", "GGGGG", 987, Expect.LEASE, 1));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("rounds")
  void roundGrantsOnlyWithAMajorityAndPositiveValidity(
      String name, String answers, long elapsedMillis, Expect expect, long validityMillis) {
    cluster(answers.length());
    script(answers);
    nodes.get(0).latency = Duration.ofMillis(elapsedMillis);

    switch (expect) {
      case LEASE -> {
        Lease lease = redlock.tryAcquire("orders:42", TTL).orElseThrow();
        assertEquals(Duration.ofMillis(validityMillis), lease.remainingValidity());
        assertTrue(lease.isValid());
        nodes.forEach(node -> assertFalse(node.received().contains("RELEASE orders:42")));
      }
      case EMPTY -> {
        assertEquals(Optional.empty(), redlock.tryAcquire("orders:42", TTL));
        assertReleasedWhereTheKeyMayBe(answers);
      }
      case UNAVAILABLE -> {
        QuorumUnavailableException e =
            assertThrows(
                QuorumUnavailableException.class, () -> redlock.tryAcquire("orders:42", TTL));
        assertEquals(answers.length(), e.outcomes().size());
        assertReleasedWhereTheKeyMayBe(answers);
      }
    }
  }

  @Test
  void roundIsDecidedAtQuorumWithoutWaitingForSlowNodes() {
    cluster(5);
    script("GGGHH");
    long before = ticker.read();
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    // The fake clock only moves when told to: no wait for the two hanging nodes happened.
    assertTrue(ticker.read() - before < NODE_TIMEOUT.toNanos());
    assertTrue(lease.isValid());
  }

  @Test
  void roundIsDecidedAsSoonAsAMajorityIsOutOfReach() {
    cluster(5);
    script("TTTHH");
    long before = ticker.read();
    assertEquals(Optional.empty(), redlock.tryAcquire("r", TTL));
    assertTrue(ticker.read() - before < NODE_TIMEOUT.toNanos());
  }

  @Test
  void hangingMajorityTimesOutAndIsReleasedEverywhere() {
    cluster(5);
    script("GGHHH");
    ticker.autoAdvance(Duration.ofMillis(5));
    QuorumUnavailableException e =
        assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", TTL));
    List<Status> statuses = e.outcomes().stream().map(NodeOutcome::status).toList();
    assertEquals(
        List.of(
            Status.GRANTED, Status.GRANTED, Status.TIMED_OUT, Status.TIMED_OUT, Status.TIMED_OUT),
        statuses);
    assertEquals("127.0.0.1:7002", e.outcomes().get(2).node());
    nodes.forEach(node -> assertTrue(node.received().contains("RELEASE r"), node::toString));
  }

  @Test
  void leaseBelowTheMinimumValidityIsRefused() {
    cluster(3, Duration.ofMillis(980));
    script("GGG");
    nodes.get(0).latency = Duration.ofMillis(10); // validity 978 ms < 980 ms
    assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", TTL));
  }

  @Test
  void everyAcquisitionSendsTheSameFreshTokenToEveryNode() {
    cluster(3);
    script("GGG");
    redlock.tryAcquire("r", TTL).orElseThrow().close();
    redlock.tryAcquire("r", TTL).orElseThrow().close();
    for (FakeNode node : nodes) {
      assertEquals(2, node.tokens().size());
      assertEquals(32, node.tokens().get(0).length, "128 bits, hex");
      assertFalse(java.util.Arrays.equals(node.tokens().get(0), node.tokens().get(1)));
      assertTrue(java.util.Arrays.equals(nodes.get(0).tokens().get(0), node.tokens().get(0)));
    }
  }

  @Test
  void acquireRetriesUntilTheLockIsFree() throws InterruptedException {
    cluster(3);
    for (FakeNode node : nodes) {
      node.nextSets.addAll(List.of(Answer.TAKEN, Answer.TAKEN)); // then the default, GRANT
    }
    Lease lease = redlock.acquire("r", TTL, Duration.ofSeconds(30));
    assertTrue(lease.isValid());
    assertEquals(3, nodes.get(0).tokens().size(), "two refused rounds, then the granted one");
    assertEquals(
        0,
        nodes.get(0).received().stream().filter(s -> s.startsWith("RELEASE")).count(),
        "a master that refused holds nothing to release");
  }

  @Test
  void acquireThatRunsOutOfTimeReportsEveryNode() {
    cluster(3);
    script("TTG");
    ticker.autoAdvance(Duration.ofMillis(1));
    LockTakenException e =
        assertThrows(
            LockTakenException.class, () -> redlock.acquire("r", TTL, Duration.ofMillis(30)));
    assertEquals(
        List.of(Status.TAKEN, Status.TAKEN, Status.PENDING), // decided before the third answered
        e.outcomes().stream().map(NodeOutcome::status).toList());
    assertTrue(e.getMessage().contains("'r'"), e.getMessage());
  }

  @Test
  void evenRoundIsDecidedAtAMajorityOfGrantsOrOnceOneIsOutOfReach() {
    cluster(4); // quorum 3: two refusals decide, two grants do not
    script("TTGG");
    ticker.autoAdvance(Duration.ofMillis(1));
    LockTakenException e =
        assertThrows(
            LockTakenException.class, () -> redlock.acquire("r", TTL, Duration.ofMillis(30)));
    assertEquals(
        List.of(Status.TAKEN, Status.TAKEN, Status.PENDING, Status.PENDING),
        e.outcomes().stream().map(NodeOutcome::status).toList());
    redlock.close();
    nodes.clear();
    cluster(4);
    script("GGTT");
    ticker.autoAdvance(Duration.ofMillis(1));
    e =
        assertThrows(
            LockTakenException.class, () -> redlock.acquire("r", TTL, Duration.ofMillis(30)));
    assertEquals(
        List.of(Status.GRANTED, Status.GRANTED, Status.TAKEN, Status.TAKEN),
        e.outcomes().stream().map(NodeOutcome::status).toList());
  }

  @Test
  void masterSilentForExactlyItsNodeTimeoutTimedOut() {
    cluster(3);
    script("GGH");
    nodes.get(1).latency = NODE_TIMEOUT; // the quorum is reached at the node timeout, exactly
    QuorumUnavailableException e =
        assertThrows(
            QuorumUnavailableException.class, () -> redlock.tryAcquire("r", Duration.ofMillis(21)));
    assertEquals(Status.TIMED_OUT, e.outcomes().get(2).status(), e.outcomes()::toString);
  }

  @Test
  void acquireThatRunsOutOfTimeOnFailingNodesSaysSo() {
    cluster(3);
    script("FFG");
    ticker.autoAdvance(Duration.ofMillis(1));
    assertThrows(
        QuorumUnavailableException.class, () -> redlock.acquire("r", TTL, Duration.ofMillis(30)));
  }

  @Test
  void interruptedAcquireThrowsAndLeavesNothingLocked() {
    cluster(3);
    script("TTT");
    Thread.currentThread().interrupt();
    assertThrows(
        InterruptedException.class, () -> redlock.acquire("r", TTL, Duration.ofSeconds(5)));
    assertFalse(Thread.currentThread().isInterrupted(), "InterruptedException clears the flag");
    nodes.forEach(node -> assertTrue(node.received().isEmpty(), "no round was started"));
  }

  @Test
  void closeClosesEveryNodeAndRefusesNewWork() {
    cluster(3);
    redlock.close();
    nodes.forEach(node -> assertTrue(node.closed));
    assertThrows(IllegalStateException.class, () -> redlock.tryAcquire("r", TTL));
    redlock.close(); // idempotent
  }

  private void script(String answers) {
    for (int i = 0; i < answers.length(); i++) {
      nodes.get(i).onSet =
          switch (answers.charAt(i)) {
            case 'G' -> Answer.GRANT;
            case 'T' -> Answer.TAKEN;
            case 'F' -> Answer.FAIL;
            case 'H' -> Answer.HANG;
            default -> throw new IllegalArgumentException(answers);
          };
    }
  }

  /**
   * A failed round releases wherever its acquire may have set the key (granted, failed, or no
   * answer), and nowhere it was refused: a master that answered TAKEN holds nothing of ours.
   */
  private void assertReleasedWhereTheKeyMayBe(String answers) {
    for (int i = 0; i < nodes.size(); i++) {
      FakeNode node = nodes.get(i);
      int master = i;
      assertEquals(
          answers.charAt(i) != 'T',
          node.received().contains("RELEASE orders:42"),
          () -> "answers " + answers + ": master " + master + " received " + node.received());
    }
  }
}
