package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.Vote;
import dev.redlock.testkit.Poll;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The releases that {@link Releases} sends and follows, on five scripted masters: where a failed
 * acquire's cleanup goes, when the listener hears the final answers, and that a release followed
 * for a retry stops being followed once it is over (a place of {@link Releases#MAX_PENDING} held
 * until the close would, after enough of them, leave new releases unretried).
 */
class ReleasesFollowTest {

  private static final byte[] KEY = "r".getBytes(StandardCharsets.UTF_8);
  private static final byte[] TOKEN = "t".getBytes(StandardCharsets.UTF_8);

  private final FakeTicker ticker = new FakeTicker();
  private final List<FakeNode> nodes = new ArrayList<>();
  private final BlockingQueue<List<Outcome>> completed = new LinkedBlockingQueue<>();
  private final Events events =
      new Events(
          new Listener() {
            @Override
            public void releaseCompleted(
                String resource, List<Outcome> outcomes, long elapsedNanos) {
              completed.add(outcomes);
            }
          });
  private final Releases releases;

  ReleasesFollowTest() {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      nodes.add(new FakeNode(ticker));
      names.add("m" + i);
    }
    releases = new Releases(FakeMasters.of(nodes, names, ticker), events, Timing.REAL.timers());
  }

  @AfterEach
  void close() {
    releases.close();
    events.close(TimeUnit.SECONDS.toNanos(5));
  }

  /** Where an acquire granted ({@code granted}); every other master refused it. */
  private static Landing grantedOn(Set<Integer> granted) {
    return new Landing() {
      @Override
      public boolean mayHaveRun(int node) {
        return granted.contains(node);
      }

      @Override
      public boolean leftNothing(int node) {
        return !granted.contains(node);
      }

      @Override
      public boolean lostInFlight(int node) {
        return false;
      }
    };
  }

  private long releasesSent(int node) {
    return nodes.get(node).received().stream().filter(s -> s.startsWith("RELEASE")).count();
  }

  private long farFuture() {
    return ticker.read() + TimeUnit.HOURS.toNanos(1);
  }

  @Test
  void aFailedAcquireIsUndoneOnlyWhereItMayHaveSetTheKey() {
    releases.releaseAll(LockKey.of(KEY), TOKEN, grantedOn(Set.of(0, 1)), farFuture());
    List<Long> sent = new ArrayList<>();
    for (int i = 0; i < nodes.size(); i++) {
      sent.add(releasesSent(i));
    }
    assertEquals(List.of(1L, 1L, 0L, 0L, 0L), sent, "releases sent to each master");
  }

  @Test
  void aCleanupSentAgainIsNoLongerFollowedOnceItsMasterAnswered() {
    nodes.get(0).nextReleases.add(Answer.FAIL); // the first send fails; the retry is answered
    releases.releaseAll(LockKey.of(KEY), TOKEN, grantedOn(Set.of(0, 1)), farFuture());
    assertEquals(1, releases.followed(), "followed for its retry");
    Poll.until(
        Duration.ofSeconds(5),
        () -> releases.followed() == 0,
        () -> "still followed after its retry: sent " + releasesSent(0) + " times to master 0");
    assertEquals(2, releasesSent(0), "sent again once, answered then");
  }

  @Test
  void theListenerHearsTheFinalAnswersOnlyOnceEveryMasterGaveOne() throws InterruptedException {
    nodes.get(4).onRelease = Answer.HANG;
    releaseOnEvery(releases, Set.of(0, 1, 2, 3, 4));
    events.awaitTold(TimeUnit.SECONDS.toNanos(5));
    assertTrue(completed.isEmpty(), "told before master 4 answered: " + completed);
    nodes.get(4).hanging.poll().complete(Vote.GRANTED);
    List<Outcome> outcomes = completed.poll(5, TimeUnit.SECONDS);
    assertTrue(outcomes != null, "told within 5 s of the last answer");
    assertEquals(5, outcomes.size());
    outcomes.forEach(o -> assertEquals(Vote.GRANTED, o.vote(), outcomes::toString));
  }

  /**
   * A listener that does not hear {@code releaseCompleted} is handed nothing when a release's last
   * master answers: the event thread, on which that call would run, is not woken for it.
   */
  @Test
  void aListenerThatIgnoresTheFinalAnswersIsHandedNothing() {
    for (boolean hears : new boolean[] {false, true}) {
      VirtualTimers eventThread = new VirtualTimers(ticker);
      Events told =
          new Events(
              new Listener() {
                @Override
                public boolean hearsReleaseCompleted() {
                  return hears;
                }
              },
              eventThread);
      try (Releases own =
          new Releases(
              FakeMasters.of(nodes, List.of("m0", "m1", "m2", "m3", "m4"), ticker),
              told,
              Timing.REAL.timers())) {
        releaseOnEvery(own, Set.of(0, 1, 2, 3, 4));
        assertEquals(
            hears ? 1 : 0, eventThread.pending(), "calls for the event thread, hears " + hears);
      }
    }
  }

  /**
   * Starts a release of the lease whose acquire was {@code granted} and sends it to every master.
   */
  private void releaseOnEvery(Releases on, Set<Integer> granted) {
    Releases.Job job =
        on.start(
            "r",
            grantedOn(granted),
            farFuture(),
            (n, now) -> n.send(Command.release(LockKey.of(KEY), TOKEN)));
    for (int i = 0; i < nodes.size(); i++) {
      job.send(nodes.get(i), i);
    }
  }

  @Test
  void aMasterThatRefusedTheReleaseAndHoldsNothingIsToldWithItsFailure()
      throws InterruptedException {
    nodes.get(4).onRelease = Answer.FAIL;
    releaseOnEvery(releases, Set.of(0, 1, 2, 3));
    List<Outcome> outcomes = completed.poll(5, TimeUnit.SECONDS);
    assertTrue(outcomes != null, "told within 5 s");
    assertEquals(Vote.FAILED, outcomes.get(4).vote());
    assertEquals("refused", outcomes.get(4).detail(), "the master's own failure, sent once");
    assertEquals(1, releasesSent(4), "its acquire set nothing there: not sent again");
  }

  @Test
  void atMostMaxPendingReleasesAreFollowedAndTheNextIsSentOnceAndTold()
      throws InterruptedException {
    nodes.get(0).onRelease = Answer.FAIL; // every release fails there and waits for a retry
    for (int i = 0; i < Releases.MAX_PENDING; i++) {
      releases.releaseAll(LockKey.of(KEY), TOKEN, grantedOn(Set.of(0)), farFuture());
    }
    assertEquals(Releases.MAX_PENDING, releases.followed(), "every one followed, up to the bound");
    Releases.Job beyond =
        releases.start(
            "r",
            grantedOn(Set.of(0)),
            farFuture(),
            (n, now) -> n.send(Command.release(LockKey.of(KEY), TOKEN)));
    for (int i = 0; i < nodes.size(); i++) {
      beyond.send(nodes.get(i), i);
    }
    assertEquals(Releases.MAX_PENDING, releases.followed(), "one more is not followed");
    List<Outcome> outcomes = completed.poll(5, TimeUnit.SECONDS);
    assertTrue(outcomes != null, "told at once");
    assertEquals(Vote.FAILED, outcomes.get(0).vote());
    assertEquals(
        "not sent again: 10000 releases were being followed already", outcomes.get(0).detail());
  }
}
