package dev.redlock.spring;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * Every leadership grant and revocation of a run, on one monotonic clock, and the check that no two
 * leadership windows overlapped, the way the chaos suite's mutual-exclusion checker checks lease
 * windows: a window runs from a candidate's grant to its next revocation (or on for ever if none
 * came), and a grant while another candidate's window is open is a violation.
 *
 * <p>Events are stamped and appended under one lock, so the order of the list is the order of the
 * clock. Thread-safe; waiters are woken by each event.
 */
final class LeadershipHistory {

  enum Kind {
    GRANTED,
    REVOKED
  }

  record Event(String candidate, Kind kind, long nanos) {}

  /** A candidate's leadership: from its grant to its revocation ({@code Long.MAX_VALUE}: never). */
  record Window(String candidate, long grantedNanos, long revokedNanos) {
    boolean open() {
      return revokedNanos == Long.MAX_VALUE;
    }

    long lengthNanos() {
      return revokedNanos - grantedNanos;
    }
  }

  /** A grant to {@code second} while {@code first}'s window was still open. */
  record Violation(Window first, Window second) {
    @Override
    public String toString() {
      return second.candidate()
          + " was granted while "
          + first.candidate()
          + " led "
          + (first.open()
              ? "and never revoked"
              : String.format(
                  "until %.1f ms later", (first.revokedNanos() - second.grantedNanos()) / 1e6));
    }
  }

  private final LongSupplier clock;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final List<Event> events = new ArrayList<>(); // guarded by lock

  LeadershipHistory() {
    this(System::nanoTime);
  }

  LeadershipHistory(LongSupplier clock) {
    this.clock = clock;
  }

  void granted(String candidate) {
    record(candidate, Kind.GRANTED);
  }

  void revoked(String candidate) {
    record(candidate, Kind.REVOKED);
  }

  private void record(String candidate, Kind kind) {
    lock.lock();
    try {
      events.add(new Event(candidate, kind, clock.getAsLong()));
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  List<Event> events() {
    lock.lock();
    try {
      return List.copyOf(events);
    } finally {
      lock.unlock();
    }
  }

  /** The candidate leading now, by the events so far; empty if none. */
  Optional<String> leader() {
    List<Window> windows = windows();
    return windows.stream().filter(Window::open).map(Window::candidate).findFirst();
  }

  /**
   * Waits until some candidate leads.
   *
   * @return the leader, or empty if none led within {@code timeoutNanos}
   */
  Optional<String> awaitLeader(long timeoutNanos) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutNanos;
    lock.lock();
    try {
      while (true) {
        Optional<String> leader = leader();
        if (leader.isPresent()) {
          return leader;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return Optional.empty();
        }
        changed.awaitNanos(left);
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits until some candidate, whichever it is, is granted at or after {@code sinceNanos}: the
   * next leader, which may be the one that led before.
   *
   * @return that grant, or empty if none came within {@code timeoutNanos}
   */
  Optional<Event> awaitNextGrant(long sinceNanos, long timeoutNanos) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutNanos;
    lock.lock();
    try {
      while (true) {
        for (Event event : events) {
          if (event.kind() == Kind.GRANTED && event.nanos() - sinceNanos >= 0) {
            return Optional.of(event);
          }
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return Optional.empty();
        }
        changed.awaitNanos(left);
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits until {@code candidate}'s last event is a revocation.
   *
   * @return that revocation; empty at once if the candidate has no events, or once {@code
   *     timeoutNanos} passed with it still leading
   */
  Optional<Event> awaitRevoked(String candidate, long timeoutNanos) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutNanos;
    lock.lock();
    try {
      while (true) {
        Event last = null;
        for (Event event : events) {
          if (event.candidate().equals(candidate)) {
            last = event;
          }
        }
        if (last == null) {
          return Optional.empty();
        }
        if (last.kind() == Kind.REVOKED) {
          return Optional.of(last);
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return Optional.empty();
        }
        changed.awaitNanos(left);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Every window, in the order of their grants. */
  List<Window> windows() {
    return windows(events());
  }

  /**
   * Every grant that came while another candidate's window was open, found by replaying the events
   * in the order they were recorded (which is the clock's order).
   */
  List<Violation> violations() {
    List<Event> events = events();
    List<Window> windows = windows(events);
    List<Violation> found = new ArrayList<>();
    List<Window> open = new ArrayList<>();
    int next = 0; // the next window, in grant order
    for (Event event : events) {
      if (event.kind() == Kind.GRANTED) {
        Window granted = windows.get(next++);
        for (Window leading : open) {
          found.add(new Violation(leading, granted));
        }
        open.add(granted);
      } else {
        open.removeIf(window -> window.candidate().equals(event.candidate()));
      }
    }
    return found;
  }

  static List<Window> windows(List<Event> events) {
    List<Window> windows = new ArrayList<>();
    Map<String, Long> openSince = new HashMap<>();
    Map<String, Integer> openAt = new HashMap<>(); // index in windows of an open window
    for (Event event : events) {
      switch (event.kind()) {
        case GRANTED -> {
          if (openSince.containsKey(event.candidate())) {
            throw new IllegalStateException(event.candidate() + " granted twice: " + events);
          }
          openSince.put(event.candidate(), event.nanos());
          openAt.put(event.candidate(), windows.size());
          windows.add(new Window(event.candidate(), event.nanos(), Long.MAX_VALUE));
        }
        case REVOKED -> {
          Long since = openSince.remove(event.candidate());
          if (since != null) {
            windows.set(
                openAt.remove(event.candidate()),
                new Window(event.candidate(), since, event.nanos()));
          }
        }
      }
    }
    return windows;
  }

  static double millis(long nanos) {
    return nanos / (double) TimeUnit.MILLISECONDS.toNanos(1);
  }
}
