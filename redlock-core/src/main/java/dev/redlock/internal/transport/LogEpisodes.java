package dev.redlock.internal.transport;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Which troubles of a master some RedLock in this process is already telling, so that each is
 * logged once per episode however many RedLocks meet it (a drill's workers, an application with a
 * RedLock per module): the first to see a trouble start logs it at WARN, the last to see it end
 * logs its end; the others log at DEBUG. An episode is one trouble (by a key naming the master and
 * the kind) from the time the first RedLock meets it until every RedLock that met it saw it end, or
 * was closed.
 *
 * <p>The holders are the clients that met the trouble, held weakly: a RedLock dropped without
 * {@code close()} ends its part when it is collected. An entry lives only while some holder is in
 * its episode, so the state is bounded by the troubles open now. Thread-safe; called only when a
 * trouble starts or ends, never on the hot path.
 */
public final class LogEpisodes {

  private static final ReentrantLock LOCK = new ReentrantLock();
  private static final Map<String, Set<Object>> OPEN = new HashMap<>(); // guarded by LOCK

  private LogEpisodes() {}

  /**
   * Notes that {@code holder} meets the trouble {@code key}.
   *
   * @param key names the master and the kind of trouble, e.g. {@code 10.0.0.1:6379 unreachable}
   * @param holder the client that met it
   * @return true if no other holder in this process is in the episode: log its start at WARN
   */
  public static boolean start(String key, Object holder) {
    LOCK.lock();
    try {
      Set<Object> holders =
          OPEN.computeIfAbsent(key, k -> Collections.newSetFromMap(new WeakHashMap<>()));
      boolean first = holders.isEmpty();
      holders.add(holder);
      return first;
    } finally {
      LOCK.unlock();
    }
  }

  /**
   * Notes that the trouble {@code key} is over for {@code holder}.
   *
   * @param key as given to {@link #start}
   * @param holder the client that met it
   * @return true if {@code holder} was the last in the episode: log its end
   */
  public static boolean end(String key, Object holder) {
    LOCK.lock();
    try {
      Set<Object> holders = OPEN.get(key);
      if (holders == null || !holders.remove(holder)) {
        return false;
      }
      if (holders.isEmpty()) {
        OPEN.remove(key);
        return true;
      }
      return false;
    } finally {
      LOCK.unlock();
    }
  }

  /**
   * Takes {@code holder} out of every episode, quietly: its RedLock was closed.
   *
   * @param holder the client
   */
  public static void endAll(Object holder) {
    LOCK.lock();
    try {
      OPEN.values()
          .removeIf(
              holders -> {
                holders.remove(holder);
                return holders.isEmpty();
              });
    } finally {
      LOCK.unlock();
    }
  }
}
