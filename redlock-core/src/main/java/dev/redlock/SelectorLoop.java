package dev.redlock;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one I/O thread of a RedLock's plaintext masters: a NIO {@link Selector} that reads every
 * master's replies, finishes connections, and flushes what a socket did not take at once.
 *
 * <h2>How the work is split between threads</h2>
 *
 * <p>A caller writes its own commands. {@link SelectorNodeClient} puts each command in its master's
 * {@link CommandPipeline} and the {@link SelectorLink} writes it to the non-blocking socket on the
 * caller's thread, so a round costs the caller N writes, then it parks; nothing is handed to
 * another thread on the way out. Only when a socket's buffer is full does the link keep the rest
 * and ask this thread to flush it when the socket is writable ({@code OP_WRITE}): a write never
 * blocks, and the pipeline's cap on unanswered bytes bounds what is kept.
 *
 * <p>This thread does everything that waits: it selects over every master's socket, reads what
 * arrived, decodes the replies ({@link Resp}) and hands each to its pipeline, which completes the
 * command's future. Those futures' callbacks therefore run here and must be short (counting a vote
 * in {@link QuorumRound}, recording a call in a circuit breaker); the round's caller is unparked
 * once, when its round is decided. Under load one wake-up reads the replies of many callers on many
 * masters, where a thread per master would wake once per reply and then wake the caller.
 *
 * <p>Connecting is the other thing that waits. A link registers its socket here and is driven by
 * the socket's readiness: connect, then the handshake (AUTH, SELECT, SCRIPT LOAD) written in one
 * batch and its replies read like any others, all bounded by the node timeout through a timer on
 * this thread ({@link #schedule}). Host names that are not IP literals are resolved on a separate,
 * short-lived thread, so a slow DNS server cannot hold up every master.
 *
 * <p>Other threads reach this one only through {@link #execute} (a queue and {@link
 * Selector#wakeup()}) and, when a link needs {@code OP_WRITE}, by changing its key's interest set
 * and waking the selector. Everything else here is confined to this thread: the timers, the
 * handlers' read side, the keys' registration.
 *
 * <p>{@link #close} stops the thread with a bounded wait; when it stops, for any reason, every link
 * still registered is told, so its commands fail rather than wait forever, and later connection
 * attempts fail at once.
 */
final class SelectorLoop {

  private static final Logger log = LoggerFactory.getLogger(SelectorLoop.class);

  private static final AtomicInteger LOOPS = new AtomicInteger();

  /** A resolver thread with nothing to resolve stops after this long. */
  private static final long RESOLVER_IDLE_SECONDS = 10;

  /** What the selector tells when a registered channel is ready; runs on the loop's thread. */
  interface Handler {

    /** The channel is ready for {@code readyOps} (connect, read, write). */
    void ready(int readyOps);

    /** The loop stopped, or this handler threw: its channel will get no more events. */
    void stopped(String reason);
  }

  private final Ticker ticker;
  private final Selector selector;
  private final Thread thread;
  private final ThreadPoolExecutor resolver;
  private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final PriorityQueue<Timer> timers = new PriorityQueue<>(); // loop thread only
  private final Set<Handler> resolving = new HashSet<>(); // loop thread only: awaiting a lookup
  private final Consumer<SelectionKey> dispatch = this::dispatch;
  private volatile boolean stopping;
  private long timerSequence; // loop thread only

  /**
   * Opens the selector and starts its thread. Its timers run on the system ticker whatever the
   * RedLock's: they bound real sockets.
   *
   * @throws UncheckedIOException if the selector cannot be opened
   */
  SelectorLoop() {
    this.ticker = Ticker.system();
    try {
      this.selector = Selector.open();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open a selector", e);
    }
    int number = LOOPS.incrementAndGet();
    this.thread = new Thread(this::run, "redlock-io-selector-" + number);
    thread.setDaemon(true);
    AtomicInteger resolvers = new AtomicInteger();
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
    thread.start();
  }

  /** Whether the calling thread is the loop's. */
  boolean inLoop() {
    return Thread.currentThread() == thread;
  }

  /**
   * Runs {@code task} on the loop's thread, soon. Returns false, and never runs it, once the loop
   * is stopping.
   */
  boolean execute(Runnable task) {
    if (stopping) {
      return false;
    }
    tasks.add(task);
    if (stopping && tasks.remove(task)) {
      return false; // close() may have drained the queue already
    }
    if (!inLoop()) {
      selector.wakeup();
    }
    return true;
  }

  /** Makes a blocked select return, after another thread changed a key's interest set. */
  void wakeup() {
    if (!inLoop()) {
      selector.wakeup();
    }
  }

  /** Registers {@code channel} with no interest yet; on the loop's thread only. */
  SelectionKey register(SelectableChannel channel, Handler handler) throws IOException {
    return channel.register(selector, 0, handler);
  }

  /** Runs {@code task} on the loop's thread {@code delayNanos} from now, or soon after. */
  void schedule(long delayNanos, Runnable task) {
    timers.add(new Timer(ticker.read() + delayNanos, timerSequence++, task));
  }

  /**
   * Looks {@code host} up on a resolver thread, then hands every address it has ({@code
   * InetAddress[]}), or the failure's description, to {@code done} on the loop's thread. Until then
   * {@code waiting} is told if the loop stops. Returns false if the loop is stopping. On the loop's
   * thread only.
   */
  boolean resolve(String host, Handler waiting, Consumer<Object> done) {
    try {
      resolver.execute(
          () -> {
            Object result;
            try {
              result = InetAddress.getAllByName(host);
            } catch (IOException | RuntimeException e) {
              result = "cannot resolve " + host + ": " + CommandPipeline.describe(e);
            }
            Object answer = result;
            execute(
                () -> {
                  if (resolving.remove(waiting)) {
                    done.accept(answer);
                  }
                });
          });
    } catch (RejectedExecutionException e) {
      return false;
    }
    resolving.add(waiting);
    return true;
  }

  /** Whether {@link #close} was called or the thread ended. */
  boolean stopping() {
    return stopping;
  }

  private void run() {
    String reason = "I/O thread stopped";
    try {
      while (!stopping) {
        // I/O first, then timers: a thread that was not scheduled for a while must see the
        // connect or reply that arrived meanwhile before it times out the attempt waiting for it.
        long waitNanos = untilNextTimer();
        if (waitNanos < 0) {
          selector.select(dispatch);
        } else if (waitNanos == 0) {
          selector.selectNow(dispatch);
        } else {
          selector.select(dispatch, TimeUnit.NANOSECONDS.toMillis(waitNanos + 999_999));
        }
        runTasks();
        runTimers();
      }
    } catch (IOException | RuntimeException | Error e) {
      log.error("the I/O thread failed; plaintext masters count as unavailable", e);
      reason = "I/O thread failed: " + CommandPipeline.describe(e);
    } finally {
      stopping = true;
      shutDown(reason);
    }
  }

  private void dispatch(SelectionKey key) {
    Handler handler = (Handler) key.attachment();
    try {
      if (key.isValid()) {
        handler.ready(key.readyOps());
      }
    } catch (RuntimeException e) {
      log.error("I/O handler {} failed; its connection is dropped", handler, e);
      key.cancel();
      handler.stopped("I/O handler failed: " + CommandPipeline.describe(e));
    }
  }

  private void runTasks() {
    for (Runnable task = tasks.poll(); task != null; task = tasks.poll()) {
      try {
        task.run();
      } catch (RuntimeException e) {
        log.error("I/O task failed", e);
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
      Runnable task = timers.poll().task;
      try {
        task.run();
      } catch (RuntimeException e) {
        log.error("I/O timer failed", e);
      }
    }
  }

  /** On the loop's thread, as it ends: tells every handler, fails every queued task. */
  private void shutDown(String reason) {
    resolver.shutdownNow();
    List<Handler> handlers = new ArrayList<>(resolving);
    resolving.clear();
    try {
      for (SelectionKey key : selector.keys()) {
        handlers.add((Handler) key.attachment());
      }
    } catch (ClosedSelectorException e) {
      // nothing registered any more
    }
    try {
      selector.close(); // closes no channel: each handler closes its own
    } catch (IOException e) {
      log.debug("closing the selector: {}", e.toString());
    }
    for (Handler handler : handlers) {
      try {
        handler.stopped(reason);
      } catch (RuntimeException e) {
        log.debug("stopping {}: {}", handler, e.toString());
      }
    }
    timers.clear();
    runTasks(); // each sees stopping() and fails its attempt
  }

  /**
   * Stops the thread and waits for it, at most {@code waitNanos}; returns whether it ended. Every
   * link still registered is told ({@link Handler#stopped}). Idempotent.
   */
  boolean close(long waitNanos) {
    stopping = true;
    selector.wakeup();
    if (inLoop()) {
      return false;
    }
    long deadlineNanos = ticker.read() + waitNanos;
    try {
      long left = deadlineNanos - ticker.read();
      if (left > 0) {
        TimeUnit.NANOSECONDS.timedJoin(thread, left);
      }
      left = deadlineNanos - ticker.read();
      if (left > 0) {
        resolver.awaitTermination(left, TimeUnit.NANOSECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !thread.isAlive() && resolver.isTerminated();
  }

  @Override
  public String toString() {
    return "SelectorLoop{" + thread.getName() + "}";
  }

  private record Timer(long atNanos, long sequence, Runnable task) implements Comparable<Timer> {
    @Override
    public int compareTo(Timer other) {
      long byTime = atNanos - other.atNanos;
      return byTime != 0 ? Long.signum(byTime) : Long.compare(sequence, other.sequence);
    }
  }
}
