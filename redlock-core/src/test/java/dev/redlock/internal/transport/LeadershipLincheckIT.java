package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * Leadership of the selector ({@link Leadership}, lock-free: one atomic reference taken by
 * compare-and-set, followers parked on a queue) hands the selector over without losing it and
 * without two selectors, in every run of Lincheck's stress mode: callers await their rounds while
 * the loop's own thread runs its cycle (lead until handed over, then wait for quiet callers), on a
 * fake loop whose select decides every round sent so far, as reading their replies would. Each
 * round must be decided when its await returns (its deadline is a second away: a selector lost, or
 * held by a thread that left, would leave it undecided), and no two threads may select at once.
 *
 * <p>Stress mode, as for {@link LinkOutputLincheckIT}: the model checker cannot run the loop's own
 * thread, which this test starts outside Lincheck's threads. Red with a caller that does not give
 * the selector back once its round is decided ("Invalid execution results": a round undecided at
 * its deadline), and with a take that reads then writes instead of compare-and-set ("two threads
 * selected at once"), each in about 12 to 26 s; green takes about 7 s.
 */
public class LeadershipLincheckIT {

  private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final FakeLoop loop = new FakeLoop();
  private final Leadership leadership = new Leadership(loop, Ticker.system());
  private final Thread loopThread;

  public LeadershipLincheckIT() {
    loopThread = new Thread(this::runLoop, "fake-loop");
    loop.thread = loopThread;
    loopThread.setDaemon(true);
    loopThread.start();
  }

  /** The loop's cycle, as {@code SelectorLoop.run} has it. */
  private void runLoop() {
    Thread me = Thread.currentThread();
    try {
      while (!loop.stopping) {
        if (leadership.take(me)) {
          try {
            leadership.leadUntilHandedOver();
          } finally {
            leadership.giveBack();
          }
          leadership.wakeFollower();
        }
        leadership.awaitQuietCallers();
      }
    } catch (Exception e) {
      loop.failed = e;
    }
  }

  /** A caller sends a round and awaits it: decided when the await returns. */
  @Operation
  public boolean round() {
    FakeRound round = new FakeRound();
    loop.sent(round);
    leadership.await(round, System.nanoTime() + DEADLINE_NANOS);
    return round.decided();
  }

  /** After each run: no two selectors; then the loop's thread stops. */
  @Validate
  public void neverTwoSelectors() throws InterruptedException {
    loop.stopping = true;
    loop.wakeSelector();
    LockSupport.unpark(loopThread);
    loopThread.join(TimeUnit.SECONDS.toMillis(5));
    assertFalse(loop.overlapped, "two threads selected at once");
    assertFalse(loopThread.isAlive(), "the loop's thread did not stop");
    assertTrue(loop.failed == null, () -> "the loop's thread failed: " + loop.failed);
  }

  @Test
  void theSelectorIsNeverLostAndNeverShared() {
    new StressOptions()
        .iterations(20)
        .invocationsPerIteration(1_000)
        .threads(3)
        .actorsPerThread(2)
        .actorsBefore(0)
        .actorsAfter(0)
        .sequentialSpecification(Spec.class)
        .check(getClass());
  }

  /**
   * The sequential specification: every round is decided. A class of its own, so that Lincheck's
   * sequential runs start no loop thread that no validation would stop.
   */
  public static final class Spec {
    /** As {@link LeadershipLincheckIT#round}. */
    public boolean round() {
      return true;
    }
  }

  /** A round that any select decides. */
  private static final class FakeRound implements AwaitedRound {
    private volatile boolean decided;
    private volatile Thread waiter;
    private volatile Runnable selecting;

    void decide() {
      decided = true;
      Runnable wake = selecting;
      if (wake != null) {
        wake.run();
      }
      Thread parked = waiter;
      if (parked != null) {
        LockSupport.unpark(parked);
      }
    }

    @Override
    public boolean decided() {
      return decided;
    }

    @Override
    public void waitOn(Thread thread) {
      waiter = thread;
    }

    @Override
    public void selecting(Runnable wakeSelector) {
      selecting = wakeSelector;
    }

    @Override
    public void awaitDecision(long deadlineNanos) {
      waiter = Thread.currentThread();
      while (!decided && deadlineNanos - System.nanoTime() > 0) {
        LockSupport.parkNanos(this, deadlineNanos - System.nanoTime());
      }
    }
  }

  /**
   * A loop whose select decides every round sent (their replies are there at once), or waits until
   * one is sent or it is woken.
   */
  private static final class FakeLoop implements Leadership.Loop {
    final ConcurrentLinkedQueue<FakeRound> sent = new ConcurrentLinkedQueue<>();
    final AtomicInteger selecting = new AtomicInteger();
    volatile Thread thread;
    volatile Thread selector; // the thread in select, to wake
    volatile boolean woken;
    volatile boolean stopping;
    volatile boolean overlapped;
    volatile Exception failed;

    /** A round's command went out: its reply arrives, and the select in progress returns. */
    void sent(FakeRound round) {
      sent.add(round);
      Thread in = selector;
      if (in != null) {
        LockSupport.unpark(in);
      }
    }

    @Override
    public Thread thread() {
      return thread;
    }

    @Override
    public boolean stopping() {
      return stopping;
    }

    @Override
    public void wakeSelector() {
      woken = true;
      Thread in = selector;
      if (in != null) {
        LockSupport.unpark(in);
      }
    }

    @Override
    public long untilNextTimer() {
      return -1;
    }

    @Override
    public void select(long waitNanos) {
      if (selecting.getAndIncrement() != 0) {
        overlapped = true;
      }
      try {
        selector = Thread.currentThread();
        long until = System.nanoTime() + (waitNanos < 0 ? TimeUnit.MILLISECONDS.toNanos(10) : 0);
        while (sent.isEmpty() && !woken && !stopping && until - System.nanoTime() > 0) {
          LockSupport.parkNanos(this, until - System.nanoTime());
        }
        woken = false;
        selector = null;
        for (FakeRound round = sent.poll(); round != null; round = sent.poll()) {
          round.decide();
        }
      } finally {
        selecting.decrementAndGet();
      }
    }

    @Override
    public void afterSelect() {}

    @Override
    public void throwInjected() {}
  }
}
