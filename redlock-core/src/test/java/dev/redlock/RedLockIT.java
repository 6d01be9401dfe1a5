package dev.redlock;

import static dev.redlock.RedLocks.NODE_TIMEOUT;
import static dev.redlock.RedLocks.TTL;
import static dev.redlock.RedLocks.admitted;
import static dev.redlock.RedLocks.eventually;
import static dev.redlock.RedLocks.keysGone;
import static dev.redlock.RedLocks.redlock;
import static dev.redlock.RedLocks.userKeys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Acquire, deny, release and extend against N real redis-server masters, N in {1, 3, 5}. */
class RedLockIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {1, 3, 5})
  void acquireDeniesASecondHolderAndReleaseClearsEveryNode(int n, RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, n)) {
      Lease lease = redlock.tryAcquire("orders:42", TTL).orElseThrow();
      assertTrue(lease.isValid());
      assertTrue(lease.remainingValidity().compareTo(TTL) < 0);
      // The round returns at quorum: a straggler's SET may still be on its way.
      for (int i = 0; i < n; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        eventually("the key on node " + i, () -> admin.exists("orders:42"));
      }
      String token = cluster.node(0).admin().get("orders:42");
      assertEquals(32, token.length(), "128-bit hex token");
      for (int i = 0; i < n; i++) {
        assertEquals(token, cluster.node(i).admin().get("orders:42"), "same token on every node");
        long pttl = cluster.node(i).admin().pttl("orders:42");
        assertTrue(pttl > 9_000 && pttl <= 10_000, "PX ttl on node " + i + ": " + pttl);
      }

      assertEquals(Optional.empty(), redlock.tryAcquire("orders:42", TTL));
      for (int i = 0; i < n; i++) {
        assertEquals(
            token, cluster.node(i).admin().get("orders:42"), "the loser's cleanup left it");
      }

      lease.close();
      assertFalse(lease.isValid());
      // A release returns once a majority answered; the others follow.
      for (int i = 0; i < n; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        eventually("released on node " + i, () -> !admin.exists("orders:42"));
      }
      redlock.tryAcquire("orders:42", TTL).orElseThrow().close();
    }
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {1, 3, 5})
  void extendRenewsTheKeyOnEveryNode(int n, RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, n)) {
      Lease lease = redlock.tryAcquire("job", Duration.ofSeconds(2)).orElseThrow();
      assertTrue(lease.extend(Duration.ofSeconds(30)));
      assertTrue(lease.remainingValidity().compareTo(Duration.ofSeconds(20)) > 0);
      // extend returns at quorum; the other masters' replies follow.
      for (int i = 0; i < n; i++) {
        RedisAdmin admin = cluster.node(i).admin();
        eventually("extended on node " + i, () -> admin.pttl("job") > 20_000);
      }
      lease.close();
    }
  }

  @ParameterizedTest(name = "N = {0}")
  @ValueSource(ints = {1, 3, 5})
  void aForeignTokenIsNeverReleasedOrExtended(int n, RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, n)) {
      Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
      // Our lock expired and another client took it everywhere.
      for (int i = 0; i < n; i++) {
        cluster.node(i).admin().command("SET", "job", "someone-else", "PX", "1000");
      }
      assertFalse(lease.extend(Duration.ofSeconds(60)));
      assertFalse(lease.isValid(), "a failed extend loses the lease");
      lease.close();
      for (int i = 0; i < n; i++) {
        assertEquals("someone-else", cluster.node(i).admin().get("job"));
        assertTrue(cluster.node(i).admin().pttl("job") <= 1000, "not extended on node " + i);
      }
    }
  }

  @Test
  void anExtendThatOutlivesTheLeaseSaysWhyItsRoundFailed(RedisCluster cluster) {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try (RedLock redlock = redlock(cluster, 3)) {
      Lease lease = redlock.tryAcquire("outlived", Duration.ofMillis(500)).orElseThrow();
      eventually("less left than a node timeout", () -> lease.remainingValidity().toMillis() < 50);
      for (int i = 0; i < 3; i++) {
        cluster.node(i).admin().command("CLIENT", "PAUSE", "400", "ALL"); // the round times out
      }
      assertFalse(lease.extend(TTL));
      assertFalse(lease.isValid(), "expired during the extend");
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertTrue(
        log.matches(
            "(?s).*WARN .*lease on 'outlived' lost: it expired during the extend; the extend"
                + " reached no quorum \\(2 of 3 masters must grant, 0 did\\).*"),
        log);
  }

  @Test
  void expiredLockIsNeverRecreatedByExtend(RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, 3)) {
      Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
      for (int i = 0; i < 3; i++) {
        cluster.node(i).admin().command("DEL", "job"); // as if the keys expired
      }
      assertFalse(lease.extend(TTL));
      for (int i = 0; i < 3; i++) {
        assertFalse(cluster.node(i).admin().exists("job"), "not re-created on node " + i);
      }
    }
  }

  @Test
  void aMinorityOfNodesDownStillGrants(RedisCluster cluster) {
    cluster.node(3).kill();
    cluster.node(4).kill();
    try (RedLock redlock = redlock(cluster, 5)) {
      Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
      assertTrue(lease.isValid());
      lease.close();
      for (int i = 0; i < 3; i++) {
        assertFalse(cluster.node(i).admin().exists("job"));
      }
    }
  }

  @Test
  void aMajorityOfNodesDownFailsWithinTheTimeoutAndLeavesNoKeys(RedisCluster cluster) {
    for (int i = 0; i < 3; i++) {
      cluster.node(i).kill();
    }
    try (RedLock redlock = redlock(cluster, 5)) {
      long start = System.nanoTime();
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("job", TTL));
      long tookMillis = (System.nanoTime() - start) / 1_000_000;
      assertTrue(
          tookMillis < NODE_TIMEOUT.toMillis() + 900, "bounded by the node timeout: " + tookMillis);
      List<Status> statuses = e.outcomes().stream().map(NodeOutcome::status).toList();
      assertEquals(List.of(Status.FAILED, Status.FAILED, Status.FAILED), statuses.subList(0, 3));
      assertTrue(
          statuses.subList(3, 5).stream().allMatch(s -> s == Status.GRANTED || s == Status.PENDING),
          e::getMessage);
      eventually("keys released on the live nodes", () -> keysGone(cluster, "job", 3, 4));

      QuorumUnavailableException waited =
          assertThrows(
              QuorumUnavailableException.class,
              () -> redlock.acquire("job", TTL, Duration.ofMillis(300)));
      assertEquals(5, waited.outcomes().size());
      eventually("keys released after acquire gave up", () -> keysGone(cluster, "job", 3, 4));
    }
  }

  @Test
  void closeWaitsForTheReleasesARoundWasDecidedWithout(RedisCluster cluster) throws Exception {
    Duration timeout = Duration.ofSeconds(2);
    RedLock redlock =
        admitted(RedLock.builder().nodes(cluster.uris()).nodeTimeout(timeout).build());
    try {
      Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
      RedisAdmin last = cluster.node(4).admin();
      eventually("master 4 holds the key", () -> last.exists("job"));
      cluster.node(4).pause();
      lease.close(); // decided by the four that answer; master 4 has the release unread
      long start = System.nanoTime();
      // The fault lasts 300 ms: master 4 resumes then, on a timer.
      CompletableFuture<Void> resumed =
          CompletableFuture.runAsync(
              () -> cluster.node(4).resume(),
              CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS));
      redlock.close();
      long tookMillis = (System.nanoTime() - start) / 1_000_000;
      resumed.get(5, TimeUnit.SECONDS);
      assertTrue(tookMillis >= 250, "close waited for the paused master's answer: " + tookMillis);
      assertTrue(tookMillis < timeout.toMillis(), "and no longer: " + tookMillis);
      assertFalse(cluster.node(4).admin().exists("job"), "its release ran before close returned");
    } finally {
      redlock.close();
      cluster.node(4).resume();
    }
  }

  @Test
  void aPausedMinorityDoesNotSlowTheQuorumAndIsCleanedUpOnResume(RedisCluster cluster) {
    Duration timeout = Duration.ofSeconds(2);
    try (RedLock redlock =
        admitted(RedLock.builder().nodes(cluster.uris()).nodeTimeout(timeout).build())) {
      cluster.node(0).pause();
      cluster.node(1).pause();
      long start = System.nanoTime();
      Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
      long tookNanos = System.nanoTime() - start;
      assertTrue(tookNanos < timeout.toNanos() / 4, "decided at quorum, not at the timeout");
      start = System.nanoTime();
      lease.close();
      tookNanos = System.nanoTime() - start;
      assertTrue(tookNanos < timeout.toNanos() / 4, "a release, too, is decided by a majority");
      cluster.node(0).resume();
      cluster.node(1).resume();
      // The SETs the paused nodes received run on resume, then the releases queued behind them.
      eventually("paused nodes hold no key", () -> keysGone(cluster, "job", 0, 1, 2, 3, 4));
    }
  }

  @Test
  void aPausedMajorityFailsInTimeAndItsLateGrantsAreReleased(RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, 5)) {
      for (int i = 0; i < 3; i++) {
        cluster.node(i).pause();
      }
      long start = System.nanoTime();
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("job", TTL));
      long tookMillis = (System.nanoTime() - start) / 1_000_000;
      assertTrue(tookMillis < NODE_TIMEOUT.toMillis() + 900, "bounded: " + tookMillis);
      assertEquals(Status.TIMED_OUT, e.outcomes().get(0).status());
      for (int i = 0; i < 3; i++) {
        cluster.node(i).resume();
      }
      eventually("no node holds the key", () -> keysGone(cluster, "job", 0, 1, 2, 3, 4));
      redlock.tryAcquire("job", TTL).orElseThrow().close();
    }
  }

  @Test
  void restartedAndFlushedNodesGetTheirScriptsBack(RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, 3)) {
      redlock.tryAcquire("job", TTL).orElseThrow().close(); // scripts cached on every node
      cluster.node(0).kill();
      cluster.node(0).restart(); // empty dataset, empty script cache
      cluster.node(1).admin().scriptFlush(); // same connection, script cache gone
      redlock.admitFreshNodes(); // the test knows no lock was held when it restarted
      eventually(
          "the restarted node grants again",
          () -> {
            Optional<Lease> lease = redlock.tryAcquire("job", TTL);
            lease.ifPresent(Lease::close);
            return lease.isPresent() && !cluster.node(0).admin().exists("job");
          });
      Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
      assertTrue(lease.extend(Duration.ofSeconds(20)));
      lease.close();
      eventually(
          "released on the restarted and flushed nodes", () -> keysGone(cluster, "job", 0, 1, 2));
    }
  }

  @Test
  void refusedHangingAndErroringNodesAreFailedVotesWithinTheTimeout(RedisCluster cluster)
      throws Exception {
    try (java.net.ServerSocket silent =
            new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        RedisProcess locked = RedisProcess.start();
        RedisProcess full = RedisProcess.start()) {
      int refusedPort;
      try (java.net.ServerSocket closed =
          new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
        refusedPort = closed.getLocalPort();
      }
      locked.admin().command("CONFIG", "SET", "requirepass", "right");
      full.admin().command("CONFIG", "SET", "maxmemory-policy", "noeviction");
      full.admin().command("CONFIG", "SET", "maxmemory", "1"); // every write answers -OOM
      List<String> uris =
          List.of(
              cluster.uris().get(0),
              cluster.uris().get(1),
              cluster.uris().get(2),
              "redis://127.0.0.1:" + refusedPort, // refuses connections
              "redis://127.0.0.1:" + silent.getLocalPort(), // accepts, never answers
              "redis://:wrong@127.0.0.1:" + locked.port(), // rejects AUTH
              full.uri(), // answers an error
              cluster.uris().get(3),
              cluster.uris().get(4));
      try (RedLock redlock = redlock(uris)) {
        long start = System.nanoTime();
        Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
        long tookMillis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(tookMillis < NODE_TIMEOUT.toMillis() + 900, "bounded: " + tookMillis);
        lease.close();
        eventually("released on the live masters", () -> keysGone(cluster, "job", 0, 1, 2, 3, 4));
        cluster.node(3).kill(); // now 5 of 9 cannot grant
        QuorumUnavailableException e =
            assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("job", TTL));
        String message = e.getMessage();
        assertFalse(message.contains("wrong"), "never shows a password: " + message);
        assertEquals(Status.FAILED, e.outcomes().get(3).status());
        assertEquals(Status.FAILED, e.outcomes().get(5).status());
        assertEquals(Status.FAILED, e.outcomes().get(6).status());
        assertTrue(e.outcomes().get(6).detail().contains("OOM"), e.outcomes().get(6).detail());
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"with spaces", "ünïcödé ключ 鍵 🔒", "line\nbreak", "*", "a\u0000b"})
  void anyResourceNameActsOnExactlyItsOwnKey(String resource, RedisCluster cluster) {
    try (RedLock redlock = redlock(cluster, 3)) {
      cluster.node(0).admin().set("other", "untouched");
      try (Lease lease = redlock.tryAcquire(resource, TTL).orElseThrow()) {
        assertEquals(resource, lease.resource());
        for (int i = 0; i < 3; i++) {
          int node = i;
          List<String> expected =
              i == 0 ? Stream.of("other", resource).sorted().toList() : List.of(resource);
          // The round returns at quorum: a straggler's SET may still be on its way.
          eventually(
              "the lock's only key on node " + i, () -> expected.equals(userKeys(cluster, node)));
        }
      }
      assertEquals("untouched", cluster.node(0).admin().get("other"));
      eventually("released", () -> keysGone(cluster, resource, 0, 1, 2));
    }
  }

  @Test
  void theLongestAllowedResourceNameWorks(RedisCluster cluster) {
    String resource = "k".repeat(RedLock.MAX_RESOURCE_BYTES);
    try (RedLock redlock = redlock(cluster, 3)) {
      redlock.tryAcquire(resource, TTL).orElseThrow().close();
      assertThrows(
          IllegalArgumentException.class, () -> redlock.tryAcquire("k".repeat(1 << 20), TTL));
    }
  }

  @Test
  void closeStopsEveryThreadItStarted(RedisCluster cluster) throws InterruptedException {
    // Only this RedLock's threads: the library's (named "redlock-"), started since it was built.
    // Others in the JVM (an earlier test's RedLock still stopping) are not its own.
    Set<Thread> before = libraryThreads();
    RedLock redlock =
        admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(NODE_TIMEOUT)
                .listener(new RedLockListener() {}) // starts its event thread
                .build());
    Lease lease = redlock.tryAcquire("job", TTL).orElseThrow();
    redlock.withLock("renewed", TTL, Duration.ofSeconds(1), held -> {}); // its renewal thread
    lease.close();
    Set<Thread> started = libraryThreads();
    started.removeAll(before);
    long io = started.stream().filter(t -> t.getName().startsWith("redlock-io-")).count();
    if (!TransportUnderTest.jedis()) {
      assertEquals(1, io, "one selector thread for every plaintext master: " + started);
    } else {
      assertEquals(5, io, "one Jedis I/O thread per master: " + started);
    }
    redlock.close();
    eventually(
        "every thread it started has ended (started: " + started + ")",
        () -> started.stream().noneMatch(Thread::isAlive));
  }

  /** The library's threads alive now: each is named "redlock-" and more. */
  private static Set<Thread> libraryThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("redlock-") && t.isAlive())
        .collect(Collectors.toCollection(HashSet::new));
  }
}
