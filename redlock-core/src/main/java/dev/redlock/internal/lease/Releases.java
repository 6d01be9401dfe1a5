package dev.redlock.internal.lease;

import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Vote;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finishes releases on every master that may hold the key, after the round that the caller waited
 * for was decided by a majority.
 *
 * <p>What a release guarantees, and how. The caller's round ({@link Masters#freed}) returns once a
 * majority answered: then no majority holds the key for the lease, and no other client can be kept
 * out by it beyond that. The other masters are sent the same compare-and-delete, and this class
 * sees each one through:
 *
 * <ul>
 *   <li><b>Late answers are told.</b> Every master's final answer reaches the listener ({@link
 *       Listener#releaseCompleted}) on the event thread, once all are in; to a listener that does
 *       not hear that call ({@link Listener#hearsReleaseCompleted}), nothing is handed.
 *   <li><b>A release that failed or was dropped is sent again</b> (a refused connection, the byte
 *       cap, a link dropped with the release in flight), after 100 ms and then doubling to 1 s, so
 *       it goes out once the master's link is back. The release is its lease's last command and
 *       compare-and-delete of a token no one else has, so sending it again is harmless whenever it
 *       arrives. Only masters that may hold the key are retried: those whose acquire granted, had
 *       not answered when the round was decided, or was lost in flight; a master that answered
 *       TAKEN, or never got the acquire, holds nothing of ours.
 *   <li><b>An acquire that may still run is followed by a second release.</b> When the connection
 *       an acquire was written on is dropped unanswered ({@link
 *       NodeUnavailableException#mayHaveRun}), its bytes may still reach the master and run after
 *       the release that went out on the next connection, leaving an orphan key until its TTL. So
 *       once that release is answered, one more is sent: the master has by then run an event-loop
 *       pass that read the new connection, and any bytes of the old one that had reached it before
 *       were read in the same pass or earlier.
 *   <li><b>Bounded.</b> Nothing is retried past the moment every key of the lease must have expired
 *       anyway ({@code keysExpireByNanos}: the last acquire or extend sent, plus its TTL stretched
 *       for drift), nor after the RedLock closes; at most {@value #MAX_PENDING} releases are
 *       followed at once (beyond that one is sent once, as before), and the retry thread ({@code
 *       redlock-releases-N}) exists only while some are.
 * </ul>
 */
final class Releases implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Releases.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** The most releases followed to the end at once. */
  static final int MAX_PENDING = 10_000;

  /** The first retry's delay; each next one doubles, up to {@link #MAX_RETRY_NANOS}. */
  static final long FIRST_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /** The longest delay between two retries. */
  static final long MAX_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** What a release sends to one master: the command, given the time it is sent at. */
  @FunctionalInterface
  interface Send extends BiFunction<NodeClient, Long, CompletableFuture<NodeReply>> {}

  private final Masters masters;
  private final Events events;
  private final Ticker ticker;
  private final ReentrantLock lock = new ReentrantLock();
  private final Timing.Timers timers;
  private ScheduledExecutorService retries; // guarded by lock; created on first use
  private boolean closed; // guarded by lock
  private final Set<Job> following = new HashSet<>(); // guarded by lock: jobs awaiting a retry

  Releases(Masters masters, Events events, Timing.Timers timers) {
    this.masters = masters;
    this.events = events;
    this.ticker = masters.ticker();
    this.timers = timers;
  }

  /**
   * A release ({@code command}: the release or shorten script of one key and token), to send to
   * every master through {@link Job#send} (a round's call); the rest is followed here. {@code
   * resource} is the lease's, whose final answers the listener hears, or null for the cleanup of a
   * failed acquire or a lost lease.
   */
  Job start(String resource, Landing landing, long keysExpireByNanos, Send command) {
    return new Job(resource, landing, keysExpireByNanos, command);
  }

  /**
   * Sends the compare-and-delete release without waiting, and follows it, to every master where the
   * acquire may have set the key: the cleanup of a failed acquire or a lost lease, which tells no
   * waiting client ({@link NodeClient#releaseQuietly}). A master the acquire certainly left nothing
   * on ({@link Landing#leftNothing}: it refused, or was never asked) is sent nothing: a waiter's
   * round refused at its gate then costs no release at all, where it cost one on every master (with
   * many waiters polling, most of the commands sent).
   */
  void releaseAll(LockKey key, byte[] token, Landing landing, long keysExpireByNanos) {
    Job job =
        start(
            null,
            landing,
            keysExpireByNanos,
            (node, now) -> node.send(Command.releaseQuietly(key, token)));
    List<NodeClient> nodes = masters.nodes();
    for (int i = 0; i < nodes.size(); i++) {
      if (landing.leftNothing(i)) {
        job.holdsNothing(i);
      } else {
        job.send(nodes.get(i), i);
      }
    }
  }

  /**
   * Sends {@code command} (a release) to every master without waiting, and follows it, as {@link
   * #releaseAll(byte[], byte[], Landing, long)} does.
   */
  void releaseAll(Landing landing, long keysExpireByNanos, Send command) {
    Job job = start(null, landing, keysExpireByNanos, command);
    List<NodeClient> nodes = masters.nodes();
    for (int i = 0; i < nodes.size(); i++) {
      job.send(nodes.get(i), i);
    }
  }

  /** Stops retrying: every release still followed ends now, its open masters FAILED. */
  @Override
  public void close() {
    List<Job> ending;
    ScheduledExecutorService stopping;
    lock.lock();
    try {
      closed = true;
      ending = new ArrayList<>(following);
      following.clear();
      stopping = retries;
    } finally {
      lock.unlock();
    }
    if (stopping != null) {
      stopping.shutdownNow();
    }
    for (Job job : ending) {
      job.abandon(CLOSED);
    }
  }

  private static final String CLOSED = "the RedLock was closed first";

  /**
   * Runs {@code task} after {@code delayNanos} on the retry thread, unless closed: a short check
   * that follows a release (its gate's answer, see the lease layer's Leases). Never blocks long.
   *
   * @param task the check
   * @param delayNanos when
   */
  void later(Runnable task, long delayNanos) {
    lock.lock();
    try {
      if (!closed) {
        executor().schedule(task, delayNanos, TimeUnit.NANOSECONDS);
      }
    } catch (RejectedExecutionException e) {
      // closing: the waiters' timers end their waits
    } finally {
      lock.unlock();
    }
  }

  /** The retry thread's executor, made at the first use; under lock. */
  private ScheduledExecutorService executor() {
    if (retries == null) {
      int number = THREADS.incrementAndGet();
      retries = timers.start("redlock-releases-" + number, true);
    }
    return retries;
  }

  /**
   * Runs {@code task} after {@code delayNanos} on the retry thread, the job then being followed;
   * returns why not (closed, or {@value #MAX_PENDING} releases followed already), or null. Only a
   * release some master did not answer comes here: the others never touch this lock.
   */
  private String schedule(Job job, Runnable task, long delayNanos) {
    lock.lock();
    try {
      if (closed) {
        return CLOSED;
      }
      if (following.add(job) && following.size() > MAX_PENDING) {
        following.remove(job);
        return "not sent again: " + MAX_PENDING + " releases were being followed already";
      }
      executor().schedule(task, delayNanos, TimeUnit.NANOSECONDS);
      return null;
    } catch (RejectedExecutionException e) {
      following.remove(job);
      return CLOSED;
    } finally {
      lock.unlock();
    }
  }

  /**
   * How many releases are followed now, awaiting a retry: 0 once every one was answered, gave up,
   * or was abandoned. A job that is never finished would hold a place of {@value #MAX_PENDING}
   * until the RedLock closes.
   */
  int followed() {
    lock.lock();
    try {
      return following.size();
    } finally {
      lock.unlock();
    }
  }

  private void done(Job job) {
    lock.lock();
    try {
      following.remove(job);
    } finally {
      lock.unlock();
    }
  }

  /**
   * One release on every master, followed until each has answered or can no longer hold the key. A
   * release every master answers at once costs a few small arrays: outcomes are made only for a
   * listener or a log line.
   */
  final class Job {
    private final String resource;
    private final Landing landing;
    private final long keysExpireByNanos;
    private final Send command;
    private final long startNanos = ticker.read();
    private final ReentrantLock jobLock = new ReentrantLock();
    private final Vote[] votes; // guarded by jobLock: each master's final answer, null while open
    private final long[] answeredAt; // guarded by jobLock
    private String[] details; // guarded by jobLock: made at the first retry, failure or follow-up
    private int[] attempts; // guarded by jobLock: likewise
    private boolean[] followedUp; // guarded by jobLock: likewise
    private boolean followed; // guarded by jobLock: in the following set, awaiting a retry
    private int open; // guarded by jobLock: masters without a final answer

    private Job(String resource, Landing landing, long keysExpireByNanos, Send command) {
      this.resource = resource;
      this.landing = landing;
      this.keysExpireByNanos = keysExpireByNanos;
      this.command = command;
      int n = masters.size();
      this.votes = new Vote[n];
      this.answeredAt = new long[n];
      this.open = n;
    }

    /** Sends the release to master {@code i} (first as a round's call) and follows its answer. */
    CompletableFuture<NodeReply> send(NodeClient node, int i) {
      CompletableFuture<NodeReply> reply;
      try {
        reply = command.apply(node, ticker.read());
      } catch (RuntimeException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      reply.whenComplete((answer, error) -> answered(i, answer, error));
      return reply;
    }

    /** Master {@code i} holds nothing to release: nothing is sent; it counts as gone there. */
    void holdsNothing(int i) {
      boolean last;
      jobLock.lock();
      try {
        if (votes[i] != null) {
          return;
        }
        last = settleLocked(i, Vote.GONE, ticker.read(), null);
      } finally {
        jobLock.unlock();
      }
      if (last) {
        finished();
      }
    }

    /** On whatever thread completed the answer (often an I/O thread): decides, and hands off. */
    private void answered(int i, NodeReply answer, Throwable error) {
      long now = ticker.read();
      boolean again = false;
      boolean retry = false; // a send again after a failure, counted in attempts
      long delay = 0;
      boolean last = false;
      jobLock.lock();
      try {
        if (votes[i] != null) {
          return; // abandoned meanwhile
        }
        if (error == null) {
          if (landing.lostInFlight(i) && !faults().followedUp[i]) {
            followedUp[i] = true; // the acquire may still run there: one more, behind this one
            again = true;
          } else {
            last = settleLocked(i, answer.status(), now, null);
          }
        } else if (landing.mayHaveRun(i) && now - keysExpireByNanos < 0) {
          again = true;
          retry = true;
          delay =
              Math.min(MAX_RETRY_NANOS, FIRST_RETRY_NANOS << Math.min(faults().attempts[i], 10));
        } else {
          last = settleLocked(i, Vote.FAILED, now, describe(error));
        }
        if (again) {
          followed = true;
        }
      } finally {
        jobLock.unlock();
      }
      if (again) {
        NodeClient node = masters.nodes().get(i);
        // Counted when sent, not when planned: a retry the close cancels was never sent.
        Runnable task =
            retry
                ? () -> {
                  sentAgain(i);
                  send(node, i);
                }
                : () -> send(node, i);
        String refused = schedule(this, task, delay);
        if (refused != null) {
          abandon(refused);
        }
      } else if (last) {
        finished();
      }
    }

    /** Counts a send again after a failure to master {@code i}. */
    private void sentAgain(int i) {
      jobLock.lock();
      try {
        faults().attempts[i]++;
      } finally {
        jobLock.unlock();
      }
    }

    /** The arrays only a master that did not answer at once needs; under jobLock. */
    private Job faults() {
      if (attempts == null) {
        int n = votes.length;
        attempts = new int[n];
        followedUp = new boolean[n];
        details = new String[n];
      }
      return this;
    }

    /** Records master {@code i}'s final answer; returns whether it was the last. Under jobLock. */
    private boolean settleLocked(int i, Vote vote, long now, String detail) {
      votes[i] = vote;
      answeredAt[i] = now - startNanos;
      if (detail != null || attempts != null) {
        faults().details[i] = detail;
      }
      return --open == 0;
    }

    /** Ends every master still open as FAILED with {@code why}. */
    void abandon(String why) {
      long now = ticker.read();
      jobLock.lock();
      try {
        if (open == 0) {
          return;
        }
        for (int i = 0; i < votes.length; i++) {
          if (votes[i] == null) {
            settleLocked(i, Vote.FAILED, now, why);
          }
        }
      } finally {
        jobLock.unlock();
      }
      finished();
    }

    private void finished() {
      boolean wasFollowed;
      boolean failed = false;
      jobLock.lock();
      try {
        wasFollowed = followed;
        for (Vote vote : votes) {
          failed |= vote == Vote.FAILED;
        }
      } finally {
        jobLock.unlock();
      }
      if (wasFollowed) {
        done(this);
      }
      boolean tell = resource != null && events.releasesCompletedHeard();
      if (!tell && !(failed && log.isDebugEnabled())) {
        return; // the common case: nobody to tell, nothing to log
      }
      List<Outcome> all = outcomes();
      if (tell) {
        long took = ticker.read() - startNanos;
        events.emitLater(l -> l.releaseCompleted(resource, all, took));
      }
      if (failed && log.isDebugEnabled()) {
        log.debug(
            "release of {} ended incomplete: {}",
            resource == null ? "a key" : Arguments.quote(resource),
            all);
      }
    }

    /** Each master's final answer, with how many sends it took where that was more than one. */
    private List<Outcome> outcomes() {
      jobLock.lock();
      try {
        List<Outcome> all = new ArrayList<>(votes.length);
        for (int i = 0; i < votes.length; i++) {
          String detail = "";
          if (attempts != null) {
            String why = details[i] == null ? "" : details[i];
            String sent =
                (attempts[i] > 0 ? "sent " + (attempts[i] + 1) + " times" : "")
                    + (followedUp[i]
                        ? (attempts[i] > 0 ? ", " : "") + "sent again after a lost acquire"
                        : "");
            detail = why.isEmpty() ? sent : sent.isEmpty() ? why : why + "; " + sent;
          }
          all.add(new Outcome(masters.names().get(i), votes[i], answeredAt[i], detail));
        }
        return List.copyOf(all);
      } finally {
        jobLock.unlock();
      }
    }
  }

  private static String describe(Throwable error) {
    Throwable cause =
        error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    String message = cause.getMessage();
    return cause instanceof NodeUnavailableException && message != null
        ? message
        : cause.getClass().getSimpleName() + (message == null ? "" : ": " + message);
  }
}
