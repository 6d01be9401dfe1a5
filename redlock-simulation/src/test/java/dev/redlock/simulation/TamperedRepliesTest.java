package dev.redlock.simulation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import dev.redlock.SimRedLocks;
import dev.redlock.internal.transport.SimNodeClient;
import dev.redlock.internal.transport.SimNodeClient.Tamper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What the {@link Fault#REPLY_CUT} and {@link Fault#HOSTILE_REPLY} families do, one reply at a
 * time: the master runs the command, the client reads a reply cut, stalled or hostile, the master's
 * vote does not count (the other four grant), and the master votes again once its connection is
 * back. And what {@link Fault#CLIENT_GC} does: a paused client reads nothing until its pause ends.
 */
class TamperedRepliesTest {

  private static final Duration TTL = Duration.ofSeconds(2);

  /** Five simulated masters and one RedLock on them; master 0's next reply tampered on demand. */
  private static final class One {
    final Simulation sim = new Simulation(1);
    final List<SimMaster> masters = new ArrayList<>();
    final List<List<NodeOutcome>> acquired = new ArrayList<>();
    final SimProcess process = new SimProcess();
    final RedLock redlock;
    Tamper next = Tamper.NONE;

    One() {
      this(false);
    }

    /** With {@code unfitFirst}: fitness checks on, and master 0 unfit before the RedLock starts. */
    One(boolean unfitFirst) {
      List<String> nodes = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        MasterClock clock = new MasterClock(sim);
        masters.add(new SimMaster(clock::micros, String.format("%040x", i)));
        nodes.add("redis://master-" + i + ":6379");
      }
      if (unfitFirst) {
        masters.get(0).config("maxmemory", "1073741824");
        masters.get(0).config("maxmemory-policy", "allkeys-lru");
      }
      ClientClock clock = new ClientClock(sim);
      redlock =
          SimRedLocks.build(
              // Without fitness checks no probe is sent: master 0's next reply is its SET's.
              RedLock.builder()
                  .nodes(nodes)
                  .excludeUnfitMasters(unfitFirst)
                  .listener(
                      new RedLockListener() {
                        @Override
                        public void acquired(
                            String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                          acquired.add(outcomes);
                        }
                      }),
              clock,
              i ->
                  new SimNodeClient(
                      sim,
                      masters.get(i),
                      clock,
                      Duration.ofMillis(50).toNanos(),
                      () -> 100_000,
                      () -> 0,
                      process,
                      () -> {
                        if (i != 0) {
                          return Tamper.NONE;
                        }
                        Tamper now = next;
                        next = Tamper.NONE;
                        return now;
                      }),
              new SimLoop(sim, clock, process),
              SimLoop.timing(sim, clock, process));
      redlock.admitFreshNodes();
    }

    /** Acquires {@code name} and returns master 0's outcome; the lease must be granted. */
    NodeOutcome firstMastersVote(String name) {
      Optional<Lease> lease = redlock.tryAcquire(name, TTL);
      assertTrue(lease.isPresent(), name + ": " + acquired.get(acquired.size() - 1));
      return acquired.get(acquired.size() - 1).get(0);
    }
  }

  @ParameterizedTest
  @EnumSource(
      value = Tamper.class,
      names = {"CUT", "STALL", "ERROR", "WRONG_TYPE", "GARBAGE", "OVERSIZE"})
  void aTamperedReplyIsNoVoteAndTheMasterVotesAgainOnceReconnected(Tamper tamper) {
    One one = new One();
    assertEquals(NodeOutcome.Status.GRANTED, one.firstMastersVote("before").status());

    one.next = tamper;
    NodeOutcome tampered = one.firstMastersVote("tampered");
    assertNotEquals(NodeOutcome.Status.GRANTED, tampered.status(), tampered.toString());
    assertTrue(
        one.masters.get(0).keyNames().contains("tampered"),
        "the master ran the SET; only its answer was lost: " + one.masters.get(0).keyNames());

    // The connection comes back (a protocol error's back-off, a stall past its limit, a reset).
    String granted = null;
    for (int attempt = 0; attempt < 20 && granted == null; attempt++) {
      one.sim.runFor(Duration.ofMillis(500).toNanos());
      NodeOutcome vote = one.firstMastersVote("after-" + attempt);
      if (vote.status() == NodeOutcome.Status.GRANTED) {
        granted = "after-" + attempt;
      }
    }
    assertTrue(granted != null, tamper + ": master 0 never voted again");
  }

  /**
   * A RedLock waits for its masters' first fitness verdicts before its first round as its blocked
   * callers pause: on virtual time, by running the simulation's events (the verdicts' replies).
   * Blocked on the verdict instead, it would run none and wait for ever (or, with a bound in real
   * time, start without the verdict and count the unfit master's first vote).
   */
  @Test
  void theFirstRoundAlreadyLeavesOutAMasterUnfitFromTheStart() {
    // Bounded: blocked on the verdict, the build never sees its virtual deadline come.
    One one = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> new One(true));
    NodeOutcome vote = one.firstMastersVote("first");
    assertNotEquals(NodeOutcome.Status.GRANTED, vote.status(), vote.toString());
    assertTrue(vote.detail().startsWith("unfit for Redlock"), vote.toString());
  }

  @Test
  void aPausedClientReadsNothingUntilItsPauseEnds() {
    One one = new One();
    one.firstMastersVote("warm");
    long pause = Duration.ofMillis(800).toNanos();
    long from = one.sim.now();
    one.process.pauseUntil(from + pause);
    CompletableFuture<Lease> lease = one.redlock.acquireAsync("paused", TTL, Duration.ofSeconds(5));
    one.sim.runUntil(lease::isDone, from + Duration.ofSeconds(5).toNanos());
    // The masters answered at once; the client read their replies only at the pause's end, and
    // counted the pause against what it was granted, as every elapsed nanosecond.
    assertTrue(lease.isDone() && !lease.isCompletedExceptionally(), lease.toString());
    assertTrue(one.sim.now() >= from + pause, "read during the pause: " + one.sim.now());
    Duration left = lease.join().remainingValidity();
    assertTrue(left.compareTo(TTL.minusNanos(pause)) <= 0, "the pause not counted: " + left);
  }
}
