package dev.redlock;

import dev.redlock.RedLockListener.CircuitState;
import dev.redlock.RedLockListener.Denial;
import dev.redlock.internal.lease.Listener;
import dev.redlock.internal.lease.Outcome;
import dev.redlock.internal.transport.BreakerState;
import java.time.Duration;
import java.util.List;

/**
 * The user's {@link RedLockListener} as the lease layer's {@link Listener}: each call is passed on
 * at once, on the same thread, with the outcomes and times turned into the API's types. Only a
 * RedLock with a listener has one, so a round without a listener converts nothing. What the user's
 * listener throws goes back to the caller (the event code, which logs it).
 */
final class ListenerAdapter implements Listener {

  private static final CircuitState[] STATES = CircuitState.values();

  private final RedLockListener listener;
  // whether the user's listener overrides releaseCompleted: if not, no release wakes the event
  // thread to call the no-op default
  private final boolean releaseCompleted;

  ListenerAdapter(RedLockListener listener) {
    this.listener = listener;
    this.releaseCompleted =
        overrides(listener, "releaseCompleted", String.class, List.class, Duration.class);
  }

  /**
   * Whether {@code listener}'s class has its own {@code method} rather than {@link
   * RedLockListener}'s no-op default; true if that cannot be told.
   */
  private static boolean overrides(
      RedLockListener listener, String method, Class<?>... parameters) {
    try {
      return listener.getClass().getMethod(method, parameters).getDeclaringClass()
          != RedLockListener.class;
    } catch (NoSuchMethodException | SecurityException e) {
      return true;
    }
  }

  @Override
  public boolean hearsReleaseCompleted() {
    return releaseCompleted;
  }

  @Override
  public void acquired(String resource, List<Outcome> outcomes, long elapsedNanos) {
    listener.acquired(resource, Outcomes.of(outcomes), Duration.ofNanos(elapsedNanos));
  }

  @Override
  public void denied(
      String resource, boolean unavailable, List<Outcome> outcomes, long elapsedNanos) {
    listener.denied(
        resource,
        unavailable ? Denial.UNAVAILABLE : Denial.TAKEN,
        Outcomes.of(outcomes),
        Duration.ofNanos(elapsedNanos));
  }

  @Override
  public void extended(String resource, List<Outcome> outcomes, long elapsedNanos) {
    listener.extended(resource, Outcomes.of(outcomes), Duration.ofNanos(elapsedNanos));
  }

  @Override
  public void notExtended(String resource, List<Outcome> outcomes, long elapsedNanos) {
    listener.notExtended(resource, Outcomes.of(outcomes), Duration.ofNanos(elapsedNanos));
  }

  @Override
  public void lost(String resource, List<Outcome> outcomes, long elapsedNanos) {
    listener.lost(resource, Outcomes.of(outcomes), Duration.ofNanos(elapsedNanos));
  }

  @Override
  public void released(String resource, List<Outcome> outcomes, long elapsedNanos) {
    listener.released(resource, Outcomes.of(outcomes), Duration.ofNanos(elapsedNanos));
  }

  @Override
  public void releaseCompleted(String resource, List<Outcome> outcomes, long elapsedNanos) {
    listener.releaseCompleted(resource, Outcomes.of(outcomes), Duration.ofNanos(elapsedNanos));
  }

  @Override
  public void circuitChanged(String node, BreakerState state) {
    listener.circuitChanged(node, STATES[state.ordinal()]);
  }

  @Override
  public void internalError(String where, Throwable error) {
    listener.internalError(where, error);
  }

  /** The user's listener's, so that a log line about it names it as before. */
  @Override
  public String toString() {
    return listener.toString();
  }
}
