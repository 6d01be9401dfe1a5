package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Vote;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * The wait engine's one concurrent edge ({@link Wait}: a close, from a cancel or the RedLock's
 * close, races the driver's thread as its first refused round enters the resource's wake-up group)
 * leaves nothing behind, in every run of Lincheck's stress mode: once the close and the driver's
 * round have both returned, the wait is out of the group and the resource is unsubscribed. The
 * driver writes its waiter and then reads whether it was closed; the close writes that it was
 * closed and then reads the waiter (both volatile): one of the two sees the other. Red with the
 * driver's look at the close taken out (the group left subscribed: a subscription, on every
 * master's notice link, for a wait that ended), in about 2 s twice; green takes about 8 s.
 *
 * <p>Stress mode: the wake-ups' links run threads of their own, outside Lincheck's. One set of
 * wake-ups serves every run (each on a resource of its own), so a leak stays visible.
 */
public class WaitCloseLincheckIT {

  private static final Ticker TICKER = new FakeTicker();
  private static final Wakeups WAKEUPS =
      new Wakeups(
          TICKER, TimeUnit.MILLISECONDS.toNanos(50), true, listener -> DeafListener.deafLinks(3));
  private static final Masters MASTERS = FakeMasters.of(new ArrayList<>(), List.of(), TICKER);
  private static final AtomicLong RESOURCES = new AtomicLong();

  private final Wait wait;
  private volatile boolean closeCalled;

  public WaitCloseLincheckIT() {
    LockKey key = LockKey.of(("r" + RESOURCES.incrementAndGet()).getBytes(StandardCharsets.UTF_8));
    Turn turn = WAKEUPS.turn(MASTERS, key, TimeUnit.MILLISECONDS.toNanos(50));
    wait =
        new Wait(
            WAKEUPS,
            turn,
            key,
            TimeUnit.SECONDS.toNanos(10),
            TimeUnit.MILLISECONDS.toNanos(50),
            TICKER,
            bound -> 0,
            attempt -> {});
  }

  /** The driver's thread: a round refused outright, decided. */
  @Operation(nonParallelGroup = "driver")
  public void refused() {
    wait.beforeRound();
    wait.decided(
        new Attempt(
            null,
            List.of(new Outcome("a:1", Vote.TAKEN, 0, ""), new Outcome("b:2", Vote.TAKEN, 0, "")),
            false));
  }

  /** A cancel or a close, from any thread. */
  @Operation
  public void close() {
    closeCalled = true;
    wait.close();
  }

  /** After each run with a close: nothing is subscribed (a run without one is closed here). */
  @Validate
  public void aClosedWaitLeavesNothing() {
    if (!closeCalled) {
      wait.close();
    }
    assertEquals(0, WAKEUPS.subscribed(), "a closed wait is still in its resource's group");
  }

  @Test
  void aCloseRacingTheFirstRefusedRoundLeavesNothing() {
    new StressOptions()
        .iterations(30)
        .invocationsPerIteration(3_000)
        .threads(2)
        .actorsPerThread(1)
        .actorsBefore(0)
        .actorsAfter(0)
        .sequentialSpecification(Spec.class)
        .check(getClass());
  }

  /**
   * The sequential specification: the operations return nothing to compare. A class of its own, so
   * that Lincheck's sequential runs do not enter the shared wake-ups without being validated.
   */
  public static final class Spec {
    /** As {@link WaitCloseLincheckIT#refused}. */
    public void refused() {}

    /** As {@link WaitCloseLincheckIT#close}. */
    public void close() {}
  }
}
