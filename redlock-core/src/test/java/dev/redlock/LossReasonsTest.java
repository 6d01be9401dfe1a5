package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.testkit.Poll;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A lost lease is logged at WARN with why, the operator's one account of the loss: refused by a
 * majority, expired while an extend was out (and what that extend reached), or expired before its
 * renewal (and what the last renewal without a quorum reached). On five scripted masters and a fake
 * clock; the log is slf4j-simple's, on System.err.
 */
class LossReasonsTest {

  private static final Duration TTL = Duration.ofSeconds(10);

  private final FakeCluster cluster = new FakeCluster();
  private final List<FakeNode> nodes = cluster.nodes;
  @RegisterExtension final CapturedLog captured = new CapturedLog();
  private RedLock redlock;

  @BeforeEach
  void build() {
    redlock = cluster.builder(5).circuitBreakers(false).build();
  }

  @AfterEach
  void close() {
    redlock.close();
  }

  /** The WARN line of the loss of {@code resource}'s lease. */
  private String lossLogged(String resource) {
    for (String line : captured.text().split("\n")) {
      if (line.contains("WARN") && line.contains("lease on '" + resource + "' lost: ")) {
        return line;
      }
    }
    throw new AssertionError("no loss logged: " + captured.text());
  }

  /** Three of the five masters, a majority, answer every extend with {@code answer}. */
  private void majorityExtends(Answer answer) {
    for (int i = 0; i < 3; i++) {
      nodes.get(i).onExtend = answer;
    }
  }

  /** The lease's TTL passes on the fake clock, then its renewal runs: it finds the lease lost. */
  private void expireAndRenew(Lease lease) {
    cluster.ticker.advance(TTL);
    redlock.renew(lease, TTL.toMillis());
    Poll.until(
        Duration.ofSeconds(5), () -> lease.onLost().toCompletableFuture().isDone(), () -> "lost");
  }

  @Test
  void anExtendRefusedByAMajorityIsLoggedAsNoLongerHeld() {
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    majorityExtends(Answer.GONE);
    assertFalse(lease.extend(TTL));
    String line = lossLogged("r");
    assertTrue(line.contains("lost: a majority no longer holds it: ["), line);
  }

  @Test
  void anExtendThatOutlivedTheLeaseWithoutAQuorumSaysWhatItReached() {
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    majorityExtends(Answer.FAIL);
    nodes.get(4).latency = Duration.ofSeconds(11); // the extend outlives the lease
    assertFalse(lease.extend(TTL));
    String line = lossLogged("r");
    assertTrue(line.contains("lost: it expired during the extend; the extend reached "), line);
  }

  @Test
  void anExtendThatOutlivedTheLeaseWithAQuorumSaysOnlyThatItExpired() {
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    nodes.get(4).latency = Duration.ofSeconds(11); // the extend outlives the lease
    assertFalse(lease.extend(TTL));
    String line = lossLogged("r");
    assertTrue(line.contains("lost: it expired during the extend: ["), line);
  }

  @Test
  void anExpiryAfterAnUnconfirmedRenewalSaysWhatThatRenewalReached() {
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    majorityExtends(Answer.FAIL);
    assertFalse(lease.extend(TTL), "no quorum: not extended, still held");
    assertFalse(lease.isLost());
    expireAndRenew(lease);
    String line = lossLogged("r");
    assertTrue(
        line.contains("lost: it expired before it could be renewed; the last renewal reached "),
        line);
  }

  @Test
  void anExpiryWithNoRenewalOutSaysOnlyThatItExpired() {
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    expireAndRenew(lease);
    String line = lossLogged("r");
    assertTrue(line.endsWith("lost: it expired before it could be renewed"), line);
  }
}
