package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.preflight.Preflight;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.LockKey;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The lease layer on injected timers and randomness ({@link Timing}), on virtual time: an
 * asynchronous wait whose every round is refused runs its rounds on the injected timer, at the
 * times its retry pauses (fixed jitter) and its deadline say, to the round, with no thread and no
 * real time: the caller's future too is completed on the injected executor ({@link Events}). This
 * is what lets a test, and the simulation of issue 33, drive the wait engine.
 */
class VirtualTimeWaitTest {

  private static final List<String> NAMES = List.of("a:1", "b:2", "c:3");
  private static final long RETRY_DELAY = TimeUnit.MILLISECONDS.toNanos(50);

  private final FakeTicker ticker = new FakeTicker();
  private final VirtualTimers timers = new VirtualTimers(ticker);
  private final List<FakeNode> fakes = new ArrayList<>();
  private final Events events = new Events(Events.none(), timers); // the futures' hand-over too
  private Coordinator coordinator;

  @AfterEach
  void close() {
    if (coordinator != null) {
      coordinator.close();
    }
  }

  private Coordinator coordinator(Jitter jitter) {
    for (int i = 0; i < NAMES.size(); i++) {
      FakeNode fake = new FakeNode(new FakeTicker());
      fake.onSet = FakeNode.Answer.TAKEN;
      fakes.add(fake);
    }
    Coordinator.Settings settings =
        new Coordinator.Settings(
            0.01, 0, RETRY_DELAY, false, false, 60_000, 0, TimeUnit.SECONDS.toNanos(1));
    coordinator =
        new Coordinator(
            FakeMasters.of(fakes, NAMES, ticker),
            events,
            new Preflight(false, 0),
            settings,
            Contention.polling(),
            new Timing(timers.timers(), jitter));
    return coordinator;
  }

  /** An async acquire of {@code r} that waits up to a second. */
  private static CompletableFuture<Attempt> waitASecond(Coordinator on) {
    return on.acquireAsync(
        "r",
        LockKey.of("r".getBytes(StandardCharsets.UTF_8)),
        10_000,
        TimeUnit.SECONDS.toNanos(1),
        attempt -> attempt);
  }

  private long rounds() {
    return fakes.get(0).received().stream().filter(c -> c.startsWith("SET ")).count();
  }

  @Test
  void anAsyncWaitRunsItsRoundsOnTheInjectedTimerAtItsPausesAndEndsAtItsDeadline() {
    CompletableFuture<Attempt> wait = waitASecond(coordinator(bound -> 0)); // pauses of 25 ms
    timers.runDue();
    assertEquals(1, rounds(), "the first round at once");
    timers.advance(Duration.ofMillis(24));
    assertEquals(1, rounds(), "no round before its pause ends");
    timers.advance(Duration.ofMillis(1));
    assertEquals(2, rounds(), "the second at 25 ms");
    timers.advance(Duration.ofMillis(974)); // to 999 ms
    assertEquals(40, rounds(), "one round each 25 ms");
    assertFalse(wait.isDone(), "the wait has a millisecond left");
    timers.advance(Duration.ofMillis(1));
    assertEquals(41, rounds(), "the last round, at the deadline");
    assertTrue(wait.isDone(), "the wait ended at its deadline, on virtual time");
    assertNull(wait.join().grant());
  }

  @Test
  void theInjectedJitterSetsThePauses() {
    waitASecond(coordinator(bound -> bound - 1)); // each pause 1.5 retry delays less 1 ns
    timers.runDue();
    timers.advance(Duration.ofNanos(RETRY_DELAY / 2 + RETRY_DELAY - 2));
    assertEquals(1, rounds(), "not yet");
    timers.advance(Duration.ofNanos(1));
    assertEquals(2, rounds(), "the second round when the jitter says");
  }

  private long extends_() {
    return fakes.get(0).received().stream().filter(c -> c.startsWith("EXTEND ")).count();
  }

  /**
   * A renewal extends the lease each time a third of its TTL is left, on the injected timer: to the
   * nanosecond on virtual time, with no renewal thread.
   */
  @Test
  void aRenewalExtendsWhenAThirdOfTheTtlIsLeftOnTheInjectedTimer() {
    Coordinator on = coordinator(bound -> 0);
    for (FakeNode fake : fakes) {
      fake.onSet = FakeNode.Answer.GRANT;
    }
    Grant lease =
        on.attemptOnce("r", LockKey.of("r".getBytes(StandardCharsets.UTF_8)), 3_000).grant();
    Renewer.Renewal renewal = on.renew(lease, 3_000);
    long third = TimeUnit.MILLISECONDS.toNanos(1_000);
    timers.advance(Duration.ofNanos(lease.remainingNanos() - third - 1));
    assertEquals(0, extends_(), "not before a third is left");
    timers.advance(Duration.ofNanos(1));
    assertEquals(1, extends_(), "extended when a third of the TTL was left");
    assertTrue(lease.remainingNanos() > third, "the extend moved the lease's end");
    timers.advance(Duration.ofNanos(lease.remainingNanos() - third));
    assertEquals(2, extends_(), "and again a third before its new end");
    renewal.cancel();
    timers.advance(Duration.ofSeconds(10));
    assertEquals(2, extends_(), "cancelled: no more");
  }
}
