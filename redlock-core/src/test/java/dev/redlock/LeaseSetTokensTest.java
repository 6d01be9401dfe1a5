package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A lease on a set of resources, on scripted masters: it names each resource, and each has the
 * set's one fencing token, stored once; a resource the lease does not hold has none.
 */
class LeaseSetTokensTest {

  private static final Duration TTL = Duration.ofSeconds(10);

  private final FakeCluster cluster = new FakeCluster();
  private RedLock redlock;

  @AfterEach
  void close() {
    redlock.close();
  }

  @Test
  void eachResourceOfASetHasTheSetsOneFencingToken() {
    redlock = cluster.builder(3).build();
    Lease lease = redlock.tryAcquireAll(List.of("b", "a"), TTL).orElseThrow();
    assertEquals(List.of("a", "b"), lease.resources(), "in their sorted order");
    long token = lease.fencingToken();
    assertTrue(token > 0, "a token: " + token);
    assertEquals(token, lease.fencingToken("a"));
    assertEquals(token, lease.fencingToken("b"));
    assertEquals(Map.of("a", token, "b", token), lease.fencingTokens());
    assertEquals(List.of("a", "b"), List.copyOf(lease.fencingTokens().keySet()));
  }

  @Test
  void aResourceTheLeaseDoesNotHoldHasNoToken() {
    redlock = cluster.builder(3).build();
    Lease lease = redlock.tryAcquireAll(List.of("a", "b"), TTL).orElseThrow();
    IllegalArgumentException other =
        assertThrows(IllegalArgumentException.class, () -> lease.fencingToken("c"));
    assertTrue(
        other.getMessage().startsWith("this lease does not hold c; it holds "), other::toString);
    String sixtyFour = "x".repeat(64);
    IllegalArgumentException exactly =
        assertThrows(IllegalArgumentException.class, () -> lease.fencingToken(sixtyFour));
    assertTrue(exactly.getMessage().contains(sixtyFour + "; it holds"), exactly::toString);
    IllegalArgumentException longer =
        assertThrows(IllegalArgumentException.class, () -> lease.fencingToken(sixtyFour + "y"));
    assertTrue(longer.getMessage().contains(sixtyFour + "...; it holds"), longer::toString);
  }

  @Test
  void aSingleResourcesLeaseNamesItAlone() {
    redlock = cluster.builder(3).build();
    Lease lease = redlock.tryAcquire("a", TTL).orElseThrow();
    assertEquals(List.of("a"), lease.resources());
    assertEquals(lease.fencingToken(), lease.fencingToken("a"));
  }

  @Test
  void aLeaseAtItsDeadlineHasNoValidityLeft() {
    redlock = cluster.builder(3).build();
    Lease lease = redlock.tryAcquire("a", TTL).orElseThrow();
    cluster.ticker.advance(lease.remainingValidity().minusNanos(1));
    assertEquals(Duration.ofNanos(1), lease.remainingValidity(), "a nanosecond before");
    cluster.ticker.advance(Duration.ofNanos(1));
    assertEquals(Duration.ZERO, lease.remainingValidity(), "at the deadline");
  }
}
