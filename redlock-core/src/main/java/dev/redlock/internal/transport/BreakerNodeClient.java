package dev.redlock.internal.transport;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig.SlidingWindowType;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiConsumer;

/**
 * The only class that talks to Resilience4j: a circuit breaker in front of one master's client.
 *
 * <p>Errors and replies slower than the node timeout count as failures; a master's TAKEN and GONE
 * answers are successes (it is healthy, the lock is just not ours). A command the client itself did
 * not send ({@link NodeUnavailableException#clientSide}: its own queue to the master was full, or
 * it was closing) counts as neither: it says nothing of the master. When at least half of the last
 * {@value #WINDOW} calls (and at least {@value #MINIMUM_CALLS}) failed, the breaker opens: {@link
 * #permits()} says no, and the round skips the master as a failed vote without waiting for its
 * timeout. After the open wait the next call probes it: an answer in time closes the breaker, a
 * failure opens it again. (Requiring several probes would let a client that locks rarely linger
 * half-open.)
 *
 * <p>The round decides whether a master may be skipped at all (the lease layer's {@code Masters}):
 * when the masters with closed breakers cannot make a quorum, it calls the others through {@link
 * #probe()}, and an answer in time closes their breakers at once.
 *
 * <p>Releases are still sent to a master whose breaker is not closed (nothing else will clean up
 * its key if it is alive), and their real answers returned (a release round is decided by a
 * majority, so it does not wait for them), but not recorded: probing is left to acquires and
 * extends. Admits (an operator's call) and diagnostics go straight through, never skipped and never
 * recorded.
 *
 * <p>A call that has not answered within the node timeout is recorded as a failure by the next call
 * to the same master, so a hung master opens its breaker as quickly as a failing one, while nobody
 * else touches the client's futures. (A master answers in order, so the oldest unanswered call is
 * the first to be overdue.) The time is the master's own ({@link TimedReply}): from when the
 * command was written, or from the master's previous answer if that came later. A master that keeps
 * answering a deep queue of this client's commands is busy with the client's own load, not slow;
 * one that falls silent for a node timeout, or answers a lone command late, is.
 */
public final class BreakerNodeClient extends ForwardingNodeClient {

  static final int WINDOW = 20;
  static final int MINIMUM_CALLS = 10;
  static final int PROBES = 1;

  private static final NodeUnavailableException TIMED_OUT =
      new NodeUnavailableException("no reply within the node timeout");
  private static final NodeUnavailableException SLOW = new NodeUnavailableException("slow reply");
  private static final NodeUnavailableException BREAKER_OPEN =
      new NodeUnavailableException("circuit breaker open");

  private final CircuitBreaker breaker;
  private final Ticker ticker;
  private final long nodeTimeoutNanos;
  private final ConcurrentLinkedQueue<Call> unanswered = new ConcurrentLinkedQueue<>();
  private final NodeClient probe = new Probe();
  private final String name;
  private final BiConsumer<String, BreakerState> changes;

  /** Held by the one thread that scans {@link #unanswered} ({@link #recordOverdue}). */
  private final ReentrantLock scanning = new ReentrantLock();

  /** Held while a state is told ({@link #tell}): no monitor, so no virtual thread pins here. */
  private final ReentrantLock telling = new ReentrantLock();

  /** The state last told to {@link #changes}; written under {@link #telling}. */
  private volatile CircuitBreaker.State told = CircuitBreaker.State.CLOSED;

  /**
   * The overdue scan's earliest next run ({@link #recordOverdue}): calls answer in order, so the
   * scan finds nothing overdue before the oldest unanswered call's timeout has passed.
   */
  private volatile long scanAt;

