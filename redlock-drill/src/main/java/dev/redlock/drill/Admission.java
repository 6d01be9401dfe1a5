package dev.redlock.drill;

import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.RedLock;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The masters' answers to the admission: per master, the best answer of every call. {@link #admit}
 * makes it. Immutable.
 *
 * @param calls how many times {@link RedLock#admitFreshNodes()} was called
 * @param statuses per master: GRANTED (admitted by a call), TAKEN (already trusted) or why no call
 *     reached it
 * @param details per master, the error of a failure; otherwise empty
 */
record Admission(int calls, Map<String, Status> statuses, Map<String, String> details) {

  /** How often the admission is retried for masters still connecting, 100 ms apart. */
  private static final int ADMIT_RETRIES = 5;

  Admission {
    statuses = Collections.unmodifiableMap(new LinkedHashMap<>(statuses));
    details = Map.copyOf(details);
  }

  /**
   * Whether some master has not answered yet in a way that a retry could change: it timed out or
   * was not connected yet. A refused connection, a refused password or an error is an answer that a
   * retry 100 ms later would only repeat (and log again).
   */
  private static boolean stillConnecting(
      Map<String, Status> statuses, Map<String, String> details) {
    for (Map.Entry<String, Status> entry : statuses.entrySet()) {
      Status status = entry.getValue();
      String detail = details.getOrDefault(entry.getKey(), "");
      if (status == Status.TIMED_OUT
          || status == Status.PENDING
          || (status == Status.FAILED
              && detail.toLowerCase(java.util.Locale.ROOT).contains("not connected"))) {
        return true;
      }
    }
    return false;
  }

  /** Whether the master trusts its dataset now: admitted by a call, or already. */
  static boolean answered(Status status) {
    return status == Status.GRANTED || status == Status.TAKEN;
  }

  /**
   * Calls {@link RedLock#admitFreshNodes()} once, on the first worker's RedLock (an admission is
   * the masters' state, for every client: once, from one place, as the README says; one call per
   * worker only logged each master not admitted once per worker), then retries a few times while
   * some master has answered none of the calls (a connection still being opened).
   */
  static Admission admit(List<RedLock> clients) {
    Map<String, Status> best = new LinkedHashMap<>();
    Map<String, String> details = new LinkedHashMap<>();
    int calls = 1;
    keepBest(clients.get(0).admitFreshNodes(), best, details);
    for (int retry = 0; retry < ADMIT_RETRIES && stillConnecting(best, details); retry++) {
      try {
        TimeUnit.MILLISECONDS.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      keepBest(clients.get(0).admitFreshNodes(), best, details);
      calls++;
    }
    return new Admission(calls, best, details);
  }

  /** Keeps, per master, the best answer so far: GRANTED (admitted now), TAKEN, or a failure. */
  private static void keepBest(
      List<NodeOutcome> outcomes, Map<String, Status> best, Map<String, String> details) {
    for (NodeOutcome outcome : outcomes) {
      Status previous = best.get(outcome.node());
      Status status = outcome.status();
      if (previous == null
          || status == Status.GRANTED
          || (status == Status.TAKEN && previous != Status.GRANTED)) {
        best.put(outcome.node(), status);
        details.put(outcome.node(), outcome.detail());
      }
    }
  }
}
