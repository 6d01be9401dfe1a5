package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLockListener.Denial;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The listener hears every operation with per-node outcomes, and cannot break any of them. */
class ListenerTest {

  private static final Duration TTL = Duration.ofSeconds(1);

  private final FakeCluster cluster = new FakeCluster();
  private final FakeTicker ticker = cluster.ticker;
  private final List<FakeNode> nodes = cluster.nodes;
  private final List<String> heard = Collections.synchronizedList(new ArrayList<>());
  private RedLock redlock;

  /** Records events as "event resource statuses". */
  private final RedLockListener recording =
      new RedLockListener() {
        @Override
        public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
          record("acquired", resource, outcomes);
        }

        @Override
        public void denied(
            String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
          record("denied(" + reason + ")", resource, outcomes);
        }

        @Override
        public void notExtended(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
          record("notExtended", resource, outcomes);
        }

        @Override
        public void extended(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
          record("extended", resource, outcomes);
        }

        @Override
        public void lost(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
          record("lost", resource, outcomes);
        }

        @Override
        public void released(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
          record("released", resource, outcomes);
        }
      };

  private void record(String event, String resource, List<NodeOutcome> outcomes) {
    StringBuilder line = new StringBuilder(event).append(' ').append(resource);
    for (NodeOutcome outcome : outcomes) {
      line.append(' ').append(outcome.status());
    }
    heard.add(line.toString());
  }

  private RedLock build(RedLockListener listener) {
    RedLockBuilder builder =
        cluster.builder(3).nodeTimeout(Duration.ofMillis(20)).listener(listener);
    redlock = builder.build();
    return redlock;
  }

  @AfterEach
  void close() {
    redlock.close();
  }

  @Test
  void listenerHearsEveryOperationWithEachNodesAnswer() {
    build(recording);
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    nodes.get(2).onSet = Answer.TAKEN;
    nodes.get(1).onSet = Answer.FAIL;
    assertFalse(redlock.tryAcquire("r", TTL).isPresent());
    assertTrue(lease.extend(TTL));
    lease.close();
    Lease second = redlock.tryAcquire("s", TTL).orElse(null);
    assertEquals(null, second);
    nodes.get(1).onSet = Answer.GRANT;
    Lease third = redlock.tryAcquire("t", TTL).orElseThrow();
    nodes.get(0).onExtend = Answer.FAIL;
    nodes.get(1).onExtend = Answer.FAIL;
    assertFalse(third.extend(TTL));
    nodes.forEach(node -> node.onExtend = Answer.GONE);
    assertFalse(third.extend(TTL));
    nodes.get(0).onSet = Answer.FAIL;
    nodes.get(1).onSet = Answer.FAIL;
    assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("u", TTL));

    assertEquals(
        List.of(
            "acquired r GRANTED GRANTED PENDING", // decided at quorum
            "denied(TAKEN) r GRANTED FAILED TAKEN",
            "extended r GRANTED GRANTED PENDING",
            "released r GRANTED GRANTED PENDING", // decided once a majority answered
            "denied(TAKEN) s GRANTED FAILED TAKEN",
            "acquired t GRANTED GRANTED PENDING",
            "notExtended t FAILED FAILED PENDING", // no quorum possible after two failures
            "lost t GONE GONE PENDING",
            "denied(UNAVAILABLE) u FAILED FAILED PENDING"),
        heard);
  }

  @Test
  void failedExtendCompletesOnLostOnceAndEnsureValidThrows() {
    build(recording);
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    AtomicReference<Lease> lostLease = new AtomicReference<>();
    lease.onLost().thenAccept(lostLease::set);
    lease.ensureValid();
    nodes.forEach(node -> node.onExtend = Answer.TAKEN);
    assertFalse(lease.extend(TTL));
    assertEquals(lease, lostLease.get());
    LeaseLostException e = assertThrows(LeaseLostException.class, lease::ensureValid);
    assertTrue(e.getMessage().contains("lost"), e.getMessage());
    assertFalse(lease.extend(TTL));
    assertEquals(1, heard.stream().filter(s -> s.startsWith("lost")).count());
  }

  @Test
  void releasedLeaseNeverCompletesOnLost() {
    build(recording);
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    lease.close();
    assertFalse(lease.onLost().toCompletableFuture().isDone());
    assertThrows(LeaseLostException.class, lease::ensureValid);
  }

  @Test
  void throwingListenerNeverBreaksALockOperation() {
    build(
        new RedLockListener() {
          @Override
          public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
            throw new IllegalStateException("listener bug");
          }

          @Override
          public void released(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
            throw new AssertionError("listener bug");
          }
        });
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    assertTrue(lease.isValid());
    lease.close();
    nodes.forEach(node -> assertTrue(node.received().contains("RELEASE r")));
  }
}