  /**
   * Puts a breaker in front of {@code delegate}.
   *
   * @param delegate the master's client
   * @param name the master's {@code host:port}, as {@code changes} is told it
   * @param nodeTimeoutNanos the master's node timeout: a slower answer counts as a failure
   * @param openWait how long an open breaker skips the master before probing it again
   * @param ticker the clock of the calls' durations
   * @param changes told of every state change, on whatever thread completed the call that caused it
   *     (often an I/O thread): it must return at once
   */
  public BreakerNodeClient(
      NodeClient delegate,
      String name,
      long nodeTimeoutNanos,
      Duration openWait,
      Ticker ticker,
      BiConsumer<String, BreakerState> changes) {
    super(delegate);
    this.ticker = ticker;
    this.nodeTimeoutNanos = nodeTimeoutNanos;
    CircuitBreakerConfig config =
        CircuitBreakerConfig.custom()
            .slidingWindow(WINDOW, MINIMUM_CALLS, SlidingWindowType.COUNT_BASED)
            .failureRateThreshold(50)
            .slowCallRateThreshold(100)
            .slowCallDurationThreshold(Duration.ofNanos(nodeTimeoutNanos).plusDays(1))
            .waitDurationInOpenState(openWait)
            .permittedNumberOfCallsInHalfOpenState(PROBES)
            // No half-open time limit and no automatic transition: either would start a scheduler
            // thread this library does not own. A probe always completes: its round times it out,
            // or the connection's stall limit fails it.
            .automaticTransitionFromOpenToHalfOpenEnabled(false)
            // The open wait on the client's ticker: monotonic, and virtual in a test's or a
            // simulation's hands (Resilience4j's default is the wall clock).
            .clock(new TickerClock(ticker))
            .build();
    this.breaker = CircuitBreaker.of(name, config);
    this.name = name;
    this.changes = changes;
    // No event consumer: with one registered, Resilience4j builds an event (and reads the wall
    // clock) for every call; the state is compared after each call instead (told).
  }

  /**
   * Tells {@link #changes} of the breaker's state if it is not the one told last: called after
   * everything that can change it. A state that lasted less than the time between two calls can go
   * untold; the last state is always told.
   */
  private void tell() {
    if (breaker.getState() != told) {
      telling.lock(); // in order: the last state told is the breaker's
      try {
        CircuitBreaker.State now = breaker.getState();
        if (now != told) {
          told = now;
          changes.accept(name, state(now));
        }
      } finally {
        telling.unlock();
      }
    }
  }

  private static BreakerState state(CircuitBreaker.State state) {
    return switch (state) {
      case CLOSED -> BreakerState.CLOSED;
      case HALF_OPEN -> BreakerState.HALF_OPEN;
      default -> BreakerState.OPEN;
    };
  }

  @Override
  public boolean permits() {
    recordOverdue(ticker.read());
    boolean permitted = breaker.tryAcquirePermission();
    tell();
    return permitted;
  }

  @Override
  public boolean closed() {
    return breaker.getState() == CircuitBreaker.State.CLOSED;
  }

  @Override
  public NodeClient probe() {
    return probe;
  }

  @Override
  public NodeUnavailableException skipped() {
    return BREAKER_OPEN;
  }

  @Override
  public <R> CompletableFuture<R> send(Command<R> command) {
    return switch (command.kind().role()) {
      case VOTE -> recorded(delegate.send(command), false);
      case ENDING -> ending(command);
      case OTHER -> delegate.send(command);
    };
  }

  /**
   * A command that ends a lease (release, shorten): sent whatever the breaker's state, since
   * nothing else will clean up the key if the master is alive, and its real answer returned, so
   * that a release that did not get through is sent again (the lease layer's releases); recorded in
   * the breaker only while it is closed. Probing is left to acquires and extends.
   */
  private <R> CompletableFuture<R> ending(Command<R> command) {
    recordOverdue(ticker.read());
    if (breaker.getState() == CircuitBreaker.State.CLOSED && breaker.tryAcquirePermission()) {
      return recorded(delegate.send(command), false);
    }
    return delegate.send(command);
  }

