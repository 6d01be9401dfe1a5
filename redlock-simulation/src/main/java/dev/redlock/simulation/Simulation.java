package dev.redlock.simulation;

import java.util.PriorityQueue;
import java.util.Random;
import java.util.function.BooleanSupplier;

/**
 * The simulation's one clock and its one queue of events: every timer, message and reply is an
 * event at a virtual time, run one at a time in time order (ties in the order they were scheduled),
 * on the thread that drives the simulation. Nothing reads the real time; the seeded {@link
 * #random()} decides everything left to chance. Not thread-safe: one thread drives it.
 */
public final class Simulation {

  private record Event(long at, long seq, Runnable task) implements Comparable<Event> {
    @Override
    public int compareTo(Event other) {
      int byTime = Long.compare(at, other.at);
      return byTime != 0 ? byTime : Long.compare(seq, other.seq);
    }
  }

  /** Where virtual time starts: a fixed instant, so that a seed replays bit for bit. */
  public static final long EPOCH_MICROS = 1_800_000_000_000_000L;

  private final PriorityQueue<Event> events = new PriorityQueue<>();
  private final Random random;
  private long now;
  private long scheduled;
  private long ran;
  private long stillCalls; // calls of runUntil in a row that neither ran an event nor moved time

  /**
   * How many waits in a row may return with time standing still and no event run before the
   * simulation calls it a spin: code that loops without waiting for anything, which on a real clock
   * would burn a CPU until its deadline, and on the virtual one never reaches it.
   */
  static final int SPIN_LIMIT = 100_000;

  /**
   * How many events in a row may run at one virtual time before the simulation calls it a spin:
   * events that only schedule more events at once (a loop through an executor), which on a real
   * clock would burn a CPU and on the virtual one never let the time move. Far above any burst a
   * run has at one instant (every client's round to every master, and their replies).
   */
  static final int EVENT_SPIN_LIMIT = 1_000_000;

  private long eventsAtNow; // events run in a row at the current time

  /**
   * A simulation at virtual time 0.
   *
   * @param seed what every random choice follows
   */
  public Simulation(long seed) {
    // Mixed first: java.util.Random's sequences for seeds one apart start alike.
    this.random = new Random(seed * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L);
  }

  /** The virtual time, in nanoseconds since the simulation began. */
  public long now() {
    return now;
  }

  /** The simulation's randomness, seeded. */
  public Random random() {
    return random;
  }

  /** How many events have run. */
  public long eventsRun() {
    return ran;
  }

  /**
   * Runs {@code task} {@code delayNanos} from now (at once if not positive: after the events
   * already due now).
   */
  public void after(long delayNanos, Runnable task) {
    events.add(new Event(now + Math.max(0, delayNanos), scheduled++, task));
  }

  /**
   * Runs events in time order until {@code done} holds or none is due by {@code deadlineNanos}; the
   * clock is then at the deadline (or at the event that made {@code done} hold).
   *
   * @param done checked before each event
   * @param deadlineNanos the latest virtual time to run to
   * @throws IllegalStateException if this is the {@link #SPIN_LIMIT}th call in a row that ran no
   *     event and left the time where it was: its caller spins
   */
  public void runUntil(BooleanSupplier done, long deadlineNanos) {
    long before = now;
    long ranBefore = ran;
    try {
      runUntilUnchecked(done, deadlineNanos);
    } finally {
      if (now != before || ran != ranBefore) {
        stillCalls = 0;
      } else if (++stillCalls > SPIN_LIMIT) {
        stillCalls = 0;
        throw new IllegalStateException(
            "a spin: "
                + SPIN_LIMIT
                + " waits in a row returned at "
                + now
                + " ns with no event run and the time standing still");
      }
    }
  }

  private void runUntilUnchecked(BooleanSupplier done, long deadlineNanos) {
    while (!done.getAsBoolean()) {
      Event next = events.peek();
      if (next == null || next.at() > deadlineNanos) {
        if (deadlineNanos > now) {
          now = deadlineNanos;
          eventsAtNow = 0;
        }
        return;
      }
      events.poll();
      if (next.at() > now) {
        now = next.at();
        eventsAtNow = 0;
      } else if (++eventsAtNow > EVENT_SPIN_LIMIT) {
        eventsAtNow = 0;
        throw new IllegalStateException(
            "a spin: "
                + EVENT_SPIN_LIMIT
                + " events in a row ran at "
                + now
                + " ns with the time standing still");
      }
      ran++;
      next.task().run();
    }
  }

  /** Runs every event due within {@code nanos} from now; the clock then stands there. */
  public void runFor(long nanos) {
    runUntil(() -> false, now + nanos);
  }
}
