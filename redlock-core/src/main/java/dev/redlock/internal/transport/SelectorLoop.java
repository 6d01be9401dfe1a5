package dev.redlock.internal.transport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.InetAddress;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The I/O of a RedLock's plaintext masters: one NIO {@link Selector} that reads every master's
 * replies, finishes connections, and flushes what a socket did not take at once; selected by one
 * thread at a time, the <em>leader</em>: a caller waiting for its round, or the loop's own thread.
 *
 * <h2>How the work is split between threads</h2>
 *
 * <p>A caller writes its own commands. {@link SelectorNodeClient} puts each command in its master's
 * {@link CommandPipeline} and the {@link SelectorLink} writes it to the non-blocking socket on the
 * caller's thread, so a round costs a caller alone N writes, then it parks; nothing is handed to
 * another thread on the way out. Callers in numbers share writes: a link holds a command back while
 * replies are due on it, and whoever reads them sends all that was held in one write, or the leader
 * does once they are late ({@link Watch}). Only when a socket's buffer is full does the link keep
 * the rest and ask this thread to flush it when the socket is writable ({@code OP_WRITE}): a write
 * never blocks, and the pipeline's cap on unanswered bytes bounds what is kept.
 *
 * <p>The leader does everything that waits: it selects over every master's socket, reads what
 * arrived, decodes the replies ({@link Resp}) and hands each to its pipeline, which completes the
 * command's future. Those futures' callbacks therefore run on the leader and must be short
 * (counting a vote in the lease layer's quorum round, recording a call in a circuit breaker).
 *
 * <h2>Who leads: leader and followers</h2>
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
 * {@link Selector#wakeup()}); it takes the selector back only after callers have left it alone for
 * a whole {@link #LAG_NANOS}, or at once when work is handed to the loop ({@link #execute}) while
 * no one leads. Leadership is one atomic reference, taken by compare-and-set and given back by a
 * volatile write, so whatever one leader did happens before what the next does: the state below
 * that says "the loop's thread only" is the current leader's.
 *
 * <p>Connecting is the other thing that waits. A link registers its socket here and is driven by
 * the socket's readiness: connect, then the handshake (AUTH, SELECT, SCRIPT LOAD) written in one
 * batch and its replies read like any others, all bounded by the node timeout through a timer on
 * this thread ({@link #schedule}). Host names that are not IP literals are resolved on a separate,
 * short-lived thread, so a slow DNS server cannot hold up every master; one lookup per host at a
 * time, which later attempts for that host join, so a resolver that hangs costs one thread per host
 * however often the attempts repeat.
 *
 * <p>Other threads reach the leader only through {@link #execute} (a queue and {@link
 * Selector#wakeup()}) and, when a link needs {@code OP_WRITE}, by changing its key's interest set
 * and waking the selector. Everything else here is confined to the leader: the timers, the
 * handlers' read side, the keys' registration.
 *
 * <h2>When something throws</h2>
 *
 * <p>Whoever leads runs every link's code: its handler, its tasks and timers ({@link #execute},
 * {@link #schedule} name the link they are for) and its {@link Watch}. Whatever one of them throws,
 * {@link Error}s included, drops that link only: it is told {@link Handler#stopped}, so its
 * commands fail and its pipeline opens a new link on the next command; the error is logged once and
 * reported ({@code errors}, the RedLock's listener). The other masters never notice.
 *
 * <p>Should the loop's thread die anyway (something thrown by the selector itself or by the loop's
 * own bookkeeping), it logs the error and starts a new thread before it ends, which leads as soon
 * as no caller does, checks the selector and then reports the error. It keeps the selector, and
 * with it every link, if that selector still selects: an error thrown around a select leaves the
 * JDK's selector consistent but for an interest change it may have lost, which the links' own
 * timeouts (the attempt's timeout, the pipeline's stall limit) end. A selector whose select failed
 * ({@link IOException}, or it was closed) is not trusted again: every registered link is told it
 * stopped and a fresh selector takes its place, so the links reconnect once. Callers that waited as
 * followers are woken and lead themselves until the new thread leads. Takeovers come at most once
 * per {@link #TAKEOVER_PAUSE_NANOS}; if no thread can be started, or no selector opened, the loop
 * stops for good.
 *
 * <p>{@link #close} stops the thread with a bounded wait; when it stops for good, for any reason,
 * every link still registered is told, so its commands fail rather than wait forever, and later
 * connection attempts fail at once.
 */
public final class SelectorLoop {

  private static final Logger log = LoggerFactory.getLogger(SelectorLoop.class);

  private static final AtomicInteger LOOPS = new AtomicInteger();

  /** A resolver thread with nothing to resolve stops after this long. */
  private static final long RESOLVER_IDLE_SECONDS = 10;

  /**
   * How long callers must leave the selector alone before the loop's thread takes it back, and so
   * about how late a reply that arrives between rounds may be read.
   */
  static final long LAG_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** How often, at least, the leader looks at the {@link Watch}es while there are any. */
  static final long WATCH_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /**
   * After a takeover, the next one waits this long before its thread leads: an error that recurs at
   * once costs one thread and one report per second, not a spin. Callers lead meanwhile.
   */
  static final long TAKEOVER_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** Whether this JVM has virtual threads ({@code Thread.isVirtual()}, Java 21 and later). */
  private static final MethodHandle IS_VIRTUAL = isVirtualHandle();

  /**
   * Something the leader looks at after every select, and at least every millisecond, until it
   * answers that it is done: a link holding callers' bytes back until replies arrive, which sends
   * them if the replies are overdue (see {@link SelectorLink#kick}). A watch is always a link's
   * own: one that throws is told {@link Handler#stopped}, as its handler would be.
   */
  interface Watch extends Handler {

    /** Looks again at {@code nowNanos}; returns true when it needs no more looks. */
    boolean check(long nowNanos);
  }

  /**
   * A link as the loop sees it: what the selector tells when its channel is ready, and the owner of
   * the tasks and timers it hands in. Runs on whichever thread leads.
   */
  interface Handler {

    /** The channel is ready for {@code readyOps} (connect, read, write). */
    void ready(int readyOps);

    /**
     * The loop stopped, or this link's handler, task, timer or watch threw: its channel will get no
     * more events.
     */
    void stopped(String reason);
  }

  /** Looks a host name up: every address it has. {@link InetAddress#getAllByName}, or a fake. */
  @FunctionalInterface
  public interface HostLookup {
    /**
     * Looks {@code host} up, on a resolver thread.
     *
     * @param host a host name, not an IP literal
     * @return every address it has
     * @throws IOException if it cannot be resolved
     */
    InetAddress[] lookUp(String host) throws IOException;
  }

  /**
   * A caller's round as the selector sees it: decided by replies that whoever leads reads (the
   * lease layer's quorum round is one). The selector never freezes it; its caller does, after
   * {@link #await}.
   */
  public interface Awaited {

    /**
     * Returns whether the round is decided.
     *
     * @return true once decided, by answers or by being frozen
     */
    boolean decided();

    /**
     * Names the thread that waits for the round: it is unparked when the round is decided.
     *
     * @param waiter the waiting thread
     */
    void waitOn(Thread waiter);

    /**
     * Says that the waiter is about to select on {@code loop} (or, with null, that it stopped): a
     * decision made by another thread then also wakes the selector ({@link #wakeSelector}).
     *
     * @param loop the selector the waiter selects on, or null
     */
    void selecting(SelectorLoop loop);

    /**
     * Parks the calling thread until the round is decided or {@code deadlineNanos} passes, without
     * selecting: for a thread that must not lead. Not interruptible; an interrupt is kept pending.
     *
     * @param deadlineNanos the deadline, on the round's ticker
     */
    void awaitDecision(long deadlineNanos);
  }

  private final Ticker ticker;
  private final BiConsumer<String, Throwable> errors;
  private final HostLookup lookup;
  private final int number;
  private final ThreadPoolExecutor resolver;
  private final ConcurrentLinkedQueue<Task> tasks = new ConcurrentLinkedQueue<>();
  private final PriorityQueue<Timer> timers = new PriorityQueue<>(); // the leader's
  private final ConcurrentLinkedQueue<Watch> newWatches = new ConcurrentLinkedQueue<>();
  private final List<Watch> watches = new ArrayList<>(); // the leader's
  private final Consumer<SelectionKey> dispatch = this::dispatch;
  private volatile boolean stopping;
  private long timerSequence; // the leader's

  /**
   * The hosts being looked up, each with the attempts waiting for its lookup (the leader's). A host
   * stays here until its lookup returns, even once no attempt waits: a later one joins it rather
   * than start another.
   */
  private final Map<String, List<Waiter>> lookups = new HashMap<>();

  /**
   * The selector; replaced only by a takeover whose old selector failed, while the new thread leads
   * (see the class comment), so whoever leads selects on the current one.
   */
  private volatile Selector selector;

  /** The loop's own thread; replaced by a takeover before the old one ends. */
  private volatile Thread thread;

  /** How many threads the loop has had; names the next one. */
  private int threads = 1; // the loop's thread only

  /** When the last takeover was, or 0; the dying thread's. */
  private long lastTakeoverNanos;

  /** For tests ({@link #failThreadForTest}): thrown next by the loop's own thread. */
  private volatile Throwable injected;

  /** How many callers are inside a round on this loop now ({@link #enterRound}). */
  private final AtomicInteger inRounds = new AtomicInteger();

  /** The thread that may select now, or null. */
  private final AtomicReference<Thread> leader = new AtomicReference<>();

  /** Callers waiting for a round on this selector while another thread leads it. */
  private final ConcurrentLinkedQueue<Thread> followers = new ConcurrentLinkedQueue<>();

  /** How many {@link #followers} there are (the queue's size() is not constant-time). */
  private final AtomicInteger followerCount = new AtomicInteger();

  /**
   * The leader is in (or about to enter) a select that may last longer than {@link #WATCH_NANOS}: a
   * new watch wakes it. Set before the leader looks for watches, and a watch is listed before it
   * reads this, so one of the two sees the other.
   */
  private volatile boolean selectingLong;

  /** A caller asked the loop's thread to hand the selector over. */
  private volatile boolean handover;

  /** Work was handed to the loop while no one led: its thread should lead at once. */
  private volatile boolean urgent;

  /** How many times a caller took the selector; the loop's thread waits for it to stand still. */
  private volatile long callerLeads;

  /** A loop whose internal errors are only logged, with the system's host lookup: for tests. */
  SelectorLoop() {
    this((where, error) -> {}, InetAddress::getAllByName);
  }

  /**
   * Opens the selector and starts its thread. Its timers run on the system ticker whatever the
   * RedLock's: they bound real sockets.
   *
   * @param errors told of every error the loop recovered from: where (what failed, and whose) and
   *     the error; on the thread that met it, or for a thread that died, on the one that took over.
   *     Must return at once and not throw
   * @param lookup how host names are looked up, on a resolver thread
   * @throws UncheckedIOException if the selector cannot be opened
   */
  public SelectorLoop(BiConsumer<String, Throwable> errors, HostLookup lookup) {
    this.ticker = Ticker.system();
    this.errors = errors;
    this.lookup = lookup;
    try {
      this.selector = Selector.open();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open a selector", e);
    }
    this.number = LOOPS.incrementAndGet();
    Thread first = new Thread(() -> run(null), "redlock-io-selector-" + number);
    first.setDaemon(true);
    this.thread = first;
    AtomicInteger resolvers = new AtomicInteger();
    // No bound here: one lookup per host at a time (resolve) bounds the threads by the hosts.
    this.resolver =
        new ThreadPoolExecutor(
            0,
            Integer.MAX_VALUE,
            RESOLVER_IDLE_SECONDS,
            TimeUnit.SECONDS,
            new SynchronousQueue<>(),
            task -> {
              Thread t =
                  new Thread(
                      task, "redlock-io-resolver-" + number + "-" + resolvers.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    first.start();
  }

  /** Whether the calling thread leads the selector now (the loop's thread or a caller). */
  boolean inLoop() {
    return leader.get() == Thread.currentThread();
  }

  /** As {@link #execute(Handler, Runnable)}, for a task that is no link's. */
  boolean execute(Runnable task) {
    return execute(null, task);
  }

  /**
   * Runs {@code task} on the loop's thread (or whoever leads), soon. If it throws, {@code owner}
   * (the link it is for, or null) is dropped. Returns false, and never runs it, once the loop is
   * stopping.
   */
  boolean execute(Handler owner, Runnable task) {
    if (stopping) {
      return false;
    }
    Task queued = new Task(owner, task);
    tasks.add(queued);
    if (stopping && tasks.remove(queued)) {
      return false; // close() may have drained the queue already
    }
    wakeup();
    return true;
  }

  /**
   * Makes a blocked select return, after another thread changed a key's interest set or queued a
   * task; if no one leads, has the loop's thread lead at once.
   */
  void wakeup() {
    if (inLoop()) {
      return;
    }
    selector.wakeup();
    if (leader.get() == null) {
      urgent = true;
      LockSupport.unpark(thread);
    }
  }

  /** Makes the leader's select return: a round it waits for was decided by another thread. */
  public void wakeSelector() {
    selector.wakeup();
  }

  /**
   * Waits until {@code round} is decided or {@code deadlineNanos} passes, leading the selector
   * whenever no one else does (see the class comment); the caller then freezes the count. Not
   * interruptible; an interrupt is kept pending for the caller.
   *
   * @param round the round the calling thread waits for
   * @param deadlineNanos when to stop waiting, on the system ticker
   */
  public void await(Awaited round, long deadlineNanos) {
    Thread me = Thread.currentThread();
    if (me == thread || isVirtual(me)) {
      if (leader.get() == null) {
        urgent = true; // someone must read this round's replies: the loop's thread, at once
        LockSupport.unpark(thread);
      }
      round.awaitDecision(deadlineNanos);
      return;
    }
    boolean interrupted = false;
    boolean following = false;
    round.waitOn(me);
    try {
      while (!round.decided() && !stopping) {
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
        if (leader.get() == thread && followerCount.get() == 1) {
          handover = true; // a lone caller: it reads faster itself; callers in numbers do not
          selector.wakeup();
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
  private boolean lead(Awaited round, long deadlineNanos) {
    boolean interrupted = false;
    try {
      while (!stopping) {
        long left = deadlineNanos - ticker.read();
        if (left <= 0) {
          return interrupted;
        }
        long untilTimer = untilNextTimer();
        round.selecting(this);
        try {
          if (round.decided()) {
            return interrupted;
          }
          if (Thread.interrupted()) {
            interrupted = true;
          }
          select(untilTimer < 0 ? left : Math.min(left, untilTimer));
        } finally {
          round.selecting(null);
        }
        afterSelect();
        if (round.decided()) {
          return interrupted;
        }
      }
    } catch (IOException | ClosedSelectorException e) {
      log.debug("selecting for a round: {}", e.toString()); // the loop's thread will see it too
      LockSupport.unpark(thread);
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
      urgent = true;
      LockSupport.unpark(thread);
    }
  }

  /** Unparks the first waiting follower, which leads next if its round is still undecided. */
  private void wakeFollower() {
    Thread next = followers.peek();
    if (next != null) {
      LockSupport.unpark(next);
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

  /** Registers {@code channel} with no interest yet; on the loop's thread only. */
  SelectionKey register(SelectableChannel channel, Handler handler) throws IOException {
    return channel.register(selector, 0, handler);
  }

  /**
   * Has {@code watch} checked by whoever leads, after every select and at least every millisecond
   * while it is not done; a thread that leads picks it up within {@link #LAG_NANOS} or so. Any
   * thread; never blocks.
   */
  void watch(Watch watch) {
    newWatches.add(watch);
    if (selectingLong) {
      selector.wakeup(); // it would not look at the watch for a while
    }
  }

  /**
   * A caller is about to send a round's commands and wait for it (the lease layer's masters);
   * {@link #leaveRound} once it has its answer. Any thread; never blocks.
   */
  public void enterRound() {
    inRounds.incrementAndGet();
  }

  /** The caller of an {@link #enterRound} has its round's answer. */
  public void leaveRound() {
    inRounds.decrementAndGet();
  }

  /**
   * Whether callers in numbers are about: at least two inside a round on this loop, counting the
   * caller that asks. Then a link may hold bytes back for replies due ({@link SelectorLink#kick}):
   * another caller's bytes are likely to join them. A caller alone never waits for that, whoever
   * leads the selector and whatever replies are still due from earlier rounds.
   */
  boolean busy() {
    return inRounds.get() >= 2;
  }

  /**
   * Runs {@code task} on the loop's thread (or whoever leads) {@code delayNanos} from now, or soon
   * after. If it throws, {@code owner} (the link it is for) is dropped. The leader only.
   */
  void schedule(Handler owner, long delayNanos, Runnable task) {
    timers.add(new Timer(ticker.read() + delayNanos, timerSequence++, owner, task));
  }

  /**
   * Looks {@code host} up on a resolver thread, then hands every address it has ({@code
   * InetAddress[]}), or the failure's description, to {@code done} on the loop's thread. A lookup
   * of {@code host} already running is joined, not doubled: at most one per host at a time, however
   * often attempts repeat while a resolver hangs. Until then {@code waiting} is told if the loop
   * stops; {@link #forgetLookup} when it no longer waits. Returns false if the loop is stopping.
   * The leader only.
   */
  boolean resolve(String host, Handler waiting, Consumer<Object> done) {
    List<Waiter> joined = lookups.get(host);
    if (joined == null) {
      try {
        resolver.execute(() -> lookUp(host));
      } catch (RejectedExecutionException e) {
        return false;
      }
      joined = new ArrayList<>(1);
      lookups.put(host, joined);
    } else if (stopping) {
      return false;
    }
    joined.add(new Waiter(waiting, done));
    return true;
  }

  /** {@code waiting} no longer waits for a lookup (its attempt timed out); the leader only. */
  void forgetLookup(Handler waiting) {
    for (List<Waiter> joined : lookups.values()) {
      joined.removeIf(w -> w.handler == waiting);
    }
  }

  /** On a resolver thread: looks {@code host} up and hands the answer to every attempt waiting. */
  private void lookUp(String host) {
    Object result;
    try {
      InetAddress[] all = lookup.lookUp(host);
      result =
          all != null && all.length > 0 ? all : "cannot resolve " + host + ": no address found";
    } catch (IOException | RuntimeException e) {
      result = "cannot resolve " + host + ": " + CommandPipeline.describe(e);
    } catch (Throwable e) {
      log.error("looking up {} failed", host, e); // the host must leave lookups all the same
      report("host lookup of " + host, e);
      result = "cannot resolve " + host + ": " + CommandPipeline.describe(e);
    }
    Object answer = result;
    execute(() -> answered(host, answer)); // if the loop stops instead, it tells the waiting
  }

  /**
   * On the leader: the lookup of {@code host} ended; each attempt still waiting gets the answer.
   */
  private void answered(String host, Object answer) {
    List<Waiter> joined = lookups.remove(host);
    if (joined == null) {
      return;
    }
    for (Waiter waiter : joined) {
      try {
        waiter.done.accept(answer);
      } catch (Throwable e) {
        contain(waiter.handler, "I/O task", e);
      }
    }
  }

  /** Whether {@link #close} was called or the thread stopped for good. */
  boolean stopping() {
    return stopping;
  }

  /** For tests: the keys registered now, each with its link attached. The leader only. */
  Set<SelectionKey> keysForTest() {
    return selector.keys();
  }

  /**
   * For tests: the loop's own thread throws {@code error} (an {@link Error}, a {@link
   * RuntimeException} or an {@link IOException}) where it would select next, as if the selector or
   * the loop itself had failed; a takeover follows (see the class comment).
   */
  void failThreadForTest(Throwable error) {
    injected = error;
    selector.wakeup();
    LockSupport.unpark(thread);
  }

  /**
   * The loop's thread: leads whenever callers leave the selector alone. If something escapes, a new
   * thread takes over ({@link #takeOver}); {@code from}, when this thread is such a takeover, says
   * what ended the thread before it: the selector is checked the first time this one leads, before
   * it is used again, and then the error is reported. On a clean stop, or when no takeover is
   * possible, stops for good.
   */
  private void run(Takeover from) {
    Thread me = Thread.currentThread();
    Throwable failure = null;
    boolean recovered = from == null;
    try {
      if (from != null) {
        pause(from.pauseNanos);
      }
      while (!stopping) {
        if (leader.compareAndSet(null, me)) {
          try {
            if (!recovered) {
              recoverSelector(from.failure);
              recovered = true;
              report("I/O thread " + from.dead, from.failure);
            }
            leadUntilHandedOver();
          } finally {
            leader.set(null);
          }
          wakeFollower();
        }
        awaitQuietCallers();
      }
    } catch (Throwable e) {
      failure = e;
    }
    if (failure != null && recovered && !stopping && takeOver(failure)) {
      return;
    }
    String reason = "I/O thread stopped";
    if (failure != null) {
      log.error("the I/O thread failed; plaintext masters count as unavailable", failure);
      reason = "I/O thread failed: " + CommandPipeline.describe(failure);
    }
    stopping = true;
    takeLeadForGood();
    shutDown(reason);
  }

  /**
   * On the dying thread: logs {@code failure} and starts the thread that takes over, which leads as
   * soon as no caller does. Returns false if no thread could be started: then the loop stops for
   * good.
   */
  private boolean takeOver(Throwable failure) {
    Thread dying = Thread.currentThread();
    String next = "redlock-io-selector-" + number + "-" + (threads + 1);
    log.error("the I/O thread {} failed; {} takes over", dying.getName(), next, failure);
    try {
      long now = ticker.read();
      boolean recurring = lastTakeoverNanos != 0 && now - lastTakeoverNanos < TAKEOVER_PAUSE_NANOS;
      lastTakeoverNanos = now;
      Takeover from = new Takeover(dying.getName(), failure, recurring ? TAKEOVER_PAUSE_NANOS : 0);
      Thread successor = new Thread(() -> run(from), next);
      successor.setDaemon(true);
      threads++;
      urgent = true; // it leads at once, or as soon as the callers leading now are done
      thread = successor; // before it starts: close() joins whichever thread is current
      try {
        successor.start();
      } catch (Throwable e) {
        thread = dying;
        failure.addSuppressed(e);
        return false;
      }
    } catch (Throwable e) {
      failure.addSuppressed(e);
      return false;
    }
    unparkFollowers(); // one of them leads until the new thread does
    return true;
  }

  /** Selects until a caller asks for the selector or the loop stops. */
  private void leadUntilHandedOver() throws IOException {
    urgent = false;
    while (!stopping && !(handover && followerCount.get() <= 1)) {
      throwInjected();
      select(untilNextTimer());
      afterSelect();
    }
    handover = false;
  }

  /**
   * Selects once, as the leader, for at most {@code waitNanos} (-1: until woken; 0: without
   * waiting), or less while there are watches ({@link #watchedWait}).
   */
  private void select(long waitNanos) throws IOException {
    long wait = watchedWait(waitNanos);
    Selector current = selector;
    try {
      if (wait < 0) {
        current.select(dispatch);
      } else if (wait == 0) {
        current.selectNow(dispatch);
      } else {
        current.select(dispatch, TimeUnit.NANOSECONDS.toMillis(wait + 999_999));
      }
    } finally {
      selectingLong = false;
    }
  }

  /**
   * After a select, as the leader: the tasks handed in, then the timers and watches that are due.
   * I/O first, then timers: a thread that was not scheduled for a while must see the connect or
   * reply that arrived meanwhile before it times out the attempt waiting for it.
   */
  private void afterSelect() {
    runTasks();
    runTimers();
    checkWatches();
  }

  /**
   * Parks while callers lead, until they have left the selector alone for a whole {@link
   * #LAG_NANOS} (or work was handed to the loop while no one leads, or it stops).
   */
  private void awaitQuietCallers() throws IOException {
    while (!stopping) {
      long seen = callerLeads;
      if (leader.get() == null && urgent) {
        return;
      }
      LockSupport.parkNanos(this, LAG_NANOS);
      Thread.interrupted(); // the loop's thread is never interrupted on purpose
      throwInjected();
      if (leader.get() == null && (urgent || callerLeads == seen)) {
        return;
      }
    }
  }

  /** Waits (briefly: leaders see {@link #stopping} at their next wake-up) to lead for good. */
  private void takeLeadForGood() {
    Thread me = Thread.currentThread();
    selector.wakeup();
    long giveUp = ticker.read() + TimeUnit.SECONDS.toNanos(1);
    while (!leader.compareAndSet(null, me) && leader.get() != me) {
      if (ticker.read() - giveUp > 0) {
        log.debug("a caller still leads the selector as the loop stops");
        return;
      }
      selector.wakeup();
      LockSupport.parkNanos(this, TimeUnit.MICROSECONDS.toNanos(100));
    }
  }

  private void dispatch(SelectionKey key) {
    Handler handler = (Handler) key.attachment();
    try {
      if (key.isValid()) {
        handler.ready(key.readyOps());
      }
    } catch (Throwable e) {
      key.cancel();
      contain(handler, "I/O handler", e);
    }
  }

  private void runTasks() {
    for (Task task = tasks.poll(); task != null; task = tasks.poll()) {
      try {
        task.body.run();
      } catch (Throwable e) {
        contain(task.owner, "I/O task", e);
      }
    }
  }

  /**
   * Something a leader ran for {@code owner} (or for no link, if null) threw {@code error}: the
   * owner's link is dropped, its commands fail and its pipeline reconnects on the next command; the
   * error is logged once and reported. Nothing else stops.
   */
  private void contain(Handler owner, String what, Throwable error) {
    String where = owner == null ? what : what + " of " + owner;
    if (owner != null) {
      forgetLookup(owner);
      try {
        owner.stopped(what + " failed: " + CommandPipeline.describe(error));
      } catch (Throwable e) {
        error.addSuppressed(e);
      }
    }
    log.error("{} failed{}", where, owner == null ? "" : "; its connection is dropped", error);
    report(where, error);
  }

  /** Tells {@code errors} (the RedLock's listener) of an error the loop recovered from. */
  private void report(String where, Throwable error) {
    try {
      errors.accept(where, error);
    } catch (Throwable e) {
      log.warn("reporting an internal error failed; ignored", e);
    }
  }

  /**
   * As the first leader after a takeover: keeps the selector if it still selects; one whose select
   * failed, or that no longer selects, is replaced ({@link #replaceSelector}).
   */
  private void recoverSelector(Throwable previous) throws IOException {
    Selector current = selector;
    boolean selectFailed =
        previous instanceof IOException || previous instanceof ClosedSelectorException;
    if (!selectFailed && current.isOpen()) {
      try {
        current.selectNow(dispatch);
        unparkFollowers();
        return;
      } catch (IOException | ClosedSelectorException e) {
        log.debug("the selector no longer selects: {}", e.toString());
      }
    }
    replaceSelector(current, "I/O thread failed: " + CommandPipeline.describe(previous));
  }

  /**
   * As the leader: opens a fresh selector in place of {@code old}, closes {@code old} and tells
   * every link registered on it that it stopped: their pipelines reconnect, on the fresh one.
   *
   * @throws IOException if no selector can be opened: the loop then stops for good
   */
  private void replaceSelector(Selector old, String reason) throws IOException {
    Selector fresh = Selector.open();
    List<Handler> registered = registeredOn(old);
    selector = fresh;
    try {
      old.close(); // closes no channel: each handler closes its own
    } catch (IOException e) {
      log.debug("closing the failed selector: {}", e.toString());
    }
    log.warn("the selector failed; replaced, {} connection(s) dropped", registered.size());
    for (Handler handler : registered) {
      tell(handler, reason);
    }
    runTasks(); // any handed in with a wake-up that went to the old selector
    unparkFollowers();
  }

  /** The handlers registered on {@code selector}; none if it is closed. The leader only. */
  private static List<Handler> registeredOn(Selector selector) {
    List<Handler> handlers = new ArrayList<>();
    try {
      for (SelectionKey key : selector.keys()) {
        handlers.add((Handler) key.attachment());
      }
    } catch (ClosedSelectorException e) {
      // nothing registered any more
    }
    return handlers;
  }

  /** Tells {@code handler} it stopped; what that throws is only logged (the loop is ending it). */
  private static void tell(Handler handler, String reason) {
    try {
      handler.stopped(reason);
    } catch (Throwable e) {
      log.debug("stopping {}: {}", handler, e.toString());
    }
  }

  /** Wakes every follower: one leads, the others see who does. */
  private void unparkFollowers() {
    for (Thread follower : followers) {
      LockSupport.unpark(follower);
    }
  }

  /** Parks the loop's thread for {@code nanos}, or until the loop stops. */
  private void pause(long nanos) {
    long until = ticker.read() + nanos;
    for (long left = nanos; left > 0 && !stopping; left = until - ticker.read()) {
      LockSupport.parkNanos(this, left);
      Thread.interrupted(); // the loop's thread is never interrupted on purpose
    }
  }

  /** For tests: throws what {@link #failThreadForTest} asked the loop's thread to throw. */
  private void throwInjected() throws IOException {
    Throwable error = injected;
    if (error == null) {
      return;
    }
    injected = null;
    if (error instanceof IOException e) {
      throw e;
    } else if (error instanceof Error e) {
      throw e;
    } else if (error instanceof RuntimeException e) {
      throw e;
    }
    throw new IllegalStateException(error);
  }

  /**
   * The leader's select wait ({@code waitNanos}, -1 for none), cut to {@link #WATCH_NANOS} while
   * there are watches; a longer one is announced ({@link #selectingLong}) so that a new watch wakes
   * the selector.
   */
  private long watchedWait(long waitNanos) {
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

  /** Whether any watch waits for a look; the leader's. */
  private boolean watching() {
    return !watches.isEmpty() || !newWatches.isEmpty();
  }

  /** Looks at every watch, keeping those not done; the leader's. */
  private void checkWatches() {
    for (Watch watch = newWatches.poll(); watch != null; watch = newWatches.poll()) {
      watches.add(watch);
    }
    if (watches.isEmpty()) {
      return;
    }
    long now = ticker.read();
    for (int i = watches.size() - 1; i >= 0; i--) {
      Watch watch = watches.get(i);
      boolean done;
      try {
        done = watch.check(now);
      } catch (Throwable e) {
        contain(watch, "I/O watch", e);
        done = true;
      }
      if (done) {
        watches.remove(i);
      }
    }
  }

  /** Nanoseconds until the next timer is due: 0 if one is, -1 if there is none. */
  private long untilNextTimer() {
    Timer next = timers.peek();
    return next == null ? -1 : Math.max(0, next.atNanos - ticker.read());
  }

  /** Runs the timers that are due. */
  private void runTimers() {
    long now = ticker.read();
    while (!timers.isEmpty() && timers.peek().atNanos - now <= 0) {
      Timer timer = timers.poll();
      try {
        timer.task.run();
      } catch (Throwable e) {
        contain(timer.owner, "I/O timer", e);
      }
    }
  }

  /** On the loop's thread, as it stops for good: tells every handler, fails every queued task. */
  private void shutDown(String reason) {
    resolver.shutdownNow();
    List<Handler> handlers = new ArrayList<>();
    for (List<Waiter> joined : lookups.values()) {
      for (Waiter waiter : joined) {
        handlers.add(waiter.handler);
      }
    }
    lookups.clear();
    Selector current = selector;
    handlers.addAll(registeredOn(current));
    try {
      current.close(); // closes no channel: each handler closes its own
    } catch (IOException e) {
      log.debug("closing the selector: {}", e.toString());
    }
    for (Handler handler : handlers) {
      tell(handler, reason);
    }
    timers.clear();
    watches.clear();
    newWatches.clear();
    runTasks(); // each sees stopping() and fails its attempt
  }

  /**
   * Stops the thread and waits for it, at most {@code waitNanos}; returns whether it ended. Every
   * link still registered is told ({@link Handler#stopped}). Idempotent.
   *
   * @param waitNanos how long to wait for the thread
   * @return whether the thread (and every resolver thread) ended in time
   */
  public boolean close(long waitNanos) {
    stopping = true;
    selector.wakeup();
    Thread current = thread;
    LockSupport.unpark(current);
    if (Thread.currentThread() == current) {
      return false;
    }
    long deadlineNanos = ticker.read() + waitNanos;
    try {
      while (true) {
        long left = deadlineNanos - ticker.read();
        if (left > 0) {
          TimeUnit.NANOSECONDS.timedJoin(current, left);
        }
        Thread next = thread; // a takeover may have started one meanwhile: it stops at once
        if (next == current || left <= 0) {
          break;
        }
        current = next;
        LockSupport.unpark(current);
      }
      long left = deadlineNanos - ticker.read();
      if (left > 0) {
        resolver.awaitTermination(left, TimeUnit.NANOSECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !current.isAlive() && resolver.isTerminated();
  }

  @Override
  public String toString() {
    return "SelectorLoop{" + thread.getName() + "}";
  }

  /**
   * What a thread taking over is told: the name of the thread that died, what ended it, and how
   * long to leave the selector to callers before leading ({@link #TAKEOVER_PAUSE_NANOS}, or 0).
   */
  private record Takeover(String dead, Throwable failure, long pauseNanos) {}

  /** A task handed to the leader, and the link it is for (null: none). */
  private record Task(Handler owner, Runnable body) {}

  /** An attempt waiting for a host's lookup: its link, and what to give the answer to. */
  private record Waiter(Handler handler, Consumer<Object> done) {}

  private record Timer(long atNanos, long sequence, Handler owner, Runnable task)
      implements Comparable<Timer> {
    @Override
    public int compareTo(Timer other) {
      long byTime = atNanos - other.atNanos;
      return byTime != 0 ? Long.signum(byTime) : Long.compare(sequence, other.sequence);
    }
  }
}
