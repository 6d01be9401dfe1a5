package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A lease's calls that do not block, on scripted masters and a fake clock: an extend that moves the
 * deadline, a release that reaches every master once and ends the lease, and a second release that
 * sends nothing.
 */
class AsyncLeaseCallsTest {

  private static final Duration TTL = Duration.ofSeconds(10);

  private final FakeCluster cluster = new FakeCluster();
  private final List<FakeNode> nodes = cluster.nodes;
  private RedLock redlock;

  @AfterEach
  void close() {
    redlock.close();
  }

  private long sent(String command) {
    return nodes.stream()
        .flatMap(n -> n.received().stream())
        .filter(s -> s.startsWith(command))
        .count();
  }

  @Test
  void anExtendOffTheCallersThreadMovesTheDeadline() throws Exception {
    redlock = cluster.builder(3).build();
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    cluster.ticker.advance(Duration.ofSeconds(5));
    assertTrue(lease.extendAsync(TTL).get(5, TimeUnit.SECONDS));
    assertTrue(
        lease.remainingValidity().compareTo(Duration.ofSeconds(9)) > 0,
        "extended from now: " + lease.remainingValidity());
    assertEquals(3, sent("EXTEND"));
  }

  @Test
  void aReleaseOffTheCallersThreadEndsTheLeaseOnEveryMasterOnce() throws Exception {
    redlock = cluster.builder(3).build();
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    lease.releaseAsync().get(5, TimeUnit.SECONDS);
    assertFalse(lease.isValid());
    assertEquals(0, redlock.leasesHeld());
    assertEquals(3, sent("RELEASE"));
    lease.releaseAsync().get(5, TimeUnit.SECONDS);
    assertEquals(3, sent("RELEASE"), "released already: nothing sent");
  }
}
