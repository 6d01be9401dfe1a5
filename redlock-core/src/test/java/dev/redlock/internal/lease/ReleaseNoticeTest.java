package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.ForwardingNodeClient;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.TransportHooks;
import dev.redlock.testkit.Poll;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a lease's release tells the clients waiting for its resource, on five scripted masters: the
 * gate gets the release that names the next waiter, the next master by name a quiet one that says
 * whether clients listen there, every other master the plain release; and when the gate does not
 * take it (it failed, told no one, or stays silent for half its node timeout) while clients listen
 * at the next master, that master is told to notify them, once. A waiter left unnotified sleeps
 * until its own timer: a lock free and no one taking it.
 */
class ReleaseNoticeTest {

  private static final List<String> NAMES = List.of("a:1", "b:2", "c:3", "d:4", "e:5");
  private static final long TOLD = 2; // the release script's codes
  private static final long DELETED = 1;
  private static final long LISTENING = 3;

  private final FakeTicker ticker = new FakeTicker();
  private final List<Noticing> nodes = new ArrayList<>();
  private final Events events = new Events(Events.none());
  private Releases releases;

  @AfterEach
  void close() {
    if (releases != null) {
      releases.close();
    }
  }

  /** A master that records the releases and notices it is sent, and answers as scripted. */
  private final class Noticing extends ForwardingNodeClient {
    final List<String> calls = Collections.synchronizedList(new ArrayList<>());
    volatile CompletableFuture<NodeReply> answer =
        CompletableFuture.completedFuture(TransportHooks.releaseReply(DELETED));

    Noticing() {
      super(new FakeNode(ticker));
    }

    private CompletableFuture<NodeReply> record(String call) {
      calls.add(call);
      return answer;
    }

    @Override
    @SuppressWarnings("unchecked") // releases and notices are Command<NodeReply>
    public <R> CompletableFuture<R> send(Command<R> command) {
      if (command instanceof Command.Release release) {
        return (CompletableFuture<R>)
            record(
                switch (release.flavour()) {
                  case PLAIN -> "release";
                  case AT_GATE -> "releaseAtGate";
                  case AT_NEXT -> "releaseAtNext";
                  case QUIET -> "releaseQuietly";
                });
      }
      if (command instanceof Command.Notice) {
        calls.add("notice");
        return (CompletableFuture<R>)
            CompletableFuture.completedFuture(TransportHooks.releaseReply(TOLD));
      }
      return super.send(command);
    }
  }

  private Leases leases(int n) {
    for (int i = 0; i < n; i++) {
      nodes.add(new Noticing());
    }
    Masters masters = FakeMasters.of(nodes, NAMES.subList(0, n), ticker);
    releases = new Releases(masters, events, Timing.REAL.timers());
    return new Leases(
        masters,
        releases,
        events,
        new Arguments(masters.nodeTimeoutNanos(), 0, Long.MAX_VALUE),
        0.01,
        0,
        Timing.REAL);
  }

  private Grant granted(Leases leases, String resource) {
    return granted(leases, resource, LockKey.of(resource.getBytes(StandardCharsets.UTF_8)));
  }

  private Grant granted(Leases leases, String resource, LockKey key) {
    Landing everywhere =
        new Landing() {
          @Override
          public boolean mayHaveRun(int node) {
            return true;
          }

          @Override
          public boolean leftNothing(int node) {
            return false;
          }

          @Override
          public boolean lostInFlight(int node) {
            return false;
          }
        };
    long far = ticker.read() + TimeUnit.SECONDS.toNanos(10);
    return leases.grant(
        resource, key, "t".getBytes(StandardCharsets.UTF_8), far, Grant.NO_FENCE, everywhere, far);
  }

  private static byte[] key(String resource) {
    return resource.getBytes(StandardCharsets.UTF_8);
  }

  private static CompletableFuture<NodeReply> answer(long code) {
    return CompletableFuture.completedFuture(TransportHooks.releaseReply(code));
  }

