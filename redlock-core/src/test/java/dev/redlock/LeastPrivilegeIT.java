package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Inspection.Verdict;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The minimal ACL of docs/acl.md, on three real masters: with it, acquire, extend, renewal,
 * fencing, release, admission and the preflight all work and nothing is logged at WARN; without
 * each permission, what the page says it costs. Each test sets the user up on every master before
 * the RedLock connects (the handshake reads INFO once per connection).
 */
class LeastPrivilegeIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final Duration TTL = Duration.ofSeconds(10);

  /** docs/acl.md's minimal user, word for word. */
  static final String MINIMAL_ACL =
      "ACL SETUSER redlock reset on >s3cret ~* resetchannels &redlock:wake:* -@all"
          + " +set +get +del +mget +time +pexpire +pttl"
          + " +evalsha +eval +script|load +info +config|get +publish +subscribe +unsubscribe"
          + " +zadd +zrange +zrangebyscore +zrem +pubsub|numsub";

  /** Creates the minimal user on every master, then takes away {@code denied} (e.g. -evalsha). */
  private static List<String> minimalUser(RedisCluster cluster, String... denied) {
    List<String> uris = new ArrayList<>();
    for (String rule : denied) {
      if (rule.startsWith("-") && rule.contains("|")) {
        cluster
            .node(0)
            .admin()
            .assumeAtLeast(7, "an ACL rule that takes away a subcommand (" + rule + ")");
      }
    }
    for (RedisProcess node : cluster.nodes()) {
      node.admin().command(MINIMAL_ACL.split(" "));
      if (denied.length > 0) {
        List<String> less = new ArrayList<>(List.of("ACL", "SETUSER", "redlock"));
        less.addAll(List.of(denied));
        node.admin().command(less.toArray(String[]::new));
      }
      uris.add("redis://redlock:s3cret@" + node.host() + ":" + node.port());
    }
    return uris;
  }

  private static RedLock redlock(List<String> uris) {
    return RedLock.builder()
        .nodes(uris)
        .nodeTimeout(Duration.ofMillis(200))
        .maxLeaseTime(Duration.ofSeconds(30))
        .fencing(true)
        .build();
  }

  @Test
  void theMinimalAclDoesEverythingAndLogsNothingAtWarn(RedisCluster cluster) throws Exception {
    List<String> uris = minimalUser(cluster);
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try (RedLock redlock = redlock(uris)) {
      for (NodeOutcome admitted : redlock.admitFreshNodes()) {
        assertEquals(Status.GRANTED, admitted.status(), admitted.toString());
      }
      Inspection inspection = redlock.inspect().requireQuorum();
      for (Inspection.Master master : inspection.masters()) {
        assertTrue(master.votes(), inspection.toString());
        for (Inspection.Check check : master.checks()) {
          assertNotEquals(Verdict.UNKNOWN, check.verdict(), inspection.toString());
        }
      }

      try (Lease lease = redlock.acquire("orders:42", TTL, Duration.ofSeconds(1))) {
        long fence = lease.fencingToken();
        assertTrue(fence > 0);
        assertTrue(lease.extend(TTL));
      }
      RedLocks.eventually("released", () -> RedLocks.keysGone(cluster, "orders:42", 0, 1, 2));

      // A renewal is sent with a third of the TTL left: that third holds three tries (each a node
      // timeout, 200 ms, and the longest retry pause, 75 ms), so a loaded machine does not lose
      // the lease (600 ms left the renewal 200 ms, and lost it once under load).
      Duration shortTtl =
          Duration.ofMillis(200)
              .plus(RedLock.DEFAULT_RETRY_DELAY.multipliedBy(3).dividedBy(2))
              .multipliedBy(3)
              .multipliedBy(3);
      redlock.withLock(
          "renewed",
          shortTtl,
          Duration.ofSeconds(1),
          lease -> {
            long start = System.nanoTime();
            Poll.until(
                "held past two TTLs by renewals",
                () -> System.nanoTime() - start > 2 * shortTtl.toNanos());
            assertTrue(lease.isValid(), "renewed");
          });

      // Wake-ups: a waiter of another RedLock is woken by the release, long before its timer.
      CountDownLatch denied = new CountDownLatch(2);
      try (RedLock waiter = slowTimer(uris, denied)) {
        assertWokenBeforeTheTimer(wokenAfterNanos(redlock, waiter, denied, cluster));
      }
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertFalse(log.contains("WARN") || log.contains("ERROR"), log);
  }

  /**
   * A retry delay whose least pause (half of it, 2 s) separates a waiter woken by a notice from one
   * that polled: no round of the timer comes before that much time has passed since the wait began,
   * and a notice comes within a round or two of the release.
   */
  private static final Duration SLOW_TIMER = Duration.ofSeconds(4);

  /** A waiter granted before its timer's least pause had passed since its wait began: woken. */
  private static void assertWokenBeforeTheTimer(long tookNanos) {
    assertTrue(
        tookNanos < SLOW_TIMER.toNanos() / 2,
        "granted "
            + tookNanos / 1_000_000
            + " ms after its wait began: not before its timer's least pause");
  }

  /** A RedLock with a slow retry timer; {@code denied} counts its rounds refused. */
  private static RedLock slowTimer(List<String> uris, CountDownLatch denied) {
    return RedLock.builder()
        .nodes(uris)
        .nodeTimeout(Duration.ofMillis(200))
        .maxLeaseTime(Duration.ofSeconds(30))
        .retryDelay(SLOW_TIMER)
        .listener(
            new RedLockListener() {
              @Override
              public void denied(
                  String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
                denied.countDown();
              }
            })
        .build();
  }

  /**
   * Has {@code holder} take "handed", {@code waiter} wait for it (polling each master until the
   * wait's subscription, if any, is there), then releases it; returns how long after its wait began
   * (before its first round) the waiter held it.
   */
  private static long wokenAfterNanos(
      RedLock holder, RedLock waiter, CountDownLatch denied, RedisCluster cluster)
      throws Exception {
    Lease held = holder.tryAcquire("handed", TTL).orElseThrow();
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try {
      long began = System.nanoTime();
      Future<Lease> waiting =
          thread.submit(() -> waiter.acquire("handed", TTL, Duration.ofSeconds(30)));
      // Its first round (every master at once), then the round that queues it at the gate, sent
      // at once: released before that one, the lock would go to it without any wake-up.
      assertTrue(denied.await(10, TimeUnit.SECONDS), "the waiter's first two rounds were refused");
      Poll.until("the waiter subscribed, or was refused", () -> subscribedOrRefused(cluster));
      held.close();
      Lease got = waiting.get(30, TimeUnit.SECONDS);
      long granted = System.nanoTime();
      got.close();
      return granted - began;
    } finally {
      thread.shutdownNow();
    }
  }

  /**
   * Whether the masters whose notices the waiter hears (its resource's gate and the next master by
   * name: two) have its subscription, or the ACL left it none to have.
   */
  private static boolean subscribedOrRefused(RedisCluster cluster) {
    int subscribed = 0;
    for (RedisProcess node : cluster.nodes()) {
      List<?> answer = (List<?>) node.admin().command("PUBSUB", "NUMSUB", "redlock:wake:handed");
      if ((Long) answer.get(1) == 1) {
        subscribed++;
      }
    }
    if (subscribed >= 2) {
      return true;
    }
    List<?> users = (List<?>) cluster.node(0).admin().command("ACL", "GETUSER", "redlock");
    return !String.valueOf(users).contains("redlock:wake"); // refused: none to wait for
  }

  /** How long after its wait began the waiter of a hand-off held the lock, and what was logged. */
  private record HandOff(long tookNanos, String log) {}

  /**
   * Runs {@link #wokenAfterNanos} between a holder and a slow-timer waiter of {@code uris}, with
   * the log captured until {@code logged} holds for it.
   */
  private static HandOff handOff(
      RedisCluster cluster, List<String> uris, java.util.function.Predicate<String> logged)
      throws Exception {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    long took;
    CountDownLatch denied = new CountDownLatch(2);
    try (RedLock holder = redlock(uris);
        RedLock waiter = slowTimer(uris, denied)) {
      holder.admitFreshNodes();
      took = wokenAfterNanos(holder, waiter, denied, cluster);
      // Released on every master: the release returns at a majority, the others follow.
      RedLocks.eventually("released", () -> RedLocks.keysGone(cluster, "handed", 0, 1, 2));
      RedLocks.eventually("the log", () -> logged.test(captured.toString(StandardCharsets.UTF_8)));
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    System.err.print(log);
    return new HandOff(took, log);
  }

  @Test
  void withoutPubSubReleasesStillWorkAndWaitersPoll(RedisCluster cluster) throws Exception {
    HandOff handOff =
        handOff(
            cluster,
            minimalUser(cluster, "resetchannels", "-publish", "-subscribe"),
            log -> log.contains("refused the wake-up channels"));
    String log = handOff.log();
    // Woken by its timer, not by a notice: no round of the timer runs before its least pause (half
    // the retry delay) has passed since the wait began.
    long took = handOff.tookNanos();
    assertTrue(
        took >= SLOW_TIMER.toNanos() / 2,
        "granted " + took / 1_000_000 + " ms after its wait began: before its timer's least pause");
    assertTrue(log.contains("docs/acl.md lists the permissions wake-ups need"), log);
    // The denied PUBLISH fails nothing: the one warning is the subscriber's refusal.
    for (String line : log.split("\n")) {
      assertTrue(
          !(line.contains("WARN") || line.contains("ERROR"))
              || line.contains("refused the wake-up channels"),
          log);
    }
  }

  @Test
  void withoutTheQueueCommandsWaitersStillGetTheLockWokenByTheRelease(RedisCluster cluster)
      throws Exception {
    HandOff handOff =
        handOff(
            cluster,
            minimalUser(cluster, "-zadd", "-zrange", "-zrangebyscore", "-zrem"),
            log -> true);
    // Not queued (queue.lua calls the sorted-set commands by pcall), but woken by the release.
    assertWokenBeforeTheTimer(handOff.tookNanos());
    assertFalse(handOff.log().contains("WARN") || handOff.log().contains("ERROR"), handOff.log());
  }

  @Test
  void withoutPubSubNumsubWaitersAreStillWokenByTheRelease(RedisCluster cluster) throws Exception {
    HandOff handOff = handOff(cluster, minimalUser(cluster, "-pubsub|numsub"), log -> true);
    // The release after the gate asks by pcall whether clients wait there: refused, it counts as
    // yes, which costs at most a check; the gate still names the waiter.
    assertWokenBeforeTheTimer(handOff.tookNanos());
    assertFalse(handOff.log().contains("WARN") || handOff.log().contains("ERROR"), handOff.log());
  }

  @Test
  void withoutSetNoLeaseIsAcquired(RedisCluster cluster) {
    try (RedLock redlock = redlock(minimalUser(cluster, "-set"))) {
      redlock.admitFreshNodes();
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", TTL));
      // Decided once a majority could no longer grant: two or three masters answered.
      assertTrue(
          e.getMessage().matches("(?s).*permission denied on [23] masters.*"), e.getMessage());
      assertTrue(e.getMessage().contains("set: no lease can be acquired"), e.getMessage());
    }
  }

  @Test
  void withoutEvalshaNothingIsReleasedExtendedFencedOrAdmitted(RedisCluster cluster) {
    try (RedLock admin = RedLocks.redlock(cluster, 3)) {
      admin.admitFreshNodes(); // the admission is the master's: another user may admit it
    }
    try (RedLock redlock = redlock(minimalUser(cluster, "-evalsha"))) {
      for (NodeOutcome refused : redlock.admitFreshNodes()) {
        assertEquals(Status.FAILED, refused.status(), refused.toString());
        assertTrue(refused.detail().contains("evalsha"), refused.detail());
      }
      Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
      assertFalse(lease.extend(TTL), "extended");
      QuorumUnavailableException fence =
          assertThrows(QuorumUnavailableException.class, lease::fencingToken);
      assertTrue(fence.getMessage().contains("permission denied"), fence.getMessage());
      lease.close(); // does not throw; the keys expire with their TTL
      assertFalse(RedLocks.keysGone(cluster, "r", 0, 1, 2), "released without EVALSHA");
    }
  }

  @Test
  void withoutEvalshaARenewedLeaseIsLostAndTheWarningNamesTheDeniedCommand(RedisCluster cluster)
      throws Exception {
    try (RedLock admin = RedLocks.redlock(cluster, 3)) {
      admin.admitFreshNodes();
    }
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try (RedLock redlock = redlock(minimalUser(cluster, "-evalsha"))) {
      redlock.withLock(
          "renewed",
          Duration.ofMillis(600),
          Duration.ofSeconds(1),
          lease -> {
            // isValid() turns false at the deadline; the renewer logs the loss just after it.
            Poll.until(
                "lost: no renewal got through",
                () ->
                    captured.toString(StandardCharsets.UTF_8).contains("lease on 'renewed' lost"));
            assertFalse(lease.isValid());
          });
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertTrue(
        log.matches(
            // Either the lease ran out between two renewals or during one (a race of the
            // renewer's retry with the deadline): each says why the renewals failed.
            "(?s).*WARN .*lease on 'renewed' lost: it expired (before it could be renewed; the"
                + " last renewal|during the extend; the extend) reached no quorum .*permission"
                + " denied on .*evalsha.*"),
        log);
  }

  @Test
  void withoutGetTheScriptsFailInside(RedisCluster cluster) {
    try (RedLock admin = RedLocks.redlock(cluster, 3)) {
      admin.admitFreshNodes();
    }
    try (RedLock redlock = redlock(minimalUser(cluster, "-get"))) {
      Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
      assertFalse(lease.extend(TTL), "extended");
      lease.close();
      assertFalse(RedLocks.keysGone(cluster, "r", 0, 1, 2), "released without GET");
    }
  }

  @Test
  void withoutInfoTheRestartGuardNeverCountsAVote(RedisCluster cluster) {
    try (RedLock redlock = redlock(minimalUser(cluster, "-info"))) {
      for (NodeOutcome refused : redlock.admitFreshNodes()) {
        assertEquals(Status.FAILED, refused.status(), refused.toString());
      }
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", TTL));
      assertTrue(e.getMessage().contains("info: the restart guard cannot see"), e.getMessage());
      Inspection inspection = redlock.inspect();
      assertThrows(IllegalStateException.class, inspection::requireQuorum);
    }
    try (RedLock unguarded =
        RedLock.builder()
            .nodes(minimalUser(cluster, "-info"))
            .nodeTimeout(Duration.ofMillis(200))
            .restartGuard(false)
            .build()) {
      assertTrue(
          unguarded.tryAcquire("r", TTL).isPresent(), "without the guard INFO is not needed");
    }
  }

  @Test
  void withoutConfigGetOrScriptLoadEverythingStillWorks(RedisCluster cluster) throws Exception {
    try (RedLock admin = RedLocks.redlock(cluster, 3)) {
      admin.admitFreshNodes();
    }
    try (RedLock redlock = redlock(minimalUser(cluster, "-config|get", "-script|load"))) {
      try (Lease lease = redlock.acquire("r", TTL, Duration.ofSeconds(1))) {
        assertTrue(lease.fencingToken() > 0);
        assertTrue(lease.extend(TTL));
      }
      RedLocks.eventually("released by EVAL", () -> RedLocks.keysGone(cluster, "r", 0, 1, 2));
      Inspection inspection = redlock.inspect();
      for (Inspection.Master master : inspection.masters()) {
        assertTrue(master.votes(), inspection.toString());
      }
      assertTrue(inspection.toString().contains("UNKNOWN persistence"), inspection.toString());
    }
  }

  @Test
  void withoutEvalOnlyTheCommandsThatMeetNoscriptFail(RedisCluster cluster) throws Exception {
    try (RedLock admin = RedLocks.redlock(cluster, 3)) {
      admin.admitFreshNodes();
    }
    try (RedLock redlock = redlock(minimalUser(cluster, "-eval"))) {
      Lease lease = redlock.acquire("r", TTL, Duration.ofSeconds(1));
      assertTrue(lease.extend(TTL), "extended before the flush");
      cluster.nodes().forEach(node -> node.admin().scriptFlush());
      // The extend that meets NOSCRIPT is sent again whole, by EVAL: denied. The script is loaded
      // again meanwhile (SCRIPT LOAD), so what follows runs by EVALSHA.
      assertFalse(lease.extend(TTL), "the extend that met NOSCRIPT");
      assertTrue(lease.extend(TTL), "the next extend, once the script is loaded again");
      assertTrue(lease.fencingToken() > 0);
      lease.close();
      RedLocks.eventually("released by EVALSHA", () -> RedLocks.keysGone(cluster, "r", 0, 1, 2));
    }
  }

  @Test
  void withoutEvalOrScriptLoadTheScriptsFailOnceAMasterLostThem(RedisCluster cluster)
      throws Exception {
    try (RedLock admin = RedLocks.redlock(cluster, 3)) {
      admin.admitFreshNodes();
    }
    try (RedLock redlock = redlock(minimalUser(cluster, "-eval", "-script|load"))) {
      Lease lease = redlock.acquire("r", TTL, Duration.ofSeconds(1));
      cluster.nodes().forEach(node -> node.admin().scriptFlush());
      assertFalse(lease.extend(TTL), "extended with no way to run the script");
      lease.close(); // does not throw; the keys expire with their TTL
      assertFalse(RedLocks.keysGone(cluster, "r", 0, 1, 2), "released with no way to run it");
    }
  }

  @Test
  void withoutSelectADatabaseOtherThanZeroIsRefusedAtTheHandshake(RedisCluster cluster) {
    List<String> uris = new ArrayList<>();
    for (String uri : minimalUser(cluster)) {
      uris.add(uri + "/2");
    }
    try (RedLock redlock = redlock(uris)) {
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", TTL));
      assertTrue(e.getMessage().contains("permission denied"), e.getMessage());
      assertTrue(e.getMessage().contains("select"), e.getMessage());
    }
    cluster.nodes().forEach(node -> node.admin().command("ACL", "SETUSER", "redlock", "+select"));
    try (RedLock redlock = redlock(uris)) {
      redlock.admitFreshNodes();
      assertTrue(redlock.tryAcquire("r", TTL).isPresent(), "granted in database 2 with +select");
    }
  }

  @Test
  void aKeyPatternMustCoverTheLibrarysKeysAndTheResources(RedisCluster cluster) throws Exception {
    List<String> uris = minimalUser(cluster, "resetkeys", "~redlock:*", "~orders:*");
    try (RedLock redlock = redlock(uris)) {
      redlock.admitFreshNodes();
      try (Lease lease = redlock.acquire("orders:1", TTL, Duration.ofSeconds(1))) {
        assertTrue(lease.fencingToken() > 0);
        assertTrue(lease.extend(TTL));
      }
      RedLocks.eventually("released", () -> RedLocks.keysGone(cluster, "orders:1", 0, 1, 2));
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("users:1", TTL));
      assertTrue(e.getMessage().contains("permission denied"), e.getMessage());
    }
    List<String> narrower = minimalUser(cluster, "resetkeys", "~orders:*");
    try (RedLock redlock = redlock(narrower)) {
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("orders:2", TTL));
      assertTrue(e.getMessage().contains("permission denied"), e.getMessage());
    }
  }
}
