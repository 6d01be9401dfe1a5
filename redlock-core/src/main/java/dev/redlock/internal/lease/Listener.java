package dev.redlock.internal.lease;

import dev.redlock.internal.transport.BreakerState;
import java.util.List;

/**
 * What the lease layer tells of its rounds and of what the I/O threads saw: the internal side of
 * the API's {@code RedLockListener}, which the API adapts to this one, so the user's listener is
 * called exactly where and on the thread this one is ({@link Events} says which). Every method has
 * a no-op default; times are in nanoseconds, outcomes in configuration order.
 */
public interface Listener {

  /**
   * A lease was granted.
   *
   * @param resource the resource
   * @param outcomes what each master answered
   * @param elapsedNanos how long the round took
   */
  default void acquired(String resource, List<Outcome> outcomes, long elapsedNanos) {}

  /**
   * A round did not grant a lease.
   *
   * @param resource the resource
   * @param unavailable true if too few masters could vote in time (or the round was too slow),
   *     false if the lock is held by others
   * @param outcomes what each master answered
   * @param elapsedNanos how long the round took
   */
  default void denied(
      String resource, boolean unavailable, List<Outcome> outcomes, long elapsedNanos) {}

  /**
   * A lease was extended by a quorum.
   *
   * @param resource the resource
   * @param outcomes what each master answered
   * @param elapsedNanos how long the round took
   */
  default void extended(String resource, List<Outcome> outcomes, long elapsedNanos) {}

  /**
   * An extend reached no quorum in time, but no majority said the key was gone.
   *
   * @param resource the resource
   * @param outcomes what each master answered
   * @param elapsedNanos how long the round took
   */
  default void notExtended(String resource, List<Outcome> outcomes, long elapsedNanos) {}

  /**
   * A lease was lost.
   *
   * @param resource the resource
   * @param outcomes what each master answered in the failed round; empty if no round was run
   * @param elapsedNanos how long the round took; zero if no round was run
   */
  default void lost(String resource, List<Outcome> outcomes, long elapsedNanos) {}

  /**
   * A lease was released: its round was decided by a majority of answers.
   *
   * @param resource the resource
   * @param outcomes what each master answered
   * @param elapsedNanos how long the round took
   */
  default void released(String resource, List<Outcome> outcomes, long elapsedNanos) {}

  /**
   * Every master's final answer to a lease's release; on the event thread.
   *
   * @param resource the resource
   * @param outcomes each master's final answer
   * @param elapsedNanos from the start of the release to the last answer
   */
  default void releaseCompleted(String resource, List<Outcome> outcomes, long elapsedNanos) {}

  /**
   * Whether {@link #releaseCompleted} does anything: if not, a release puts no call on the event
   * thread (each would wake that thread, once per release, for nothing).
   *
   * @return true unless this listener is known to ignore it
   */
  default boolean hearsReleaseCompleted() {
    return true;
  }

  /**
   * A master's circuit breaker changed state; on the event thread.
   *
   * @param node the master's {@code host:port}
   * @param state the new state
   */
  default void circuitChanged(String node, BreakerState state) {}

  /**
   * One of the library's own threads met an unexpected error and recovered; on the event thread.
   *
   * @param where what failed, free text
   * @param error what was thrown
   */
  default void internalError(String where, Throwable error) {}
}
