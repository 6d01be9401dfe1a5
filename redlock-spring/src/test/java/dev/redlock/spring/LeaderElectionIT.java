package dev.redlock.spring;

import static dev.redlock.spring.LeadershipHistory.millis;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.faultproxy.FaultProxyServer;
import dev.redlock.spring.LeadershipHistory.Event;
import dev.redlock.spring.LeadershipHistory.Violation;
import dev.redlock.spring.LeadershipHistory.Window;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.ToxiproxyClient;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.integration.leader.Candidate;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.event.LeaderEventPublisher;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

/**
 * Spring's own {@link LockRegistryLeaderInitiator} on {@link RedLockRegistry}: three candidates,
 * each with its own RedLock (as three processes would have) reaching the five masters through its
 * own fault proxies. The leader is cut off from all its masters, then healed, several times; no two
 * leadership windows may overlap, and leadership must move within the TTL plus a third of it (the
 * share the renewer keeps in reserve) after the cut.
 *
 * <p>Lines starting {@value #TAG} are the figures the README quotes.
 */
class LeaderElectionIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  static final String TAG = "LEADER";

  private static final int CANDIDATES = 3;
  private static final int CYCLES = 5;
  // The safety margin (a fifth: 600 ms) covers a heartbeat, an unlock round that waits out the
  // node timeout (a black hole), and 400 ms of scheduling delay on a loaded machine.
  private static final Duration TTL = Duration.ofSeconds(3);
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  private static final long HEARTBEAT_MILLIS = 100;
  private static final long BUSY_WAIT_MILLIS = 50;
  private static final String ROLE = "leader-election-it";
  private static final long HANDOVER_BOUND_NANOS = TTL.plus(TTL.dividedBy(3)).toNanos();

  /** Two ways to cut a candidate off, alternating between cycles. */
  private enum Cut {
    /** Proxies disabled: connections closed, reconnects refused. */
    PROXY_DISABLED,
    /** A timeout toxic both ways: connections stay open, every byte is dropped. */
    BLACK_HOLE
  }

  /**
   * One handover: the leader cut off (at {@code cutAt}, healed at {@code healAt}, both readings of
   * {@link System#nanoTime()}), its revocation and the next grant (after the cut).
   */
  private record Handover(
      int cycle,
      Cut cut,
      String from,
      String to,
      long revokedNanos,
      long grantedNanos,
      long cutAt,
      long healAt) {
    /** The grant that ended this handover, on the shared clock. */
    long grantedAt() {
      return cutAt + grantedNanos;
    }
  }

  /** One candidate: its own RedLock, registry, initiator and proxies. */
  private record Member(
      String id,
      RedLock redlock,
      LockRegistryLeaderInitiator initiator,
      List<Proxy> proxies,
      AtomicLong failedAttempts) {}

  @Test
  void leadershipMovesWhenTheLeaderIsCutOffAndNoTwoLeadersEverOverlap(RedisCluster cluster)
      throws Exception {
    long seed = Long.getLong("redlock.spring.seed", System.nanoTime());
    Random random = new Random(seed);
    LeadershipHistory history = new LeadershipHistory();
    List<Member> members = new ArrayList<>();
    List<Handover> handovers = new ArrayList<>();
    long started = System.nanoTime();
    long stoppingAt = Long.MAX_VALUE; // when the shutdown began
    try (FaultProxyServer faults = FaultProxyServer.start()) {
      ToxiproxyClient toxiproxy = new ToxiproxyClient(faults.host(), faults.apiPort());
      try {
        for (int c = 0; c < CANDIDATES; c++) {
          members.add(member("c" + c, cluster, toxiproxy, history));
        }
        Masters.admitted(members.get(0).redlock());
        members.forEach(member -> member.initiator().start());

        for (int attempt = 0; handovers.size() < CYCLES && attempt < 2 * CYCLES; attempt++) {
          int cycle = handovers.size() + 1;
          String leader =
              history
                  .awaitLeader(TimeUnit.SECONDS.toNanos(10))
                  .orElseThrow(() -> new AssertionError("no leader: " + history.events()));
          // A fault schedule: lead for a while, so that the cut falls anywhere between renewals.
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200 + random.nextInt(800)));
          if (!history.leader().equals(Optional.of(leader))) {
            continue; // leadership moved without a fault: the grant fails the test below
          }
          Cut cut = cycle % 2 == 1 ? Cut.PROXY_DISABLED : Cut.BLACK_HOLE;
          Member cutOff = find(members, leader);
          long cutAt = System.nanoTime();
          cutOff(cutOff, cut);

          // The first grant after the cut, to whichever candidate: the cut-off leader must not
          // be it, since it can reach none of the masters.
          Event next =
              history
                  .awaitNextGrant(cutAt, 3 * TTL.toNanos())
                  .orElseThrow(
                      () -> new AssertionError("leadership did not move: " + history.events()));
          assertNotEquals(
              leader,
              next.candidate(),
              () ->
                  "cycle "
                      + cycle
                      + ": the cut-off leader "
                      + leader
                      + " was the next leader granted: "
                      + history.events());
          Event revoked =
              history
                  .awaitRevoked(leader, TimeUnit.SECONDS.toNanos(5))
                  .orElseThrow(() -> new AssertionError(cutOff.id() + " never revoked"));
          toxiproxy.reset(); // heals: every proxy enabled, every toxic removed
          handovers.add(
              new Handover(
                  cycle,
                  cut,
                  leader,
                  next.candidate(),
                  revoked.nanos() - cutAt,
                  next.nanos() - cutAt,
                  cutAt,
                  System.nanoTime()));
        }
      } finally {
        stoppingAt = System.nanoTime();
        // The followers first, then the leader: a leader stopped first releases the lock, and a
        // follower still running takes it at once (woken by the release) and is told it leads
        // before the stopped leader is told it no longer does, which the windows count as an
        // overlap although the release came first (seen once in CI: "c1 was granted while c0 led
        // until 0.2 ms later", the last window opening at the shutdown).
        Optional<String> leading = history.leader();
        members.stream()
            .filter(member -> !leading.equals(Optional.of(member.id())))
            .forEach(member -> member.initiator().stop());
        members.stream()
            .filter(member -> leading.equals(Optional.of(member.id())))
            .forEach(member -> member.initiator().stop());
        for (Member member : members) {
          history.awaitRevoked(member.id(), TimeUnit.SECONDS.toNanos(5));
        }
        members.forEach(member -> member.redlock().close());
      }
    }

    List<Violation> violations = history.violations();
    List<Event> grants =
        history.events().stream().filter(e -> e.kind() == LeadershipHistory.Kind.GRANTED).toList();
    List<String> unfaulted = movesWithoutAFault(grants, handovers, stoppingAt);
    print(seed, started, history.windows(), violations, handovers, members, unfaulted);
    List<Event> toACutOffLeader = new ArrayList<>();
    for (Handover handover : handovers) {
      // Every grant while the leader was cut off, not only the first: it can reach no master.
      grants.stream()
          .filter(e -> e.candidate().equals(handover.from()))
          .filter(e -> e.nanos() - handover.cutAt() >= 0 && e.nanos() - handover.healAt() <= 0)
          .forEach(toACutOffLeader::add);
    }
    assertAll(
        () -> assertEquals(List.of(), violations, "overlapping leaderships"),
        () ->
            assertEquals(
                List.of(), toACutOffLeader, "grants to a cut-off leader while it was cut off"),
        // A healthy leader keeps its leadership: its renewals start with a third of the TTL left
        // and may fail for 400 ms (down to the 600 ms margin) before it is lost. Only the first
        // grant and the grant after each cut may move it.
        () -> assertEquals(List.of(), unfaulted, "leadership moved without a fault"));
    assertEquals(CYCLES, handovers.size());
    for (Handover handover : handovers) {
      assertTrue(
          handover.grantedNanos() <= HANDOVER_BOUND_NANOS,
          () ->
              "cycle "
                  + handover.cycle()
                  + ": leadership moved "
                  + millis(handover.grantedNanos())
                  + " ms after the cut, more than the TTL plus a third ("
                  + millis(HANDOVER_BOUND_NANOS)
                  + " ms)");
    }
  }

  /**
   * The grants before the shutdown that neither began the run's first leadership nor ended a
   * handover, each as {@code candidate at N ms}: leadership that moved without a fault. The
   * shutdown moves it: a follower's {@code stop()} does not wait for its thread, and one inside
   * {@code tryLock} when the leader, stopped next, released took the lock 2 ms later (CI once, at
   * {@code 9069b21}: "c2 at 15790 ms", the last window opening at the shutdown).
   */
  private static List<String> movesWithoutAFault(
      List<Event> grants, List<Handover> handovers, long stoppingAt) {
    List<String> moves = new ArrayList<>();
    for (int i = 1; i < grants.size(); i++) {
      Event grant = grants.get(i);
      if (grant.nanos() - stoppingAt >= 0) {
        break; // the shutdown's
      }
      boolean afterACut = handovers.stream().anyMatch(h -> h.grantedAt() == grant.nanos());
      if (!afterACut) {
        moves.add(
            grant.candidate() + " at " + millis(grant.nanos() - grants.get(0).nanos()) + " ms");
      }
    }
    return moves;
  }

  private static Member member(
      String id, RedisCluster cluster, ToxiproxyClient toxiproxy, LeadershipHistory history)
      throws IOException {
    List<Proxy> proxies = new ArrayList<>();
    List<String> uris = new ArrayList<>();
    for (int i = 0; i < cluster.nodes().size(); i++) {
      RedisProcess node = cluster.node(i);
      Proxy proxy =
          toxiproxy.createProxy(id + "-redis" + i, "127.0.0.1:0", node.host() + ":" + node.port());
      proxies.add(proxy);
      uris.add("redis://" + proxy.getListen());
    }
    RedLock redlock = RedLock.builder().nodes(uris).nodeTimeout(NODE_TIMEOUT).build();
    RedLockRegistry registry = RedLockRegistry.builder(redlock).ttl(TTL).build();
    LockRegistryLeaderInitiator initiator =
        new LockRegistryLeaderInitiator(registry, new RecordingCandidate(id, history));
    initiator.setHeartBeatMillis(HEARTBEAT_MILLIS);
    initiator.setBusyWaitMillis(BUSY_WAIT_MILLIS);
    // Each heartbeat without the lock is a failed attempt: proof that a candidate keeps competing.
    AtomicLong failedAttempts = new AtomicLong();
    initiator.setPublishFailedEvents(true);
    initiator.setLeaderEventPublisher(
        new LeaderEventPublisher() {
          @Override
          public void publishOnGranted(Object source, Context context, String role) {}

          @Override
          public void publishOnRevoked(Object source, Context context, String role) {}

          @Override
          public void publishOnFailedToAcquire(Object source, Context context, String role) {
            failedAttempts.incrementAndGet();
          }
        });
    return new Member(id, redlock, initiator, proxies, failedAttempts);
  }

  private static Member find(List<Member> members, String id) {
    return members.stream().filter(m -> m.id().equals(id)).findFirst().orElseThrow();
  }

  private static void cutOff(Member member, Cut cut) throws IOException {
    for (Proxy proxy : member.proxies()) {
      switch (cut) {
        case PROXY_DISABLED -> proxy.disable();
        case BLACK_HOLE -> {
          proxy.toxics().timeout("cut-up", ToxicDirection.UPSTREAM, 0);
          proxy.toxics().timeout("cut-down", ToxicDirection.DOWNSTREAM, 0);
        }
      }
    }
  }

  private static void print(
      long seed,
      long started,
      List<Window> windows,
      List<Violation> violations,
      List<Handover> handovers,
      List<Member> members,
      List<String> unfaulted) {
    StringBuilder out = new StringBuilder();
    line(
        out,
        String.format(
            "==== LockRegistryLeaderInitiator on RedLockRegistry: %d candidates, 5 masters, ttl=%d"
                + " ms, heartbeat=%d ms, busy-wait=%d ms, seed=%d ====",
            CANDIDATES, TTL.toMillis(), HEARTBEAT_MILLIS, BUSY_WAIT_MILLIS, seed));
    for (Handover h : handovers) {
      line(
          out,
          String.format(
              "cycle=%d cut=%s %s->%s revoked_after=%.0f ms granted_after=%.0f ms"
                  + " leaderless=%.0f ms",
              h.cycle(),
              h.cut(),
              h.from(),
              h.to(),
              millis(h.revokedNanos()),
              millis(h.grantedNanos()),
              millis(h.grantedNanos() - h.revokedNanos())));
    }
    long slowest = handovers.stream().mapToLong(Handover::grantedNanos).max().orElse(0);
    long shortestGap =
        handovers.stream().mapToLong(h -> h.grantedNanos() - h.revokedNanos()).min().orElse(0);
    line(
        out,
        String.format(
            "handover max=%.0f ms (bound %.0f ms = ttl + ttl/3), leaderless min=%.0f ms",
            millis(slowest), millis(HANDOVER_BOUND_NANOS), millis(shortestGap)));
    StringBuilder shown = new StringBuilder("windows=" + windows.size() + ":");
    for (Window w : windows) {
      shown.append(
          String.format(
              " %s[%.0f..%s]",
              w.candidate(),
              millis(w.grantedNanos() - started),
              w.open() ? "open" : String.format("%.0f", millis(w.revokedNanos() - started))));
    }
    line(out, shown.toString() + " ms");
    StringBuilder attempts = new StringBuilder("failed_attempts (heartbeats without the lock):");
    members.forEach(
        m -> attempts.append(' ').append(m.id()).append('=').append(m.failedAttempts()));
    line(out, attempts.toString());
    line(
        out,
        "handovers without a fault="
            + unfaulted.size()
            + " "
            + unfaulted
            + " (a healthy leader that could not renew in time)");
    line(out, "violations=" + violations.size() + " " + violations);
    line(out, String.format("run=%.1f s", millis(System.nanoTime() - started) / 1000));
    System.out.print(out);
    System.out.flush();
  }

  private static void line(StringBuilder out, String text) {
    out.append(TAG).append(' ').append(text).append(System.lineSeparator());
  }

  /** A candidate that records its grants and revocations. */
  private static final class RecordingCandidate implements Candidate {
    private final String id;
    private final LeadershipHistory history;

    RecordingCandidate(String id, LeadershipHistory history) {
      this.id = id;
      this.history = history;
    }

    @Override
    public String getRole() {
      return ROLE;
    }

    @Override
    public String getId() {
      return id;
    }

    @Override
    public void onGranted(Context context) {
      history.granted(id);
    }

    @Override
    public void onRevoked(Context context) {
      history.revoked(id);
    }
  }
}
