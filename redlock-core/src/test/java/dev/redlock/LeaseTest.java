package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Extend and release of a lease against scripted masters. */
class LeaseTest {

  private static final Duration TTL = Duration.ofMillis(1000);

  private final FakeCluster cluster = new FakeCluster();
  private final FakeTicker ticker = cluster.ticker;
  private final List<FakeNode> nodes = cluster.nodes;
  private RedLock redlock;
  private Lease lease;

  @BeforeEach
  void acquire() {
    RedLockBuilder builder = cluster.builder(5).nodeTimeout(Duration.ofMillis(20));
    redlock = builder.build();
    lease = redlock.tryAcquire("job", TTL).orElseThrow(); // validity 988 ms at t0
    nodes.forEach(FakeNode::forget);
  }

  @AfterEach
  void close() {
    redlock.close();
  }

  @Test
  void leaseExpiresWhenItsValidityRunsOut() {
    ticker.advance(Duration.ofMillis(987));
    assertTrue(lease.isValid());
    assertEquals(Duration.ofMillis(1), lease.remainingValidity());
    ticker.advance(Duration.ofMillis(1));
    assertFalse(lease.isValid());
    assertEquals(Duration.ZERO, lease.remainingValidity());
  }

  @Test
  void extendByQuorumMovesTheDeadlineForward() {
    ticker.advance(Duration.ofMillis(500));
    nodes.get(3).onExtend = Answer.GONE;
    nodes.get(4).onExtend = Answer.FAIL;
    assertTrue(lease.extend(Duration.ofMillis(2000)));
    // 2000 - (20 + 2) drift, counted from the start of the extend round
    assertEquals(Duration.ofMillis(1978), lease.remainingValidity());
    nodes.forEach(node -> assertEquals(List.of("EXTEND job PX 2000"), node.received()));
  }

  @Test
  void extendNeverMovesTheDeadlineBack() {
    assertTrue(lease.extend(Duration.ofMillis(100)));
    assertEquals(Duration.ofMillis(988), lease.remainingValidity());
  }

  @Test
  void extendRefusedByAMajorityLosesTheLease() {
    nodes.get(0).onExtend = Answer.TAKEN;
    nodes.get(1).onExtend = Answer.GONE;
    nodes.get(2).onExtend = Answer.GONE;
    assertFalse(lease.extend(Duration.ofMillis(2000)));
    assertFalse(lease.isValid());
    assertEquals(Duration.ZERO, lease.remainingValidity());
    assertTrue(lease.onLost().toCompletableFuture().isDone());
    assertFalse(lease.extend(Duration.ofMillis(2000)), "a lost lease is never extended again");
    lease.release();
    assertTrue(lease.isLost(), "still lost once released");
    assertTrue(lease.toString().contains("lost"), lease.toString());
  }

  @Test
  void extendThatReachesNoQuorumKeepsTheLeaseUntilItsOldDeadline() {
    ticker.advance(Duration.ofMillis(500));
    nodes.get(0).onExtend = Answer.TAKEN;
    nodes.get(1).onExtend = Answer.FAIL;
    nodes.get(2).onExtend = Answer.FAIL;
    assertFalse(lease.extend(Duration.ofMillis(2000)));
    assertTrue(lease.isValid(), "the masters never said the key was gone: the old lease stands");
    assertEquals(Duration.ofMillis(488), lease.remainingValidity());
    assertFalse(lease.onLost().toCompletableFuture().isDone());
    nodes.forEach(node -> assertFalse(node.received().contains("RELEASE job"), "nothing released"));
    nodes.get(1).onExtend = Answer.GRANT;
    assertTrue(lease.extend(Duration.ofMillis(2000)), "a later extend can still succeed");
    assertEquals(Duration.ofMillis(1978), lease.remainingValidity());
  }

  @Test
  void lostLeaseIsInvalidAndSignalledBeforeAnyMasterIsAskedToReleaseIt() {
    FakeCluster other = new FakeCluster();
    List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
    RedLockListener listener =
        new RedLockListener() {
          @Override
          public void lost(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
            heard.add("lost " + resource);
          }
        };
    try (RedLock redlock = other.builder(5).listener(listener).build()) {
      Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
      List<String> atRelease = new java.util.concurrent.CopyOnWriteArrayList<>();
      for (FakeNode node : other.nodes) {
        node.whenReleased =
            () ->
                atRelease.add(
                    "valid="
                        + lease.isValid()
                        + " onLost="
                        + lease.onLost().toCompletableFuture().isDone()
                        + " heard="
                        + heard);
      }
      for (int i = 0; i < 3; i++) {
        other.nodes.get(i).onExtend = Answer.GONE;
      }
      assertFalse(lease.extend(Duration.ofMillis(2000)));
      assertEquals(5, atRelease.size(), "the masters still holding the key are released");
      atRelease.forEach(state -> assertEquals("valid=false onLost=true heard=[lost job]", state));
    }
  }

  @Test
  void expiredLeaseIsNeverExtended() {
    ticker.advance(TTL);
    assertFalse(lease.extend(Duration.ofMillis(2000)));
    nodes.forEach(node -> assertTrue(node.received().isEmpty(), "no master was asked"));
  }

  @Test
  void extendThatOutlivesTheOldDeadlineDoesNotCount() {
    ticker.advance(Duration.ofMillis(980));
    nodes.get(0).latency = Duration.ofMillis(10); // the quorum confirms after the old deadline
    assertFalse(lease.extend(Duration.ofMillis(2000)));
    assertFalse(lease.isValid());
  }

  @Test
  void releaseReachesEveryNodeOnceAndEndsTheLease() {
    nodes.get(4).onRelease = Answer.FAIL;
    lease.close();
    lease.close();
    lease.release();
    nodes.forEach(node -> assertEquals(List.of("RELEASE job"), node.received()));
    assertFalse(lease.isValid());
    assertFalse(lease.extend(TTL));
  }

  @Test
  void releaseWaitsAtMostTheNodeTimeout() {
    nodes.get(4).onRelease = Answer.HANG;
    ticker.autoAdvance(Duration.ofMillis(5));
    lease.release(); // returns: the hanging node is bounded by the node timeout
    nodes.forEach(node -> assertEquals(List.of("RELEASE job"), node.received()));
  }

  @Test
  void toStringNeverShowsTheToken() {
    String token =
        new String(nodes.get(0).tokens().get(0), java.nio.charset.StandardCharsets.US_ASCII);
    assertFalse(lease.toString().contains(token));
    assertFalse(lease.toString().contains(token.substring(0, 8)));
    assertTrue(lease.toString().contains("job"));
  }
}
