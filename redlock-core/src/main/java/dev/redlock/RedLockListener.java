package dev.redlock;

import java.time.Duration;
import java.util.List;

/**
 * Hears what a {@link RedLock} does, for metrics and logs. Every method has a no-op default;
 * override what you need. Each call carries what every master answered in the round ({@code
 * outcomes}, in configuration order) and how long the round took.
 *
 * <p>Methods are called synchronously on the thread that ran the round (a caller's thread, the
 * renewal thread, or for the async API the RedLock's async timer thread {@code redlock-async-N}),
 * so they must be quick and must not block; except {@link #circuitChanged}, {@link #internalError}
 * and {@link #releaseCompleted}, which learn what an I/O thread saw and are called on the RedLock's
 * event thread ({@code redlock-events-N}), never on an I/O thread: a listener cannot stall the
 * masters' replies, even one that calls back into the RedLock. A listener that throws is logged at
 * WARN and otherwise ignored: it can never fail or change a lock operation. Implementations must be
 * thread-safe.
 *
 * <p>A listener that does not override {@link #releaseCompleted} costs no call on the event thread
 * per release: one that only watches the circuit breakers, say, is told nothing per lock operation
 * off the caller's thread.
 */
public interface RedLockListener {

  /**
   * A lease was granted.
   *
   * @param resource the resource
   * @param outcomes what each master answered
   * @param elapsed how long the round took
   */
  default void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {}

  /**
   * A round did not grant a lease. An {@code acquire} with a wait reports each round.
   *
   * @param resource the resource
   * @param reason why: the lock is held by others, or too few masters could vote in time
   * @param outcomes what each master answered
   * @param elapsed how long the round took
   */
  default void denied(
      String resource, Denial reason, List<NodeOutcome> outcomes, Duration elapsed) {}

  /**
   * A lease was extended by a quorum.
   *
   * @param resource the resource
   * @param outcomes what each master answered
   * @param elapsed how long the round took
   */
  default void extended(String resource, List<NodeOutcome> outcomes, Duration elapsed) {}

  /**
   * An extend (manual or automatic) reached no quorum in time, but no majority said the key was
   * gone: the lease stands until its old deadline, and the renewer tries again.
   *
   * @param resource the resource
   * @param outcomes what each master answered
   * @param elapsed how long the round took
   */
  default void notExtended(String resource, List<NodeOutcome> outcomes, Duration elapsed) {}

  /**
   * A lease was lost: a majority answered an extend (manual or automatic) that the key is gone or
   * holds another token, or a renewed lease ran out before a renewal got through.
   *
   * @param resource the resource
   * @param outcomes what each master answered in the failed round; empty if no round was run
   * @param elapsed how long the round took; zero if no round was run
   */
  default void lost(String resource, List<NodeOutcome> outcomes, Duration elapsed) {}

  /**
   * A lease was released, at once or (by {@link Lease#releaseAfter}) with its keys left to expire
   * after a delay: told when the release round was decided, by a majority of answers (the others
   * are {@link NodeOutcome.Status#PENDING}; {@link #releaseCompleted} tells how they ended).
   *
   * @param resource the resource
   * @param outcomes what each master answered
   * @param elapsed how long the round took
   */
  default void released(String resource, List<NodeOutcome> outcomes, Duration elapsed) {}

  /**
   * Every master's final answer to a lease's release (or {@link Lease#releaseAfter}): told once per
   * release, after {@link #released}, when the last master answered. A master whose release failed
   * or was dropped was sent it again once its connection was back, and one whose acquire was lost
   * in flight got a second release after the first; the outcome's detail says so. A master that
   * could not be reached before every key of the lease must have expired, or before the RedLock was
   * closed, ends {@link NodeOutcome.Status#FAILED}, with why.
   *
   * <p>Called on the RedLock's event thread ({@code redlock-events-N}), never on an I/O thread.
   *
   * @param resource the resource
   * @param outcomes each master's final answer
   * @param elapsed from the start of the release to the last answer
   */
  default void releaseCompleted(String resource, List<NodeOutcome> outcomes, Duration elapsed) {}

  /**
   * A master's circuit breaker changed state: {@link CircuitState#OPEN} means the master is skipped
   * at once (a failed vote) after repeated failures or timeouts; {@link CircuitState#HALF_OPEN}
   * means it is being probed again; {@link CircuitState#CLOSED} means it is back.
   *
   * <p>Called on the RedLock's event thread ({@code redlock-events-N}), never on the I/O thread
   * that reads the masters' replies, so it may take its time (within reason: the event thread's
   * queue is bounded, and events beyond it are dropped and counted).
   *
   * @param node the master's {@code host:port}
   * @param state the new state
   */
  default void circuitChanged(String node, CircuitState state) {}

  /**
   * One of the library's own threads met an unexpected error and recovered: code that should never
   * throw did (a bug, or an {@link Error} such as {@link OutOfMemoryError}), and the library
   * contained it. If it happened while handling one master's connection, that connection was
   * dropped: the commands in flight on it failed (failed votes in their rounds), and the next
   * command opens a new one; the other masters were not affected. If the thread that reads the
   * plaintext masters' replies itself failed, a new thread took its place (and, if its selector
   * failed, every plaintext master's connection was dropped and is reopened on the next command).
   * The error is also logged at ERROR with its stack trace.
   *
   * <p>Called once per error on the RedLock's event thread ({@code redlock-events-N}), never on the
   * thread that met it.
   *
   * @param where what failed, for logs and metrics, e.g. {@code "I/O handler of
   *     SelectorLink{10.0.0.1:6379}"} or {@code "I/O thread redlock-io-selector-1"}; free text, not
   *     a stable format
   * @param error what was thrown
   */
  default void internalError(String where, Throwable error) {}

  /** Why a round did not grant a lease. */
  enum Denial {
    /** Enough masters answered, and the lock is held by others (or the votes split). */
    TAKEN,
    /**
     * Too few masters could vote in time (failed, timed out, or too young for the restart guard),
     * or a majority granted but the lease was not: the round was too slow, or the fence store
     * failed.
     */
    UNAVAILABLE
  }

  /** The states of a master's circuit breaker. */
  enum CircuitState {
    /** Calls go through. */
    CLOSED,
    /** Calls fail at once without reaching the master. */
    OPEN,
    /** A few probe calls go through to test the master. */
    HALF_OPEN
  }
}
