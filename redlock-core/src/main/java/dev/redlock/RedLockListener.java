package dev.redlock;

import java.time.Duration;
import java.util.List;

/**
 * Hears what a {@link RedLock} does, for metrics and logs. Every method has a no-op default;
 * override what you need. Each call carries what every master answered in the round ({@code
 * outcomes}, in configuration order) and how long the round took.
 *
 * <p>Methods are called synchronously on the thread that ran the round (a caller's thread, or the
 * renewal thread), except {@link #circuitChanged} and {@link #internalError}, so they must be quick
 * and must not block. A listener that throws is logged at WARN and otherwise ignored: it can never
 * fail or change a lock operation. Implementations must be thread-safe.
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
   * after a delay.
   *
   * @param resource the resource
   * @param outcomes what each master answered
   * @param elapsed how long the round took
   */
  default void released(String resource, List<NodeOutcome> outcomes, Duration elapsed) {}

  /**
   * A master's circuit breaker changed state: {@link CircuitState#OPEN} means the master is skipped
   * at once (a failed vote) after repeated failures or timeouts; {@link CircuitState#HALF_OPEN}
   * means it is being probed again; {@link CircuitState#CLOSED} means it is back.
   *
   * <p>Called on the thread that recorded the call which changed the state: often the library's I/O
   * thread, which reads the replies of every master, so it must return at once.
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
   * <p>Called on the thread that met the error, once per error: for now the library's I/O thread
   * that reads the plaintext masters' replies ({@code redlock-io-selector-N}), or an application
   * thread while it read them for its own round, or a resolver thread for an error in a host name
   * lookup. It must return at once and must not block.
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
