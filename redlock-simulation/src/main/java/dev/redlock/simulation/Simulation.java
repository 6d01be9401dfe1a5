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
   */
  public void runUntil(BooleanSupplier done, long deadlineNanos) {
    while (!done.getAsBoolean()) {
      Event next = events.peek();
      if (next == null || next.at() > deadlineNanos) {
        now = Math.max(now, deadlineNanos);
        return;
      }
      events.poll();
      now = Math.max(now, next.at());
      ran++;
      next.task().run();
    }
  }

  /** Runs every event due within {@code nanos} from now; the clock then stands there. */
  public void runFor(long nanos) {
    runUntil(() -> false, now + nanos);
  }
}
