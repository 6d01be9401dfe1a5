package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.CapturedLog;
import dev.redlock.internal.transport.BreakerState;
import dev.redlock.testkit.Poll;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The event thread as the operator and the listener see it: a breaker's episode logged at INFO when
 * it opens and when it closes again, its turns between at DEBUG only; a listener slower than the
 * events told how many were dropped, at the 1st, 2nd, 4th, 8th... drop; what must not be dropped
 * handed back to its caller; waits and closes from the event thread itself that return at once. The
 * log is slf4j-simple's, on System.err; each test names its own masters, since the episodes are
 * counted per process.
 */
class EventsTest {

  private static final AtomicInteger PORTS = new AtomicInteger(18_000);
  private static final long FIVE_SECONDS = TimeUnit.SECONDS.toNanos(5);

  private final String node = "10.9.8.6:" + PORTS.incrementAndGet();
  @RegisterExtension final CapturedLog captured = new CapturedLog();

  private List<String> logged(String level, String about) {
    return captured.lines(level, about);
  }

  @Test
  void aBreakersEpisodeIsLoggedWhenItOpensAndWhenItClosesAgainOnly() {
    Events events = new Events(Events.none());
    events.circuitChanged(node, BreakerState.CLOSED); // never opened: nothing to tell
    events.circuitChanged(node, BreakerState.OPEN);
    events.circuitChanged(node, BreakerState.HALF_OPEN);
    events.circuitChanged(node, BreakerState.OPEN);
    events.circuitChanged(node, BreakerState.CLOSED);
    events.close(FIVE_SECONDS);
    List<String> told = logged("INFO", node);
    assertEquals(2, told.size(), captured::toString);
    assertTrue(told.get(0).contains("is OPEN: the master failed too often"), told::toString);
    assertTrue(told.get(1).contains("is CLOSED again: the master answers"), told::toString);
  }

