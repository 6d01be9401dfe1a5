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
 * @param calls on how many RedLocks {@link RedLock#admitFreshNodes()} was called
 * @param statuses per master: GRANTED (admitted by a call), TAKEN (already trusted) or why no call
 *     reached it
 * @param details per master, the error of a failure; otherwise empty
 */
record Admission(int calls, Map<String, Status> statuses, Map<String, String> details) {

  /** How often the admission is retried for masters that did not answer it, 100 ms apart. */
  private static final int ADMIT_RETRIES = 5;

  Admission {
    statuses = Collections.unmodifiableMap(new LinkedHashMap<>(statuses));
    details = Map.copyOf(details);
  }

  static boolean allAnswered(Map<String, Status> statuses) {
    return statuses.values().stream().allMatch(Admission::answered);
  }

  /** Whether the master trusts its dataset now: admitted by a call, or already. */
  static boolean answered(Status status) {
    return status == Status.GRANTED || status == Status.TAKEN;
  }

  /**
   * Calls {@link RedLock#admitFreshNodes()} on every worker's RedLock, then retries a few times on
   * the first while some master has answered none of the calls (a connection still being opened).
   */
  static Admission admit(List<RedLock> clients) {
    Map<String, Status> best = new LinkedHashMap<>();
    Map<String, String> details = new LinkedHashMap<>();
    for (RedLock client : clients) {
      keepBest(client.admitFreshNodes(), best, details);
    }
    for (int retry = 0; retry < ADMIT_RETRIES && !allAnswered(best); retry++) {
      try {
        TimeUnit.MILLISECONDS.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      keepBest(clients.get(0).admitFreshNodes(), best, details);
    }
    return new Admission(clients.size(), best, details);
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
