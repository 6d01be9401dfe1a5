package dev.redlock.shedlock;

import static dev.redlock.shedlock.QuorumContract.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.LongPredicate;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What the contract tests leave open: TTLs counted from createdAt, lockAtLeastFor kept by a quorum
 * shorten, extend never shortening or re-creating, failed masters, and refused settings; on 5 real
 * masters.
 */
class RedLockProviderIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  static final String NAME = "nightly-report";
  static final String KEY = RedLockProvider.DEFAULT_KEY_PREFIX + NAME;

  RedisCluster cluster;
  RedLock redlock;
  RedLockProvider provider;

  @BeforeEach
  void startRedLock(RedisCluster cluster) {
    this.cluster = cluster;
    redlock = redlock(Duration.ofMinutes(5));
    provider = new RedLockProvider(redlock);
  }

  @AfterEach
  void closeRedLock() {
    redlock.close();
  }

  RedLock redlock(Duration maxLeaseTime) {
    RedLock built =
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(NODE_TIMEOUT)
            .maxLeaseTime(maxLeaseTime)
            .build();
    built.admitFreshNodes();
    return built;
  }

  static LockConfiguration config(Instant createdAt, Duration atMost, Duration atLeast) {
    return new LockConfiguration(createdAt, NAME, atMost, atLeast);
  }

  static LockConfiguration config(Duration atMost, Duration atLeast) {
    return config(ClockProvider.now(), atMost, atLeast);
  }

  /**
   * Waits until a majority of masters has the key with a PTTL that satisfies {@code ttl}: what a
   * quorum operation guarantees (a master that missed the round, on a loaded machine, may not).
   */
  void aMajorityHolds(String what, LongPredicate ttl) {
    int n = cluster.nodes().size();
    eventually(
        what + " on a majority of " + n,
        () -> {
          int holding = 0;
          for (int i = 0; i < n; i++) {
            if (ttl.test(cluster.node(i).admin().pttl(KEY))) {
              holding++;
            }
          }
          return holding > n / 2;
        });
  }

  int holders() {
    int holders = 0;
    for (int i = 0; i < cluster.nodes().size(); i++) {
      if (cluster.node(i).admin().exists(KEY)) {
        holders++;
      }
    }
    return holders;
  }

  @Test
  void lockEndsTheLockAtLockAtMostUntilCountedFromCreatedAt() {
    Instant createdAt = ClockProvider.now().minusSeconds(2);
    SimpleLock lock =
        provider.lock(config(createdAt, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();

    // 10 s from a createdAt 2 s ago: about 8 s left, not 10.
    aMajorityHolds("a TTL of about 8 s", pttl -> pttl > 7_000 && pttl <= 8_000);
    lock.unlock();
    // A release returns once a majority answered; the others follow.
    QuorumContract.eventually("no master holds the lock", () -> holders() == 0);
  }

  @Test
  void unlockBeforeLockAtLeastUntilKeepsTheLockUntilThenOnEveryMaster() {
    SimpleLock lock =
        provider.lock(config(Duration.ofMinutes(1), Duration.ofSeconds(5))).orElseThrow();
    aMajorityHolds("the lock", pttl -> pttl > 50_000);

    lock.unlock();

    // Shortened from about a minute to what is left of the 5 s, on every master (release-type
    // rounds wait for every master's answer).
    aMajorityHolds("a TTL of at most 5 s", pttl -> pttl > 4_000 && pttl <= 5_000);
    assertEquals(Optional.empty(), provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)));
  }

  @Test
  void unlockAfterLockAtLeastUntilReleasesTheLockOnEveryMaster() {
    Instant createdAt = ClockProvider.now().minusSeconds(3);
    SimpleLock lock =
        provider
            .lock(config(createdAt, Duration.ofMinutes(1), Duration.ofSeconds(2)))
            .orElseThrow();

    lock.unlock();

    // A release returns once a majority answered; the others follow.
    QuorumContract.eventually("no master holds the lock", () -> holders() == 0);
    provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)).orElseThrow().unlock();
  }

  @Test
  void unlockLeavesALockTakenOverByAnotherHolderAlone() {
    SimpleLock lock =
        provider.lock(config(Duration.ofMinutes(1), Duration.ofSeconds(5))).orElseThrow();
    // Our lock expired and another holder took it on every master, for 30 s.
    for (int i = 0; i < cluster.nodes().size(); i++) {
      cluster.node(i).admin().command("SET", KEY, "someone-else", "PX", "30000");
    }

    lock.unlock(); // a shorten to 5 s, compared with our token

    for (int i = 0; i < cluster.nodes().size(); i++) {
      assertEquals("someone-else", cluster.node(i).admin().get(KEY), "master " + i);
      assertTrue(cluster.node(i).admin().pttl(KEY) > 25_000, "not shortened on master " + i);
    }
  }

  @Test
  void extendMovesTheLockToTheNewLockAtMostUntil() {
    SimpleLock lock = provider.lock(config(Duration.ofSeconds(5), Duration.ZERO)).orElseThrow();

    SimpleLock extended = lock.extend(Duration.ofMinutes(2), Duration.ZERO).orElseThrow();

    aMajorityHolds("a TTL of about 2 min", pttl -> pttl > 110_000 && pttl <= 120_000);
    extended.unlock();
    // A release returns once a majority answered; the others follow.
    QuorumContract.eventually("no master holds the lock", () -> holders() == 0);
  }

  @Test
  void extendNeverShortensTheLock() {
    SimpleLock lock = provider.lock(config(Duration.ofMinutes(2), Duration.ZERO)).orElseThrow();

    SimpleLock extended = lock.extend(Duration.ofSeconds(10), Duration.ofSeconds(5)).orElseThrow();

    aMajorityHolds("the 2 min TTL still", pttl -> pttl > 100_000);
    // The new lockAtLeastFor counts from the extend: unlock shortens to it.
    extended.unlock();
    aMajorityHolds("a TTL of at most 5 s", pttl -> pttl > 4_000 && pttl <= 5_000);
  }

  @Test
  void extendOfALockGoneFromTheMastersIsEmptyAndRecreatesNothing() {
    SimpleLock lock = provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)).orElseThrow();
    for (int i = 0; i < cluster.nodes().size(); i++) {
      cluster.node(i).admin().command("DEL", KEY);
    }

    assertEquals(Optional.empty(), lock.extend(Duration.ofMinutes(2), Duration.ZERO));

    // A release returns once a majority answered; the others follow.
    QuorumContract.eventually("no master holds the lock", () -> holders() == 0);
    assertThrows(IllegalStateException.class, lock::unlock, "ShedLock's rule after an extend");
    provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)).orElseThrow().unlock();
  }

  @Test
  void anExtendNoQuorumConfirmedKeepsTheLockToItsOldExpiry() {
    SimpleLock lock = provider.lock(config(Duration.ofSeconds(20), Duration.ZERO)).orElseThrow();
    aMajorityHolds("the lock", pttl -> pttl > 15_000);
    List<Integer> paused = List.of(0, 1, 2);
    paused.forEach(i -> cluster.node(i).pause());
    try {
      assertEquals(Optional.empty(), lock.extend(Duration.ofMinutes(2), Duration.ZERO));

      // The two running masters extended, and were shortened back to the old lockAtMostUntil.
      for (int i = 3; i < 5; i++) {
        long pttl = cluster.node(i).admin().pttl(KEY);
        assertTrue(pttl > 15_000 && pttl <= 20_000, "master " + i + ": " + pttl);
      }
    } finally {
      paused.forEach(i -> cluster.node(i).resume());
    }
    // The paused masters run both commands in order once resumed: the same end.
    aMajorityHolds("the old expiry", pttl -> pttl > 10_000 && pttl <= 20_000);
    assertEquals(Optional.empty(), provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)));
  }

  @Test
  void lockThrowsLockExceptionWhenAMajorityOfMastersIsDown() {
    for (int i = 0; i < 3; i++) {
      cluster.node(i).kill();
    }

    LockException thrown =
        assertThrows(
            LockException.class, () -> provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)));

    assertInstanceOf(QuorumUnavailableException.class, thrown.getCause());
    assertTrue(thrown.getMessage().contains(NAME), thrown.getMessage());
    for (int i = 3; i < 5; i++) {
      int node = i;
      eventually(
          "the failed lock released on master " + i, () -> !cluster.node(node).admin().exists(KEY));
    }
  }

  @Test
  void lockSucceedsWithAMinorityOfMastersDown() {
    cluster.node(0).kill();
    cluster.node(1).kill();

    SimpleLock lock = provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)).orElseThrow();

    assertEquals(Optional.empty(), provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)));
    lock.unlock();
  }

  @Test
  void aLockAtMostForNotAboveTheNodeTimeoutIsRefusedNamingIt() {
    IllegalArgumentException thrown =
        assertThrows(
            IllegalArgumentException.class,
            () -> provider.lock(config(NODE_TIMEOUT, Duration.ZERO)));

    assertTrue(thrown.getMessage().contains("lockAtMostFor PT0.1S"), thrown.getMessage());
    assertTrue(thrown.getMessage().contains("node timeout"), thrown.getMessage());
    assertEquals(0, holders(), "nothing was sent");
  }

  @Test
  void aLockAtMostForAboveMaxLeaseTimeIsRefusedNamingIt() {
    try (RedLock oneMinute = redlock(Duration.ofMinutes(1))) {
      IllegalArgumentException thrown =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  new RedLockProvider(oneMinute)
                      .lock(config(Duration.ofMinutes(2), Duration.ZERO)));

      assertTrue(thrown.getMessage().contains("lockAtMostFor PT2M"), thrown.getMessage());
      assertTrue(thrown.getMessage().contains("maxLeaseTime"), thrown.getMessage());
    }
  }

  @Test
  void anExtendBeyondMaxLeaseTimeThrowsAndLeavesTheOldLockUsable() {
    SimpleLock lock = provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)).orElseThrow();

    IllegalArgumentException thrown =
        assertThrows(
            IllegalArgumentException.class,
            () -> lock.extend(Duration.ofMinutes(6), Duration.ZERO));

    assertTrue(thrown.getMessage().contains("lockAtMostFor PT6M"), thrown.getMessage());
    lock.unlock();
    // A release returns once a majority answered; the others follow.
    QuorumContract.eventually("no master holds the lock", () -> holders() == 0);
  }

  @Test
  void theKeyPrefixComesBeforeEveryName() {
    new RedLockProvider(redlock, "jobs:")
        .lock(config(Duration.ofMinutes(1), Duration.ZERO))
        .orElseThrow();
    new RedLockProvider(redlock, "")
        .lock(config(Duration.ofMinutes(1), Duration.ZERO))
        .orElseThrow();

    assertTrue(cluster.node(0).admin().exists("jobs:" + NAME));
    assertTrue(cluster.node(0).admin().exists(NAME));
    assertFalse(cluster.node(0).admin().exists(KEY));
  }

  @Test
  void theHappyPathLogsNothingAtWarnOrAbove() {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      for (int i = 0; i < 10; i++) {
        SimpleLock lock = provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)).orElseThrow();
        assertEquals(Optional.empty(), provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)));
        SimpleLock extended =
            lock.extend(Duration.ofMinutes(1), Duration.ofSeconds(30)).orElseThrow();
        extended.unlock(); // kept for lockAtLeastFor
        assertEquals(Optional.empty(), provider.lock(config(Duration.ofMinutes(1), Duration.ZERO)));
        for (int n = 0; n < cluster.nodes().size(); n++) {
          cluster.node(n).admin().command("DEL", KEY);
        }
      }
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertFalse(log.contains("WARN") || log.contains("ERROR"), log);
  }

  /**
   * Failsafe runs these tests twice, with shedlock-core 6.6.1 and with 7.x on the class path, and
   * names the version each run must find; this checks the build really swapped the jar.
   */
  @Test
  void runsOnTheShedLockCoreTheBuildNamed() {
    String expected = System.getProperty("redlock.shedlock.core.version");
    assumeTrue(expected != null, "only failsafe names the expected version");
    String jar = LockProvider.class.getProtectionDomain().getCodeSource().getLocation().getPath();
    assertTrue(jar.endsWith("/shedlock-core-" + expected + ".jar"), jar);
  }
}
