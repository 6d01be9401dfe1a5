package dev.redlock.internal.transport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 * when no one else does, reading its own replies and every other round's meanwhile; other callers
 * follow, parked; the loop's own thread leads when no caller does. {@link Leadership} holds the
 * rules, and why.
 *
 * <p>Connecting is the other thing that waits. A link registers its socket here and is driven by
 * the socket's readiness: connect, then the handshake (AUTH, SELECT, SCRIPT LOAD) written in one
 * batch and its replies read like any others, all bounded by the node timeout through a timer on
 * this thread ({@link #schedule}, {@link LoopTimers}). Host names that are not IP literals are
 * resolved off the loop, one lookup per host at a time ({@link HostLookups}).
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
public final class SelectorLoop implements RoundLoop {

  private static final Logger log = LoggerFactory.getLogger(SelectorLoop.class);

  private static final AtomicInteger LOOPS = new AtomicInteger();

  /**
   * After a takeover, the next one waits this long before its thread leads: an error that recurs at
   * once costs one thread and one report per second, not a spin. Callers lead meanwhile.
   */
  static final long TAKEOVER_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(1);

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

  private final Ticker ticker;
  private final BiConsumer<String, Throwable> errors;
  private final int number;
  private final ConcurrentLinkedQueue<Task> tasks = new ConcurrentLinkedQueue<>();
  private final Consumer<SelectionKey> dispatch = this::dispatch;
  private final ReaderWatch watch; // when the leader waits in select(): TimedReply's judge
  private final Leadership leadership;
  private final LoopTimers timers;
  private final HostLookups lookups;
  private volatile boolean stopping;

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
    this.watch = new ReaderWatch(ticker);
    this.errors = errors;
    try {
      this.selector = Selector.open();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open a selector", e);
    }
    this.number = LOOPS.incrementAndGet();
    Thread first = new Thread(() -> run(null), "redlock-io-selector-" + number);
    first.setDaemon(true);
    this.thread = first;
    this.leadership = new Leadership(this, ticker);
    this.timers = new LoopTimers(this, ticker);
    this.lookups = new HostLookups(this, lookup, number);
    first.start();
  }

  /** Whether the calling thread leads the selector now (the loop's thread or a caller). */
  boolean inLoop() {
    return leadership.leads(Thread.currentThread());
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
    if (leadership.vacant()) {
      leadership.urge();
    }
  }

  /** Makes the leader's select return: a round it waits for was decided by another thread. */
  public void wakeSelector() {
    selector.wakeup();
  }

  /**
   * Waits until {@code round} is decided or {@code deadlineNanos} passes, leading the selector
   * whenever no one else does ({@link Leadership}); the caller then freezes the count. Not
   * interruptible; an interrupt is kept pending for the caller.
   *
   * @param round the round the calling thread waits for
   * @param deadlineNanos when to stop waiting, on the system ticker
   */
  @Override
  public void await(AwaitedRound round, long deadlineNanos) {
    leadership.await(round, deadlineNanos);
  }

  /** Registers {@code channel} with no interest yet; on the loop's thread only. */
  SelectionKey register(SelectableChannel channel, Handler handler) throws IOException {
    return channel.register(selector, 0, handler);
  }

  /**
   * A caller is about to send a round's commands and wait for it (the lease layer's masters);
   * {@link #leaveRound} once it has its answer. Any thread; never blocks.
   */
  @Override
  public void enterRound() {
    inRounds.incrementAndGet();
  }

  /** The caller of an {@link #enterRound} has its round's answer. */
  @Override
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
   * Has {@code watch} checked by whoever leads, after every select and at least every millisecond
   * while it is not done ({@link LoopTimers#watch}). Any thread; never blocks.
   */
  void watch(Watch watch) {
    timers.watch(watch);
  }

  /**
   * Runs {@code task} on the loop's thread (or whoever leads) {@code delayNanos} from now, or soon
   * after. If it throws, {@code owner} (the link it is for) is dropped. The leader only.
   */
  void schedule(Handler owner, long delayNanos, Runnable task) {
    timers.schedule(owner, delayNanos, task);
  }

  /**
   * Looks {@code host} up off the loop and hands every address it has ({@code InetAddress[]}), or
   * the failure's description, to {@code done} on the loop's thread; see {@link
   * HostLookups#resolve}. Returns false if the loop is stopping. The leader only.
   */
  boolean resolve(String host, Handler waiting, Consumer<Object> done) {
    return lookups.resolve(host, waiting, done);
  }

  /** {@code waiting} no longer waits for a lookup (its attempt timed out); the leader only. */
  void forgetLookup(Handler waiting) {
    lookups.forget(waiting);
  }

  /** The loop's own thread now; replaced by a takeover. */
  Thread thread() {
    return thread;
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
        if (leadership.take(me)) {
          try {
            if (!recovered) {
              recoverSelector(from.failure);
              recovered = true;
              report("I/O thread " + from.dead, from.failure);
            }
            leadership.leadUntilHandedOver();
          } finally {
            leadership.giveBack();
          }
          leadership.wakeFollower();
        }
        leadership.awaitQuietCallers();
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
    leadership.takeLeadForGood();
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
      leadership.urgeOnStart(); // it leads at once, or as soon as the callers leading now are done
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
    leadership.unparkFollowers(); // one of them leads until the new thread does
    return true;
  }

  /**
   * Selects once, as the leader, for at most {@code waitNanos} (-1: until woken; 0: without
   * waiting), or less while there are watches ({@link LoopTimers#watchedWait}).
   */
  void select(long waitNanos) throws IOException {
    long wait = timers.watchedWait(waitNanos);
    Selector current = selector;
    watch.watching();
    try {
      if (wait < 0) {
        current.select(dispatch);
      } else if (wait == 0) {
        current.selectNow(dispatch);
      } else {
        current.select(dispatch, TimeUnit.NANOSECONDS.toMillis(wait + 999_999));
      }
    } finally {
      watch.stopped();
      timers.selected();
    }
  }

  /** How long the leaders have not been waiting in select(), for the pipelines' breakers. */
  ReaderWatch watch() {
    return watch;
  }

  /**
   * After a select, as the leader: the tasks handed in, then the timers and watches that are due.
   * I/O first, then timers: a thread that was not scheduled for a while must see the connect or
   * reply that arrived meanwhile before it times out the attempt waiting for it.
   */
  void afterSelect() {
    runTasks();
    timers.runTimers();
    timers.checkWatches();
  }

  /** Nanoseconds until the next timer is due: 0 if one is, -1 if there is none. The leader's. */
  long untilNextTimer() {
    return timers.untilNextTimer();
  }

  private void dispatch(SelectionKey key) {
    watch.stopped(); // from the first key select() hands over, it watches no more
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
  void contain(Handler owner, String what, Throwable error) {
    String where = owner == null ? what : what + " of " + owner;
    if (owner != null) {
      lookups.forget(owner);
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
  void report(String where, Throwable error) {
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
        leadership.unparkFollowers();
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
    leadership.unparkFollowers();
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

  /** Parks the loop's thread for {@code nanos}, or until the loop stops. */
  private void pause(long nanos) {
    long until = ticker.read() + nanos;
    for (long left = nanos; left > 0 && !stopping; left = until - ticker.read()) {
      LockSupport.parkNanos(this, left);
      Thread.interrupted(); // the loop's thread is never interrupted on purpose
    }
  }

  /** For tests: throws what {@link #failThreadForTest} asked the loop's thread to throw. */
  void throwInjected() throws IOException {
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

  /** On the loop's thread, as it stops for good: tells every handler, fails every queued task. */
  private void shutDown(String reason) {
    List<Handler> handlers = new ArrayList<>();
    lookups.stop(handlers);
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
    runTasks(); // each sees stopping() and fails its attempt
  }

  /**
   * Stops the thread and waits for it, at most {@code waitNanos}; returns whether it ended. Every
   * link still registered is told ({@link Handler#stopped}). Idempotent.
   *
   * @param waitNanos how long to wait for the thread
   * @return whether the thread (and every resolver thread) ended in time
   */
  @Override
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
        lookups.awaitTermination(left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !current.isAlive() && lookups.terminated();
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
}