  /**
   * A close while breaker changes are still queued ends this RedLock's log episodes after them:
   * ended first, the queued close of the episode found none open (its INFO line went unlogged, a
   * flake of the test above, 1 in about 7 runs), and a queued open would have left this RedLock in
   * the process-wide episodes for good.
   */
  @Test
  void aCloseEndsTheEpisodesAfterTheQueuedChanges() throws Exception {
    CountDownLatch gate = new CountDownLatch(1);
    CountDownLatch held = new CountDownLatch(1);
    Events events =
        new Events(
            new Listener() {
              @Override
              public void circuitChanged(String n, BreakerState state) {
                held.countDown(); // the first change logged: its episode started
                try {
                  gate.await(); // the event thread held on the first change
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            });
    events.circuitChanged(node, BreakerState.OPEN);
    events.circuitChanged(node, BreakerState.CLOSED); // queued behind the held one
    assertTrue(held.await(5, TimeUnit.SECONDS), "the event thread holds on the first change");
    Thread closing = new Thread(() -> events.close(FIVE_SECONDS), "closing");
    closing.start();
    Poll.until( // in its wait for the queue
        Duration.ofSeconds(5),
        () -> closing.getState() == Thread.State.TIMED_WAITING,
        () -> "the close waits for the event thread");
    gate.countDown();
    closing.join(FIVE_SECONDS / 1_000_000);
    List<String> told = logged("INFO", node);
    assertEquals(2, told.size(), captured::toString);
    assertTrue(told.get(1).contains("is CLOSED again: the master answers"), told::toString);
  }

  @Test
  void theListenerHearsEachBreakerChangeAndEachInternalError() throws InterruptedException {
    StringBuilder heard = new StringBuilder();
    Events events =
        new Events(
            new Listener() {
              @Override
              public void circuitChanged(String n, BreakerState state) {
                heard.append(state).append(' ');
              }

              @Override
              public void internalError(String where, Throwable error) {
                heard.append(where).append(' ');
              }
            });
    events.circuitChanged(node, BreakerState.OPEN);
    events.internalError("selector", new IllegalStateException());
    events.circuitChanged(node, BreakerState.CLOSED);
    events.close(FIVE_SECONDS);
    assertEquals("OPEN selector CLOSED ", heard.toString());
  }

  @Test
  void aListenerSlowerThanTheEventsIsToldOfTheDropsAtEachPowerOfTwo() throws Exception {
    CountDownLatch stuck = new CountDownLatch(1);
    CountDownLatch blocking = new CountDownLatch(1);
    Events events =
        new Events(
            new Listener() {
              @Override
              public void released(String resource, List<Outcome> outcomes, long elapsedNanos) {
                blocking.countDown();
                try {
                  stuck.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            });
    events.emitLater(l -> l.released("r", List.of(), 0)); // holds the event thread
    assertTrue(blocking.await(5, TimeUnit.SECONDS));
    for (int i = 0; i < Events.QUEUE + 9; i++) {
      events.emitLater(l -> l.released("r", List.of(), 0)); // the last 9 find the queue full
    }
    // An offer finds it full too, and hands its work back to the caller.
    assertFalse(events.offer(() -> {}), "the queue is full: the caller runs it");
    List<String> warned = logged("WARN", "is slower than the events");
    assertEquals(4, warned.size(), captured::toString); // the 1st, 2nd, 4th and 8th of 9 drops
    assertTrue(warned.get(3).contains(": 8 dropped so far (at most 10000 wait)"), warned::toString);
    stuck.countDown();
    events.close(FIVE_SECONDS);
    assertFalse(events.offer(() -> {}), "closed: the caller runs it");
  }

  @Test
  void anOfferTakenRunsOnTheEventThread() throws Exception {
    Events events = new Events(Events.none());
    CompletableFuture<String> ranOn = new CompletableFuture<>();
    assertTrue(events.offer(() -> ranOn.complete(Thread.currentThread().getName())));
    assertTrue(ranOn.get(5, TimeUnit.SECONDS).startsWith("redlock-events-"), ranOn::join);
    events.close(FIVE_SECONDS);
  }

  @Test
  void aWaitOrACloseFromTheEventThreadReturnsAtOnce() throws Exception {
    Events events = new Events(Events.none());
    CompletableFuture<Void> done = new CompletableFuture<>();
    CountDownLatch queuedBehind = new CountDownLatch(1);
    events.run(
        () -> {
          events.run(queuedBehind::countDown); // queued behind this task
          events.awaitTold(FIVE_SECONDS); // cannot wait for the task behind it
          events.close(FIVE_SECONDS); // nor can the close
          done.complete(null);
        });
    done.get(4, TimeUnit.SECONDS); // well under the 5 s either wait would take
    assertTrue(queuedBehind.await(5, TimeUnit.SECONDS), "the queued event still runs");
  }

  @Test
  void theEventThreadIsADaemonNamedForTheLibrary() throws Exception {
    Events events = new Events(Events.none());
    CompletableFuture<Thread> ran = new CompletableFuture<>();
    events.run(() -> ran.complete(Thread.currentThread()));
    Thread thread = ran.get(5, TimeUnit.SECONDS);
    assertTrue(thread.isDaemon(), "never keeps the JVM up");
    assertTrue(thread.getName().startsWith("redlock-events-"), thread.getName());
    long start = System.nanoTime();
    events.awaitTold(TimeUnit.MINUTES.toNanos(1));
    assertTrue(
        System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30),
        "an idle event thread has told everything: the wait ends at once, not at its bound");
    events.close(FIVE_SECONDS);
  }

  @Test
  void aWaitForTheEventsKeepsTheCallersInterrupt() {
    Events events = new Events(Events.none());
    CountDownLatch hold = new CountDownLatch(1);
    events.run(() -> awaitQuietly(hold)); // the thread is busy: the wait must block
    Thread.currentThread().interrupt();
    events.awaitTold(FIVE_SECONDS);
    assertTrue(Thread.interrupted(), "the interrupt ended the wait and stays set");
    hold.countDown();
    events.close(FIVE_SECONDS);
  }

  @Test
  void aCloseInterruptedWhileTheEventsDrainKeepsTheInterruptAndStopsTheThread() throws Exception {
    Events events = new Events(Events.none());
    CountDownLatch hold = new CountDownLatch(1);
    CompletableFuture<Thread> busy = new CompletableFuture<>();
    events.run(
        () -> {
          busy.complete(Thread.currentThread());
          awaitQuietly(hold);
        });
    Thread thread = busy.get(5, TimeUnit.SECONDS);
    Thread.currentThread().interrupt();
    events.close(FIVE_SECONDS);
    assertTrue(Thread.interrupted(), "the interrupt stays set");
    thread.join(TimeUnit.SECONDS.toMillis(5)); // shutdownNow interrupts the busy listener
    assertFalse(thread.isAlive(), "stopped");
    assertFalse(events.offer(() -> {}), "closed: the caller runs its work itself");
  }

  /** Waits on {@code latch}; an interrupt ends the wait (a close's shutdownNow). */
  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