  private int notices(Noticing node) {
    return (int) node.calls.stream().filter("notice"::equals).count();
  }

  /** Releases a lease on {@code resource} with its gate and next master answering as given. */
  private Noticing[] release(
      String resource, CompletableFuture<NodeReply> atGate, CompletableFuture<NodeReply> atNext) {
    Leases leases = leases(5);
    Masters masters = FakeMasters.of(nodes, NAMES, ticker);
    int gate = masters.gateOf(key(resource));
    Noticing next = (Noticing) masters.fallbackClient(key(resource));
    nodes.get(gate).answer = atGate;
    next.answer = atNext;
    leases.release(granted(leases, resource));
    return new Noticing[] {nodes.get(gate), next};
  }

  /**
   * The others' releases are quiet: the key's waiters hear the gate and the next master only
   * (Masters.heardFor), so a notice elsewhere would be a SHA-1 and a PUBLISH for no one.
   */
  @Test
  void theGateAndTheNextMasterGetTheirReleasesAndTheOthersAQuietOne() {
    Noticing[] pair = release("r", answer(TOLD), answer(LISTENING));
    for (Noticing node : nodes) {
      String expected =
          node == pair[0] ? "releaseAtGate" : node == pair[1] ? "releaseAtNext" : "releaseQuietly";
      assertEquals(List.of(expected), node.calls, "master " + nodes.indexOf(node));
    }
  }

  @Test
  void aGateThatToldAWaiterLeavesTheListenersAtTheNextMasterAlone() {
    Noticing[] pair = release("r", answer(TOLD), answer(LISTENING));
    assertEquals(0, notices(pair[1]));
  }

  @Test
  void aGateThatFailedHasTheNextMasterNotifyItsListenersOnce() {
    Noticing[] pair =
        release(
            "r",
            CompletableFuture.failedFuture(new NodeUnavailableException("refused")),
            answer(LISTENING));
    assertEquals(List.of("releaseAtNext", "notice"), pair[1].calls);
  }

  @Test
  void aGateThatToldNoOneHasTheNextMasterNotifyItsListeners() {
    Noticing[] pair = release("r", answer(DELETED), answer(LISTENING));
    assertEquals(1, notices(pair[1]));
  }

  @Test
  void noOneListeningAtTheNextMasterIsOwedNoNotice() {
    Noticing[] pair =
        release(
            "r",
            CompletableFuture.failedFuture(new NodeUnavailableException("refused")),
            answer(DELETED));
    assertEquals(0, notices(pair[1]));
  }

  @Test
  void aGateSilentForHalfItsNodeTimeoutHasTheNextMasterNotifyOnceWhateverItSaysLater() {
    CompletableFuture<NodeReply> gateLater = new CompletableFuture<>();
    Noticing[] pair = release("r", gateLater, answer(LISTENING));
    // The gate counts as silent 25 ms (half its 50 ms node timeout) after the next master answered.
    Poll.until(Duration.ofSeconds(5), () -> notices(pair[1]) == 1, () -> "calls " + pair[1].calls);
    gateLater.complete(TransportHooks.releaseReply(DELETED)); // late, and told no one
    assertEquals(1, notices(pair[1]), "sent once");
  }

  @Test
  void withTwoMastersEveryoneGetsThePlainRelease() {
    Leases leases = leases(2);
    leases.release(granted(leases, "r"));
    for (Noticing node : nodes) {
      assertEquals(List.of("release"), node.calls);
    }
  }

  @Test
  void aKeySetsReleaseIsThePlainOneEverywhere() {
    Leases leases = leases(5);
    LockKey.Set set =
        LockKey.of(
            List.of("a".getBytes(StandardCharsets.UTF_8), "b".getBytes(StandardCharsets.UTF_8)));
    leases.release(granted(leases, "[a, b]", set));
    for (Noticing node : nodes) {
      assertEquals(List.of("release"), node.calls);
    }
  }
}
