package dev.redlock.internal.transport;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.channels.ClosedSelectorException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who selects a {@link SelectorLoop}: the <em>leader</em>, a caller waiting for its round or the
 * loop's own thread; the others wait as followers. Both sides of the hand-over live here: the
 * callers' ({@link #await}) and the loop's thread's ({@link #leadUntilHandedOver}, {@link
 * #awaitQuietCallers}).
 *
 * <p>A caller whose round waits on plaintext masters ({@link #await}) leads the selector itself
 * when no one else does: it reads its own replies, and the replies of every other round that arrive
 * meanwhile, and stops leading once its round is decided. A caller that runs rounds one after
 * another is then never woken by another thread, as a hand-written client that reads its own
 * sockets is not. Other callers wait as followers, parked: the leader's reads decide their rounds
 * and unpark them. A leader that stops hands the selector to a lone follower; to the loop's thread
 * when several wait, since under contention one thread that reads for everyone, without handing the
 * selector on after every round, serves more rounds per second. A virtual thread never leads (a
 * blocking select would hold its carrier); it follows.
 *
 * <p>The loop's own thread leads when no caller does, so that what arrives between rounds (the
 * replies a round was decided without, renewals, a connection closed by the master) is read within
 * {@link #LAG_NANOS} or so. A lone caller that finds it leading asks it to hand over (a flag and
 * {@link java.nio.channels.Selector#wakeup()}); it takes the selector back only after callers have
 * left it alone for a whole {@link #LAG_NANOS}, or at once when work is handed to the loop ({@link
 * SelectorLoop#execute}) while no one leads. Leadership is one atomic reference, taken by
 * compare-and-set and given back by a volatile write, so whatever one leader did happens before
 * what the next does: the loop's state marked "the leader's" (its timers, the links' read side) is
 * the current leader's, whichever thread that is.
 */
final class Leadership {

  /**
   * What leadership asks of its loop ({@link SelectorLoop}): its thread, its selector, its timers.
   * The seam through which a test drives the hand-over alone (LeadershipLincheckIT).
   */
  interface Loop {
    /** The loop's own thread. */
    Thread thread();

    /** Whether the loop is stopping. */
    boolean stopping();

    /** Makes the leader's select return. */
    void wakeSelector();

    /** Nanoseconds until the next timer is due, or a negative number for none. */
    long untilNextTimer();

    /** Selects for at most {@code waitNanos} (0: until woken), and handles what is ready. */
    void select(long waitNanos) throws IOException;

    /** After a select: runs the timers due and the work handed to the loop. */
    void afterSelect();

    /** Throws the failure a test injected into the loop's thread, if any. */
    void throwInjected() throws IOException;
  }

  private static final Logger log = LoggerFactory.getLogger(Leadership.class);

  /**
   * How long callers must leave the selector alone before the loop's thread takes it back, and so
   * about how late a reply that arrives between rounds may be read.
   */
  static final long LAG_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** Whether this JVM has virtual threads ({@code Thread.isVirtual()}, Java 21 and later). */
  private static final MethodHandle IS_VIRTUAL = isVirtualHandle();

  private final Loop loop;
  private final Ticker ticker;
  private final Runnable wakeSelector; // made once: handed to every round a leader selects for

  /** The thread that may select now, or null. */
  private final AtomicReference<Thread> leader = new AtomicReference<>();

  /** Callers waiting for a round on this selector while another thread leads it. */
  private final ConcurrentLinkedQueue<Thread> followers = new ConcurrentLinkedQueue<>();

  /** How many {@link #followers} there are (the queue's size() is not constant-time). */
  private final AtomicInteger followerCount = new AtomicInteger();

  /** A caller asked the loop's thread to hand the selector over. */
  private volatile boolean handover;

  /** Work was handed to the loop while no one led: its thread should lead at once. */
  private volatile boolean urgent;

  /** How many times a caller took the selector; the loop's thread waits for it to stand still. */
  private volatile long callerLeads;

  Leadership(SelectorLoop loop, Ticker ticker) {
    this(
        new Loop() {
          @Override
          public Thread thread() {
            return loop.thread();
          }

          @Override
          public boolean stopping() {
            return loop.stopping();
          }

          @Override
          public void wakeSelector() {
            loop.wakeSelector();
          }

          @Override
          public long untilNextTimer() {
            return loop.untilNextTimer();
          }

          @Override
          public void select(long waitNanos) throws IOException {
            loop.select(waitNanos);
          }

          @Override
          public void afterSelect() {
            loop.afterSelect();
          }

          @Override
          public void throwInjected() throws IOException {
            loop.throwInjected();
          }
        },
        ticker);
  }

  /** Leadership of {@code loop}, on {@code ticker}'s time. */
  Leadership(Loop loop, Ticker ticker) {
    this.loop = loop;
    this.ticker = ticker;
    this.wakeSelector = loop::wakeSelector;
  }

  /** Whether {@code thread} leads the selector now. */
  boolean leads(Thread thread) {
    return leader.get() == thread;
  }

  /** Whether no one leads the selector now. */
  boolean vacant() {
    return leader.get() == null;
  }

  /** Takes the selector for {@code thread} if no one leads it; returns whether it did. */
  boolean take(Thread thread) {
    return leader.compareAndSet(null, thread);
  }

  /** The leader gives the selector back: whatever it did happens before what the next one does. */
  void giveBack() {
    leader.set(null);
  }

  /** Has the loop's thread lead at once: work was handed to the loop while no one led. */
  void urge() {
    urgent = true;
    LockSupport.unpark(loop.thread());
  }

  /** As {@link #urge}, for a loop's thread not started yet: it leads as soon as it runs. */
  void urgeOnStart() {
    urgent = true;
  }

  /**
   * Waits until {@code round} is decided or {@code deadlineNanos} passes, leading the selector
   * whenever no one else does (see the class comment); the caller then freezes the count. Not
   * interruptible; an interrupt is kept pending for the caller.
   */
  void await(AwaitedRound round, long deadlineNanos) {
    Thread me = Thread.currentThread();
    if (me == loop.thread() || isVirtual(me)) {
      if (leader.get() == null) {
        urge(); // someone must read this round's replies: the loop's thread, at once
      }
      round.awaitDecision(deadlineNanos);
      return;
    }
    boolean interrupted = false;
    boolean following = false;
    round.waitOn(me);
    try {
      while (!round.decided() && !loop.stopping()) {
        long left = deadlineNanos - ticker.read();
        if (left <= 0) {
          break;
        }
        if (leader.compareAndSet(null, me)) {
          if (following) {
            unfollow(me);
            following = false;
          }
          callerLeads++; // only a leader writes it
          try {
            interrupted |= lead(round, deadlineNanos);
          } finally {
            leader.set(null);
            passOn();
          }
          break;
        }
        if (!following) {
          followers.add(me);
          followerCount.incrementAndGet();
          following = true;
          continue; // look at the leader again: it may have left before we were listed
        }
        if (leader.get() == loop.thread() && followerCount.get() == 1) {
          handover = true; // a lone caller: it reads faster itself; callers in numbers do not
          loop.wakeSelector();
        }
        LockSupport.parkNanos(round, left);
        if (Thread.interrupted()) {
          interrupted = true;
        }
      }
    } finally {
      if (following) {
        unfollow(me);
        if (leader.get() == null) {
          passOn(); // we may have been woken to lead and are leaving instead
        }
      }
      if (interrupted) {
        me.interrupt();
      }
    }
  }

  /**
   * Selects, as the leader, until {@code round} is decided, its deadline passes or the loop stops.
   * Returns whether the caller was interrupted meanwhile (the interrupt is cleared here, or every
   * select would return at once).
   */
  private boolean lead(AwaitedRound round, long deadlineNanos) {
    boolean interrupted = false;
    try {
      while (!loop.stopping()) {
        long left = deadlineNanos - ticker.read();
        if (left <= 0) {
          return interrupted;
        }
        long untilTimer = loop.untilNextTimer();
        round.selecting(wakeSelector);
        try {
          if (round.decided()) {
            return interrupted;
          }
          if (Thread.interrupted()) {
            interrupted = true;
          }
          loop.select(untilTimer < 0 ? left : Math.min(left, untilTimer));
        } finally {
          round.selecting(null);
        }
        loop.afterSelect();
        if (round.decided()) {
          return interrupted;
        }
      }
    } catch (IOException | ClosedSelectorException e) {
      log.debug("selecting for a round: {}", e.toString()); // the loop's thread will see it too
      LockSupport.unpark(loop.thread());
    }
    return interrupted;
  }

  private void unfollow(Thread me) {
    followers.remove(me);
    followerCount.decrementAndGet();
  }

  /**
   * After a caller stopped leading: a lone follower leads next; several are better served by the
   * loop's thread, which reads for all of them without handing the selector on after every round.
   */
  private void passOn() {
    int waiting = followerCount.get();
    if (waiting == 1) {
      wakeFollower();
    } else if (waiting > 1) {
      urge();
    }
  }

  /** Unparks the first waiting follower, which leads next if its round is still undecided. */
  void wakeFollower() {
    Thread next = followers.peek();
    if (next != null) {
      LockSupport.unpark(next);
    }
  }

  /** Wakes every follower: one leads, the others see who does. */
  void unparkFollowers() {
    for (Thread follower : followers) {
      LockSupport.unpark(follower);
    }
  }

  /** Selects until a caller asks for the selector or the loop stops. */
  void leadUntilHandedOver() throws IOException {
    urgent = false;
    while (!loop.stopping() && !(handover && followerCount.get() <= 1)) {
      loop.throwInjected();
      loop.select(loop.untilNextTimer());
      loop.afterSelect();
    }
    handover = false;
  }

  /**
   * Parks while callers lead, until they have left the selector alone for a whole {@link
   * #LAG_NANOS} (or work was handed to the loop while no one leads, or it stops).
   */
  void awaitQuietCallers() throws IOException {
    while (!loop.stopping()) {
      long seen = callerLeads;
      if (leader.get() == null && urgent) {
        return;
      }
      LockSupport.parkNanos(loop, LAG_NANOS);
      Thread.interrupted(); // the loop's thread is never interrupted on purpose
      loop.throwInjected();
      if (leader.get() == null && (urgent || callerLeads == seen)) {
        return;
      }
    }
  }

  /**
   * Waits (briefly: leaders see the loop stopping at their next wake-up) to lead for good; the
   * loop's thread, as the loop stops.
   */
  void takeLeadForGood() {
    Thread me = Thread.currentThread();
    loop.wakeSelector();
    long giveUp = ticker.read() + TimeUnit.SECONDS.toNanos(1);
    while (!leader.compareAndSet(null, me) && leader.get() != me) {
      if (ticker.read() - giveUp > 0) {
        log.debug("a caller still leads the selector as the loop stops");
        return;
      }
      loop.wakeSelector();
      LockSupport.parkNanos(loop, TimeUnit.MICROSECONDS.toNanos(100));
    }
  }

  private static boolean isVirtual(Thread t) {
    if (IS_VIRTUAL == null) {
      return false;
    }
    try {
      return (boolean) IS_VIRTUAL.invokeExact(t);
    } catch (Throwable e) {
      return false;
    }
  }

  private static MethodHandle isVirtualHandle() {
    try {
      return MethodHandles.publicLookup()
          .findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
    } catch (ReflectiveOperationException e) {
      return null; // Java 17 to 20: no virtual threads
    }
  }
}
