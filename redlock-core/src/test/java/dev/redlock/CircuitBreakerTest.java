package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLockListener.CircuitState;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Per-master circuit breakers: a failing master is skipped at once, probed later, and readmitted.
 */
class CircuitBreakerTest {

  private static final Duration TTL = Duration.ofSeconds(1);
  private static final Duration OPEN_WAIT = Duration.ofMillis(50);

  private final FakeCluster cluster = new FakeCluster();
  private final FakeTicker ticker = cluster.ticker;
  private final List<FakeNode> nodes = cluster.nodes;
  private final List<String> changes = Collections.synchronizedList(new ArrayList<>());
  private RedLock redlock;

  private void build(boolean breakers) {
    build(breakers, OPEN_WAIT);
  }

  private void build(boolean breakers, Duration openWait) {
    RedLockBuilder builder =
        cluster
            .builder(3)
            .nodeTimeout(Duration.ofMillis(20))
            .circuitBreakers(breakers)
            .circuitBreakerWait(openWait)
            .listener(
                new RedLockListener() {
                  @Override
                  public void circuitChanged(String node, CircuitState state) {
                    changes.add(node + " " + state);
                  }
                });
    redlock = builder.build();
  }

  @AfterEach
  void close() {
    redlock.close();
  }

  /** What the listener heard so far: breaker changes are told on the event thread. */
  private List<String> changes() {
    redlock.awaitEventsTold();
    synchronized (changes) {
      return List.copyOf(changes);
    }
  }

  private long setsReceivedBy(int node) {
    return nodes.get(node).received().stream().filter(s -> s.startsWith("SET")).count();
  }

  @Test
  void failingMasterIsSkippedOnceItsBreakerOpens() {
    build(true, Duration.ofHours(1)); // no probe from the real-time wait
    nodes.get(2).onSet = Answer.FAIL;
    nodes.get(2).onRelease = Answer.FAIL;
    for (int i = 0; i < 20; i++) {
      redlock.tryAcquire("r" + i, TTL).orElseThrow().close();
    }
    assertEquals(List.of("127.0.0.1:7002 OPEN"), changes());
    long before = setsReceivedBy(2);
    Lease lease = redlock.tryAcquire("skipped", TTL).orElseThrow();
    assertEquals(before, setsReceivedBy(2), "no SET sent to the open master");
    lease.close();
    assertTrue(nodes.get(2).received().contains("RELEASE skipped"), "releases still reach it");
  }

  @Test
  void timeoutsOpenTheBreakerSoAHungMasterNoLongerCostsItsTimeout() {
    build(true, Duration.ofHours(1)); // no probe from the real-time wait
    nodes.get(2).onSet = Answer.HANG;
    nodes.get(2).onRelease = Answer.HANG;
    ticker.autoAdvance(Duration.ofMillis(5));
    for (int i = 0; i < 12; i++) {
      Lease lease = redlock.tryAcquire("r" + i, TTL).orElseThrow();
      lease.close(); // waits for every master: the hung one times out
    }
    assertEquals(List.of("127.0.0.1:7002 OPEN"), changes());
    ticker.autoAdvance(Duration.ZERO);
    long before = ticker.read();
    Lease lease = redlock.tryAcquire("fast", TTL).orElseThrow();
    lease.close();
    assertEquals(before, ticker.read(), "neither acquire nor release waited for the hung master");
  }

  @Test
  void openBreakerProbesAfterItsWaitAndClosesWhenTheMasterAnswers() throws Exception {
    build(true, Duration.ofMillis(500));
    nodes.get(0).onSet = Answer.FAIL;
    nodes.get(0).onRelease = Answer.FAIL;
    for (int i = 0; i < 20; i++) {
      redlock.tryAcquire("r" + i, TTL).ifPresent(Lease::close);
    }
    assertEquals(List.of("127.0.0.1:7000 OPEN"), changes());
    nodes.get(0).onSet = Answer.GRANT;
    nodes.get(0).onRelease = Answer.GRANT;
    ticker.advance(Duration.ofMillis(499)); // the open wait runs on the client's ticker
    redlock.tryAcquire("early", TTL).ifPresent(Lease::close);
    assertEquals(List.of("127.0.0.1:7000 OPEN"), changes(), "no probe before the wait is over");
    ticker.advance(Duration.ofMillis(2));
    for (int i = 0; i < 20 && !changes.contains("127.0.0.1:7000 CLOSED"); i++) {
      redlock.tryAcquire("probe" + i, TTL).ifPresent(Lease::close);
    }
    assertEquals(
        List.of("127.0.0.1:7000 OPEN", "127.0.0.1:7000 HALF_OPEN", "127.0.0.1:7000 CLOSED"),
        changes());
    Lease lease = redlock.tryAcquire("back", TTL).orElseThrow();
    assertEquals(Status.GRANTED, statusOf(lease, 0));
    assertTrue(
        Thread.getAllStackTraces().keySet().stream()
            .noneMatch(t -> t.getName().startsWith("CircuitBreaker")),
        "the breakers started no thread of their own");
  }

  @Test
  void openBreakersAreProbedAtOnceWhenTheClosedOnesCannotMakeAQuorum() {
    build(true, Duration.ofHours(1)); // no probe would come from the breakers' own wait
    for (int i = 0; i < 2; i++) {
      nodes.get(i).onSet = Answer.FAIL;
      nodes.get(i).onRelease = Answer.FAIL;
    }
    for (int i = 0; i < 20; i++) {
      try {
        redlock.tryAcquire("r" + i, TTL);
      } catch (QuorumUnavailableException expected) {
        // two of three masters failing
      }
    }
    assertEquals(List.of("127.0.0.1:7000 OPEN", "127.0.0.1:7001 OPEN"), sorted(changes()));
    for (int i = 0; i < 2; i++) {
      nodes.get(i).onSet = Answer.GRANT;
      nodes.get(i).onRelease = Answer.GRANT;
    }
    Lease lease = redlock.tryAcquire("healed", TTL).orElseThrow();
    assertEquals(
        List.of(
            "127.0.0.1:7000 CLOSED",
            "127.0.0.1:7000 OPEN",
            "127.0.0.1:7001 CLOSED",
            "127.0.0.1:7001 OPEN"),
        sorted(changes()),
        "a probe that answered closed its breaker");
    lease.close();
  }

  private static List<String> sorted(List<String> list) {
    synchronized (list) {
      return list.stream().sorted().toList();
    }
  }

  @Test
  void takenAndGoneAnswersAreHealthyAndNeverOpenTheBreaker() {
    build(true, Duration.ofHours(1));
    nodes.get(2).onSet = Answer.TAKEN;
    nodes.get(2).onRelease = Answer.GONE;
    for (int i = 0; i < 30; i++) {
      redlock.tryAcquire("r" + i, TTL).orElseThrow().close();
    }
    assertEquals(List.of(), changes());
  }

  @Test
  void withoutBreakersAFailingMasterIsAskedEveryTime() {
    build(false);
    nodes.get(2).onSet = Answer.FAIL;
    for (int i = 0; i < 30; i++) {
      redlock.tryAcquire("r" + i, TTL).orElseThrow().close();
    }
    assertEquals(30, setsReceivedBy(2));
  }

  private Status statusOf(Lease lease, int node) {
    return nodes.get(node).received().contains("SET back PX 1000") ? Status.GRANTED : Status.FAILED;
  }
}
