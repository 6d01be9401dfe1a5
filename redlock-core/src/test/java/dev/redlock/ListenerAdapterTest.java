package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The lease layer's view of the user's listener: which of its calls it hears. */
class ListenerAdapterTest {

  /**
   * A listener that does not override {@code releaseCompleted} is known not to hear it, so that no
   * release wakes the event thread to call the no-op default; one that does, by a class or by an
   * interface of its own, hears it.
   */
  @Test
  void onlyAListenerThatOverridesReleaseCompletedHearsIt() {
    RedLockListener alertsOnly =
        new RedLockListener() {
          @Override
          public void circuitChanged(String node, CircuitState state) {}
        };
    assertFalse(new ListenerAdapter(alertsOnly).hearsReleaseCompleted());
    assertFalse(new ListenerAdapter(new RedLockListener() {}).hearsReleaseCompleted());
    RedLockListener completions =
        new RedLockListener() {
          @Override
          public void releaseCompleted(
              String resource, List<NodeOutcome> outcomes, Duration elapsed) {}
        };
    assertTrue(new ListenerAdapter(completions).hearsReleaseCompleted());
    assertTrue(new ListenerAdapter(new Completions() {}).hearsReleaseCompleted());
  }

  /** An internal error reaches the user's listener as it came, and log lines name that listener. */
  @Test
  void anInternalErrorIsForwardedAndTheAdapterIsNamedAsTheUsersListener() {
    List<Object> heard = new java.util.ArrayList<>();
    RedLockListener user =
        new RedLockListener() {
          @Override
          public void internalError(String where, Throwable error) {
            heard.add(where);
            heard.add(error);
          }

          @Override
          public String toString() {
            return "the user's listener";
          }
        };
    ListenerAdapter adapter = new ListenerAdapter(user);
    IllegalStateException error = new IllegalStateException("boom");
    adapter.internalError("renewal", error);
    assertEquals(List.of("renewal", error), heard);
    assertEquals("the user's listener", adapter.toString());
  }

  /** A user's listener interface with its own default for releaseCompleted. */
  private interface Completions extends RedLockListener {
    @Override
    default void releaseCompleted(String resource, List<NodeOutcome> outcomes, Duration elapsed) {}
  }
}
