package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLockListener;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * One worker's listener: records what every master answered in each acquire round (granted or
 * denied), with the moment the round began on {@link System#nanoTime()}, marks in {@link Live}
 * which masters voted, and passes every call on to the drill's shared {@link DrillRun.Watch}.
 *
 * <p>A worker's rounds run on its own thread, so appends are not contended; they are synchronized
 * all the same, as a listener must be thread-safe. Read {@link #rounds()} after the worker stopped.
 */
final class RoundLog implements RedLockListener {

  private static final Status[] STATUSES = Status.values();

  private final int masters;
  private final RedLockListener next;
  private final Live live;
  private long[] times = new long[1024];
  private byte[] statuses;
  private int size;

  RoundLog(int masters, RedLockListener next, Live live) {
    if (masters < 1) {
      throw new IllegalArgumentException("masters must be at least 1: " + masters);
    }
    this.masters = masters;
    this.next = requireNonNull(next, "next");
    this.live = requireNonNull(live, "live");
    this.statuses = new byte[times.length * masters];
  }

  @Override
  public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
    record(outcomes, elapsed);
    next.acquired(resource, outcomes, elapsed);
  }

  @Override
  public void denied(String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {
    record(outcomes, elapsed);
    next.denied(resource, reason, outcomes, elapsed);
  }

  @Override
  public void circuitChanged(String node, CircuitState state) {
    next.circuitChanged(node, state);
  }

  private synchronized void record(List<NodeOutcome> outcomes, Duration elapsed) {
    long now = System.nanoTime();
    if (size == times.length) {
      times = Arrays.copyOf(times, size * 2);
      statuses = Arrays.copyOf(statuses, size * 2 * masters);
    }
    times[size] = now - elapsed.toNanos();
    int n = Math.min(masters, outcomes.size());
    for (int i = 0; i < n; i++) {
      Status status = outcomes.get(i).status();
      statuses[size * masters + i] = (byte) status.ordinal();
      if (votes(status)) {
        live.voted(i, now);
      }
    }
    for (int i = n; i < masters; i++) {
      statuses[size * masters + i] = (byte) Status.PENDING.ordinal();
    }
    size++;
  }

  /** Whether a master's answer is a vote that counts: it granted, or said whose the key is. */
  static boolean votes(Status status) {
    return status == Status.GRANTED || status == Status.TAKEN || status == Status.GONE;
  }

  /** What was recorded, with times relative to {@code start}. */
  synchronized Rounds rounds(long start) {
    long[] relative = new long[size];
    for (int i = 0; i < size; i++) {
      relative[i] = times[i] - start;
    }
    return new Rounds(masters, relative, Arrays.copyOf(statuses, size * masters));
  }

  /**
   * Acquire rounds: round {@code r} began at {@code times[r]} (nanoseconds since the start;
   * negative before it) and master {@code m} (from 0) answered {@code status(r, m)}.
   */
  static final class Rounds {
    private final int masters;
    private final long[] times;
    private final byte[] statuses;

    Rounds(int masters, long[] times, byte[] statuses) {
      this.masters = masters;
      this.times = times;
      this.statuses = statuses;
      if (statuses.length != times.length * masters) {
        throw new IllegalArgumentException("statuses do not fit " + times.length + " rounds");
      }
    }

    int size() {
      return times.length;
    }

    long time(int round) {
      return times[round];
    }

    Status status(int round, int master) {
      return STATUSES[statuses[round * masters + master]];
    }
  }

  /**
   * What the progress line reads while the workers run: acquisitions, refused rounds and, per
   * master, when it last voted. Thread-safe.
   */
  static final class Live {
    private final LongAdder acquisitions = new LongAdder();
    private final LongAdder refused = new LongAdder();
    private final AtomicLongArray lastVote;

    Live(int masters) {
      lastVote = new AtomicLongArray(masters);
      long never = System.nanoTime() - Duration.ofDays(1).toNanos();
      for (int i = 0; i < masters; i++) {
        lastVote.set(i, never);
      }
    }

    void voted(int master, long now) {
      lastVote.lazySet(master, now);
    }

    void acquired() {
      acquisitions.increment();
    }

    void refusedRound() {
      refused.increment();
    }

    long acquisitions() {
      return acquisitions.sum();
    }

    /** tryAcquire rounds refused because another worker held the lock. */
    long refused() {
      return refused.sum();
    }

    int masters() {
      return lastVote.length();
    }

    /** How many masters voted in some round since {@code since} (nanoTime). */
    int votedSince(long since) {
      int up = 0;
      for (int i = 0; i < lastVote.length(); i++) {
        if (lastVote.get(i) - since >= 0) {
          up++;
        }
      }
      return up;
    }
  }
}
