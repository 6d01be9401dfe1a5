package dev.redlock.internal.transport;

import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * What the leader of a {@link SelectorLoop} runs on time rather than on I/O: the timers (a
 * connection attempt's timeout) and the watches (links holding bytes back, looked at after every
 * select and at least every {@link #WATCH_NANOS}). Both run after the select's I/O and the tasks
 * handed in; what one of them throws drops its link only. The leader's, but for {@link #watch},
 * which any thread may call.
 */
final class LoopTimers {

  /**
   * How often, at least, the leader looks at the {@link SelectorLoop.Watch}es while there are any.
   */
  static final long WATCH_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  private final SelectorLoop loop;
  private final Ticker ticker;
  private final PriorityQueue<Timer> timers = new PriorityQueue<>(); // the leader's
  private final ConcurrentLinkedQueue<SelectorLoop.Watch> newWatches =
      new ConcurrentLinkedQueue<>();
  private final List<SelectorLoop.Watch> watches = new ArrayList<>(); // the leader's
  private long timerSequence; // the leader's

  /**
   * The leader is in (or about to enter) a select that may last longer than {@link #WATCH_NANOS}: a
   * new watch wakes it. Set before the leader looks for watches, and a watch is listed before it
   * reads this, so one of the two sees the other.
   */
  private volatile boolean selectingLong;

  LoopTimers(SelectorLoop loop, Ticker ticker) {
    this.loop = loop;
    this.ticker = ticker;
  }

  /**
   * Runs {@code task} on the loop's thread (or whoever leads) {@code delayNanos} from now, or soon
   * after. If it throws, {@code owner} (the link it is for) is dropped. The leader only.
   */
  void schedule(SelectorLoop.Handler owner, long delayNanos, Runnable task) {
    timers.add(new Timer(ticker.read() + delayNanos, timerSequence++, owner, task));
  }

  /**
   * Has {@code watch} checked by whoever leads, after every select and at least every millisecond
   * while it is not done; a thread that leads picks it up within {@link Leadership#LAG_NANOS} or
   * so. Any thread; never blocks.
   */
  void watch(SelectorLoop.Watch watch) {
    newWatches.add(watch);
    if (selectingLong) {
      loop.wakeSelector(); // it would not look at the watch for a while
    }
  }

  /**
   * The leader's select wait ({@code waitNanos}, -1 for none), cut to {@link #WATCH_NANOS} while
   * there are watches; a longer one is announced ({@link #selectingLong}, until {@link #selected})
   * so that a new watch wakes the selector.
   */
  long watchedWait(long waitNanos) {
    if (waitNanos >= 0 && waitNanos <= WATCH_NANOS) {
      return waitNanos;
    }
    selectingLong = true;
    if (watching()) {
      selectingLong = false;
      return WATCH_NANOS;
    }
    return waitNanos;
  }

  /** The leader's select returned: a new watch need not wake it. */
  void selected() {
    selectingLong = false;
  }

  /** Whether any watch waits for a look; the leader's. */
  private boolean watching() {
    return !watches.isEmpty() || !newWatches.isEmpty();
  }

  /** Looks at every watch, keeping those not done; the leader's. */
  void checkWatches() {
    for (SelectorLoop.Watch watch = newWatches.poll(); watch != null; watch = newWatches.poll()) {
      watches.add(watch);
    }
    if (watches.isEmpty()) {
      return;
    }
    long now = ticker.read();
    for (int i = watches.size() - 1; i >= 0; i--) {
      SelectorLoop.Watch watch = watches.get(i);
      boolean done;
      try {
        done = watch.check(now);
      } catch (Throwable e) {
        loop.contain(watch, "I/O watch", e);
        done = true;
      }
      if (done) {
        watches.remove(i);
      }
    }
  }

  /** Nanoseconds until the next timer is due: 0 if one is, -1 if there is none. */
  long untilNextTimer() {
    Timer next = timers.peek();
    return next == null ? -1 : Math.max(0, next.atNanos - ticker.read());
  }

  /** Runs the timers that are due. */
  void runTimers() {
    long now = ticker.read();
    while (!timers.isEmpty() && timers.peek().atNanos - now <= 0) {
      Timer timer = timers.poll();
      try {
        timer.task.run();
      } catch (Throwable e) {
        loop.contain(timer.owner, "I/O timer", e);
      }
    }
  }

  /** The loop stopped for good: drops every timer and watch. */
  void clear() {
    timers.clear();
    watches.clear();
    newWatches.clear();
  }

  private record Timer(long atNanos, long sequence, SelectorLoop.Handler owner, Runnable task)
      implements Comparable<Timer> {
    @Override
    public int compareTo(Timer other) {
      long byTime = atNanos - other.atNanos;
      return byTime != 0 ? Long.signum(byTime) : Long.compare(sequence, other.sequence);
    }
  }
}