  /**
   * Records the call's outcome in the breaker when it completes. A probe (a call the breaker did
   * not permit) that answers in time closes the breaker.
   */
  private <R> CompletableFuture<R> recorded(CompletableFuture<R> reply, boolean probe) {
    Call call = new Call(ticker.read(), reply);
    unanswered.add(call);
    reply.whenComplete(
        (answer, error) -> {
          if (!call.compareAndSet(false, true)) {
            return; // already recorded as overdue
          }
          // Off the queue at once, while it is near the head and in the cache: left for the scan,
          // the calls of a whole node timeout were walked cold (0.7 us a call at 32 threads).
          unanswered.remove(call);
          long took = call.took(ticker.read());
          if (error instanceof NodeUnavailableException failure && failure.clientSide()) {
            // Never sent (this client's own queue was full, or it was closing): no verdict on the
            // master, and a permission taken for it is given back.
            if (!probe) {
              breaker.releasePermission();
            }
          } else if (error != null) {
            breaker.onError(took, TimeUnit.NANOSECONDS, error);
          } else if (took > nodeTimeoutNanos) {
            breaker.onError(took, TimeUnit.NANOSECONDS, SLOW);
          } else if (probe && breaker.getState() != CircuitBreaker.State.CLOSED) {
            breaker.transitionToClosedState();
          } else {
            breaker.onSuccess(took, TimeUnit.NANOSECONDS);
          }
          tell();
        });
    return reply;
  }

  /**
   * Records every call still unanswered after the node timeout as a failure. One thread scans at a
   * time, the others go on at once: with several scanning together, each would remove the calls
   * another had already removed, and {@code remove(Object)} of a call no longer queued walks the
   * whole queue (measured: 12% of the client's CPU at 32 threads).
   */
  private void recordOverdue(long now) {
    if (now - scanAt < 0 || !scanning.tryLock()) {
      return;
    }
    boolean recorded = false;
    try {
      for (Call head = unanswered.peek(); head != null; head = unanswered.peek()) {
        if (!head.get()) {
          long waited = head.waited(now);
          if (waited <= nodeTimeoutNanos) {
            scanAt = now + (nodeTimeoutNanos - waited) + 1;
            break;
          }
          if (head.compareAndSet(false, true)) {
            breaker.onError(waited, TimeUnit.NANOSECONDS, TIMED_OUT);
            recorded = true;
          }
        }
        unanswered.poll(); // the head: only the scanning thread takes calls off the queue
      }
    } finally {
      scanning.unlock();
    }
    if (recorded) {
      tell();
    }
  }

  /** How many calls are kept for the overdue scan: the unanswered ones, and a few just answered. */
  int tracked() {
    return unanswered.size();
  }

  /** Waits only while the breaker is closed: a master it holds for dead is not waited for. */
  @Override
  public void awaitDrained(long deadlineNanos) {
    if (breaker.getState() == CircuitBreaker.State.CLOSED) {
      delegate.awaitDrained(deadlineNanos);
    }
  }

  @Override
  public String toString() {
    return "BreakerNodeClient{" + delegate + ", " + breaker.getState() + "}";
  }

  /**
   * One call awaiting its answer; set once it has been recorded. Timed by its {@link TimedReply}
   * when the transport's own future comes this far: then neither its wait in this client's queue
   * nor its wait behind this client's earlier commands is held against the master, only the
   * master's silence while it waited. Otherwise from the call.
   */
  private static final class Call extends AtomicBoolean {
    private static final long serialVersionUID = 1L;
    final long start;
    private final TimedReply timed; // or null

    Call(long start, CompletableFuture<?> reply) {
      this.start = start;
      this.timed = reply instanceof TimedReply t ? t : null;
    }

    /** How long the master took to answer, at {@code now}, when it did. */
    long took(long now) {
      long master = timed == null ? -1 : timed.masterNanos();
      return master >= 0 ? master : now - start;
    }

    /**
     * How long the master has kept the unanswered call waiting, at {@code now}: from the call while
     * it waits for a connection the master has not completed (a paused master accepts the socket
     * and never answers the handshake), then as its {@link TimedReply} says.
     */
    long waited(long now) {
      long silent = timed == null ? -1 : timed.silentNanos(now);
      return silent < 0 ? now - start : silent;
    }
  }

  /**
   * The same master, called although its breaker is not closed: its votes are recorded as a probe's
   * (an answer in time closes the breaker); every other command goes as through the breaker.
   */
  private final class Probe implements NodeClient {
    @Override
    public <R> CompletableFuture<R> send(Command<R> command) {
      return switch (command.kind().role()) {
        case VOTE -> recorded(delegate.send(command), true);
        case ENDING, OTHER -> BreakerNodeClient.this.send(command);
      };
    }

    @Override
    public void close() {
      // the probe view owns nothing
    }
  }
}
