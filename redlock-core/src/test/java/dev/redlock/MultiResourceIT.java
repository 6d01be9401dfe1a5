package dev.redlock;

import static dev.redlock.RedLocks.eventually;
import static dev.redlock.RedLocks.redlock;
import static dev.redlock.RedLocks.userKeys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.Trouble;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Multi-resource leases on N real masters, N in {1, 3, 5}: all or nothing on every master, one
 * handle whose extend, release and renewal act on every key of the set, a fencing token per
 * resource above every earlier lease's on it, and a minority of masters down.
 */
class MultiResourceIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final List<String> SET = List.of("cart:3", "stock:9", "account:7");

  private static int[] all(int n) {
    return IntStream.range(0, n).toArray();
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {1, 3, 5})
  void aSetIsGrantedWholeWithOneTokenOnEveryKeyOfEveryMaster(int n, RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, n)) {
      Lease lease = redlock.tryAcquireAll(SET, TTL).orElseThrow();
      assertEquals(List.of("account:7", "cart:3", "stock:9"), lease.resources(), "sorted");
      assertEquals("[account:7, cart:3, stock:9]", lease.resource());
      assertTrue(lease.isValid());
      for (int i = 0; i < n; i++) {
        int node = i;
        eventually("the set on node " + i, () -> userKeys(cluster, node).size() == 3);
      }
      String token = cluster.node(0).admin().get("cart:3");
      assertEquals(32, token.length(), "128-bit hex token");
      for (int i = 0; i < n; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        assertEquals(List.of("account:7", "cart:3", "stock:9"), userKeys(cluster, i));
        for (String key : SET) {
          assertEquals(token, admin.get(key), key + " on node " + i);
          long pttl = admin.pttl(key);
          assertTrue(pttl > 9_000 && pttl <= 10_000, key + " PX ttl on node " + i + ": " + pttl);
        }
      }
      // Any resource of the set, alone or in another set, is refused while the set holds.
      assertEquals(Optional.empty(), redlock.tryAcquire("stock:9", TTL));
      assertEquals(Optional.empty(), redlock.tryAcquireAll(List.of("other", "cart:3"), TTL));
      lease.release();
      assertFalse(lease.isValid());
      for (int i = 0; i < n; i++) {
        int node = i;
        eventually("nothing left on node " + i, () -> userKeys(cluster, node).isEmpty());
      }
      assertTrue(redlock.tryAcquire("stock:9", TTL).isPresent(), "released for single leases");
    }
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {1, 3, 5})
  void oneResourceHeldElsewhereDeniesTheSetAndLeavesNothingOfItOnAnyMaster(
      int n, RedisCluster cluster) {
    try (RedLock holder = redlock(cluster, n);
        RedLock redlock = redlock(cluster, n)) {
      Lease held = holder.tryAcquire("stock:9", TTL).orElseThrow();
      for (int i = 0; i < n; i++) {
        int node = i;
        eventually("the holder's key on node " + i, () -> userKeys(cluster, node).size() == 1);
      }
      for (int round = 0; round < 5; round++) {
        assertEquals(Optional.empty(), redlock.tryAcquireAll(SET, TTL));
        for (int i = 0; i < n; i++) {
          // Not eventually: the script never set any key of the set where one of them was held.
          assertEquals(List.of("stock:9"), userKeys(cluster, i), "node " + i);
        }
      }
      held.release();
      assertTrue(redlock.tryAcquireAll(SET, TTL).isPresent(), "granted once the holder left");
    }
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {3, 5})
  void aSetDeniedByAMajorityIsReleasedWhereItWasSet(int n, RedisCluster cluster) {
    int quorum = n / 2 + 1;
    // Another client's key on a bare majority: the other masters grant the whole set, and the
    // failed round must take it back there.
    for (int i = 0; i < quorum; i++) {
      cluster.node(i).admin().set("cart:3", "someone-else");
    }
    try (RedLock redlock = redlock(cluster, n)) {
      assertEquals(Optional.empty(), redlock.tryAcquireAll(SET, TTL));
      for (int i = 0; i < n; i++) {
        int node = i;
        List<String> expected = i < quorum ? List.of("cart:3") : List.of();
        eventually(
            "node " + i + " holds " + expected, () -> userKeys(cluster, node).equals(expected));
        if (i < quorum) {
          assertEquals("someone-else", cluster.node(i).admin().get("cart:3"), "left alone");
        }
      }
    }
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {1, 3, 5})
  void extendAndReleaseAfterActOnEveryKeyOfEveryMaster(int n, RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, n)) {
      Lease lease = redlock.tryAcquireAll(SET, Duration.ofSeconds(2)).orElseThrow();
      assertTrue(lease.extend(Duration.ofSeconds(30)));
      assertTrue(lease.remainingValidity().compareTo(Duration.ofSeconds(20)) > 0);
      for (int i = 0; i < n; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        for (String key : SET) {
          eventually(key + " extended on node", () -> admin.pttl(key) > 20_000);
        }
      }
      assertTrue(lease.releaseAfter(Duration.ofSeconds(5)));
      assertFalse(lease.isValid());
      for (int i = 0; i < n; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        for (String key : SET) {
          eventually(key + " shortened", () -> admin.pttl(key) > 0 && admin.pttl(key) <= 5_000);
        }
      }
    }
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {1, 3, 5})
  void aSetWhoseKeyAMajorityLostIsLostAndFreedEverywhere(int n, RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, n)) {
      Lease lease = redlock.tryAcquireAll(SET, TTL).orElseThrow();
      for (int i = 0; i < n; i++) {
        int node = i;
        eventually("the set on node " + i, () -> userKeys(cluster, node).size() == 3);
      }
      for (int i = 0; i < n / 2 + 1; i++) {
        cluster.node(i).admin().command("DEL", "account:7"); // one key of the set, on a majority
      }
      assertFalse(lease.extend(TTL), "an extend counts a master only where every key holds");
      assertTrue(lease.isLost());
      assertTrue(lease.onLost().toCompletableFuture().isDone());
      for (int i = 0; i < n; i++) {
        int node = i;
        eventually("the rest freed on node " + i, () -> userKeys(cluster, node).isEmpty());
      }
    }
  }

  @Test
  void eachResourcesTokenRisesAboveEveryEarlierLeaseOfItSingleOrSet(RedisCluster cluster) {
    FencingIT.seedFenceCounters(cluster, 0, 1, 2); // only a counter can give a token above it
    try (RedLock a = redlock(cluster, 5);
        RedLock b = redlock(cluster, 5)) {
      Map<String, Long> last = new LinkedHashMap<>();
      List<List<String>> leases =
          List.of(
              List.of("a"),
              List.of("a", "b"),
              List.of("b"),
              List.of("c", "b"),
              List.of("a", "c"),
              List.of("c"),
              List.of("a", "b", "c"));
      for (int i = 0; i < leases.size(); i++) {
        RedLock client = i % 2 == 0 ? a : b;
        List<String> resources = leases.get(i);
        try (Lease lease =
            resources.size() == 1
                ? client.tryAcquire(resources.get(0), TTL).orElseThrow()
                : client.tryAcquireAll(resources, TTL).orElseThrow()) {
          Map<String, Long> tokens = lease.fencingTokens();
          assertEquals(lease.resources(), new ArrayList<>(tokens.keySet()));
          for (String resource : resources) {
            long token = lease.fencingToken(resource);
            assertEquals(tokens.get(resource), token);
            long before = last.getOrDefault(resource, FencingIT.SEED);
            assertTrue(token > before, resource + " in lease " + i + ": " + token + " > " + before);
            last.put(resource, token);
          }
          assertThrows(IllegalArgumentException.class, () -> lease.fencingToken("d"));
        }
      }
    }
  }

  @Test
  void theRestartGuardKeepsYoungMastersFromGrantingASetAndNothingIsLeft(RedisCluster cluster) {
    try (RedLock young =
        RedLock.builder()
            .nodes(cluster.uris().subList(0, 3))
            .nodeTimeout(Duration.ofMillis(200))
            .build()) {
      // Never granted; once connected (a first round may time out), a majority says RESTARTED.
      eventually(
          "a majority of masters answers RESTARTED",
          () ->
              assertThrows(QuorumUnavailableException.class, () -> young.tryAcquireAll(SET, TTL))
                      .outcomes()
                      .stream()
                      .filter(o -> o.status() == NodeOutcome.Status.RESTARTED)
                      .count()
                  >= 2);
      for (int i = 0; i < 3; i++) {
        int node = i;
        eventually("released on node " + i, () -> userKeys(cluster, node).isEmpty());
        // Stored by each master's answer; the round was decided by the first two.
        eventually(
            "a birth marker stored on node " + i,
            () -> cluster.node(node).admin().exists(Trouble.DATASET_MARKER_KEY));
      }
    }
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {3, 5})
  void aMinorityOfMastersDownStillGrantsExtendsAndReleasesTheSet(int n, RedisCluster cluster)
      throws Exception {
    int down = n - (n / 2 + 1);
    try (RedLock redlock = redlock(cluster, n)) {
      for (int i = 0; i < down; i++) {
        cluster.node(n - 1 - i).kill();
      }
      Lease lease = redlock.acquireAll(SET, TTL, Duration.ofSeconds(5));
      assertTrue(lease.isValid());
      assertTrue(lease.extend(TTL));
      assertEquals(List.of("account:7", "cart:3", "stock:9"), userKeys(cluster, 0));
      assertTrue(lease.fencingToken("cart:3") > 0);
      lease.release();
      for (int i = 0; i < n - down; i++) {
        int node = i;
        eventually("released on node " + i, () -> userKeys(cluster, node).isEmpty());
      }
    }
  }

  /**
   * Whether {@code redlock} got {@code resource}: a round that reached no quorum in time (a loaded
   * machine, at the suite's 100 ms node timeout) did not get it either.
   */
  private static boolean taken(RedLock redlock, String resource, Duration ttl) {
    try {
      return redlock.tryAcquire(resource, ttl).isPresent();
    } catch (QuorumUnavailableException e) {
      return false;
    }
  }

  @Test
  void withLockAndTheLockFacadeHoldTheWholeSetThroughRenewals(RedisCluster cluster)
      throws Exception {
    // A renewal is sent when a third of the TTL is left, and must be through before that runs
    // out: an extend round takes at most a node timeout, and one that reaches no quorum is tried
    // again after at most 1.5 retry delays. A third of the TTL holds three such tries (with the
    // defaults, 3 x (100 + 75) ms): a busy machine that delays the renewal thread by a few hundred
    // milliseconds does not lose the lease, and a set that is not renewed still does, in one TTL.
    Duration tries =
        RedLocks.NODE_TIMEOUT.plus(RedLock.DEFAULT_RETRY_DELAY.multipliedBy(3).dividedBy(2));
    Duration ttl = tries.multipliedBy(3).multipliedBy(3);
    try (RedLock redlock = redlock(cluster, 3);
        RedLock other = redlock(cluster, 3)) {
      String answer =
          redlock.callWithLock(
              SET,
              ttl,
              Duration.ofSeconds(5),
              lease -> {
                // Held for two TTLs: renewed at least twice.
                long end = System.nanoTime() + ttl.multipliedBy(2).toNanos();
                while (System.nanoTime() - end < 0) {
                  lease.ensureValid(); // throws if a renewal of the set was missed
                  assertFalse(taken(other, "account:7", ttl), "the set's resource taken");
                  LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
                }
                // Renewed on a quorum (2 of the 3 masters): a round may return before the third.
                for (String key : SET) {
                  long holding =
                      IntStream.range(0, 3)
                          .filter(i -> cluster.node(i).admin().pttl(key) > 0)
                          .count();
                  assertTrue(holding >= 2, key + " renewed on " + holding + " of 3 masters");
                }
                return lease.resource();
              });
      assertEquals("[account:7, cart:3, stock:9]", answer);
      eventually("withLock released the set", () -> userKeys(cluster, 0).isEmpty());

      LeaseLock lock = redlock.newLock(SET, ttl);
      assertEquals("[account:7, cart:3, stock:9]", lock.resource());
      lock.lock();
      try {
        // The round returned at a quorum; master 0's acquire was sent and lands.
        eventually("the set on node 0", () -> userKeys(cluster, 0).size() == SET.size());
        assertFalse(other.newLock(List.of("stock:9", "x"), ttl).tryLock(), "overlap refused");
        assertTrue(lock.tryLock(), "reentrant");
        lock.unlock();
      } finally {
        lock.unlock();
      }
      eventually("unlock released the set", () -> userKeys(cluster, 0).isEmpty());
      LeaseLock overlapping = other.newLock(List.of("stock:9", "x"), ttl);
      assertTrue(overlapping.tryLock());
      overlapping.unlock();
    }
  }

  @Test
  void theMinimalAclOfTheDocsHoldsASet(RedisCluster cluster) {
    List<String> uris = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      RedisProcess node = cluster.node(i);
      node.admin().command(LeastPrivilegeIT.MINIMAL_ACL.split(" "));
      uris.add("redis://redlock:s3cret@" + node.host() + ":" + node.port());
    }
    try (RedLock redlock = redlock(uris)) {
      Lease lease = redlock.tryAcquireAll(SET, TTL).orElseThrow();
      assertTrue(lease.fencingToken("stock:9") > 0);
      assertTrue(lease.extend(TTL));
      assertTrue(redlock.tryAcquireAll(List.of("stock:9", "x"), TTL).isEmpty());
      assertTrue(lease.releaseAfter(Duration.ofSeconds(5)));
      assertTrue(redlock.tryAcquireAll(List.of("a", "b"), TTL).orElseThrow().isValid());
    } finally {
      for (int i = 0; i < 3; i++) {
        cluster.node(i).admin().command("ACL", "DELUSER", "redlock");
      }
    }
  }

  @Test
  void badSetsAreRefusedClearlyAndSendNothing(RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, 3)) {
      IllegalArgumentException empty =
          assertThrows(IllegalArgumentException.class, () -> redlock.tryAcquireAll(List.of(), TTL));
      assertEquals("resources must not be empty", empty.getMessage());
      IllegalArgumentException twice =
          assertThrows(
              IllegalArgumentException.class,
              () -> redlock.tryAcquireAll(List.of("a", "b", "a"), TTL));
      assertEquals("resources name 'a' twice", twice.getMessage());
      List<String> many = new ArrayList<>();
      for (int i = 0; i <= RedLock.MAX_RESOURCES_PER_LEASE; i++) {
        many.add("r" + i);
      }
      IllegalArgumentException tooMany =
          assertThrows(IllegalArgumentException.class, () -> redlock.tryAcquireAll(many, TTL));
      assertEquals("a lease holds at most 64 resources; got 65", tooMany.getMessage());
      String big = "x".repeat(RedLock.MAX_RESOURCE_BYTES / 2 + 1);
      assertThrows(
          IllegalArgumentException.class,
          () -> redlock.tryAcquireAll(List.of(big, big + "y"), TTL));
      assertThrows(
          IllegalArgumentException.class,
          () -> redlock.newLock(List.of("redlock:fence", "a"), TTL));
      assertThrows(
          NullPointerException.class,
          () -> redlock.tryAcquireAll(Collections.singletonList(null), TTL));
      assertThrows(
          NullPointerException.class,
          () -> redlock.withLock((List<String>) null, TTL, TTL, l -> {}));
      assertThrows(
          IllegalArgumentException.class,
          () -> redlock.acquireAll(List.of("a", "a"), TTL, Duration.ofSeconds(1)));
      assertTrue(redlock.tryAcquireAll(many.subList(0, 64), TTL).isPresent(), "64 is allowed");
      assertEquals(64, userKeys(cluster, 0).size(), "only the allowed set was ever sent");
    }
  }

  @Test
  void theHappyPathLogsNothingAtWarnOrAboveAndSurvivesAScriptFlush(RedisCluster cluster)
      throws Exception {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try (RedLock redlock = redlock(cluster, 3)) {
      for (int i = 0; i < 10; i++) {
        if (i == 5) {
          for (int node = 0; node < 3; node++) {
            cluster.node(node).admin().scriptFlush(); // the next calls meet NOSCRIPT
          }
          // Sent again after the reload within the same round: granted at the first try.
          redlock.tryAcquireAll(SET, TTL).orElseThrow().release();
        }
        try (Lease lease = redlock.acquireAll(SET, TTL, Duration.ofSeconds(5))) {
          assertTrue(lease.extend(TTL));
          assertTrue(lease.fencingToken() > 0);
        }
      }
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertFalse(log.contains("WARN") || log.contains("ERROR"), log);
  }
}
