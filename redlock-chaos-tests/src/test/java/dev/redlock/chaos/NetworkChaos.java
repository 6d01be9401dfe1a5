package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.RedLockException;
import dev.redlock.testkit.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Small helpers shared by the network chaos scenarios: bounded polls, RedLock clients on a {@link
 * ChaosCluster}, assertions on what every master holds, and a barrier that proves every client
 * connection has delivered what a fault held back.
 */
final class NetworkChaos {

  /** How often polls look again. */
  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  private static final AtomicInteger resources = new AtomicInteger();

  private NetworkChaos() {}

  /**
   * A resource name no other test uses, so bytes a previous test's fault held back cannot touch it.
   */
  static String resource(String prefix) {
    return "chaos:" + prefix + ":" + resources.incrementAndGet() + ":" + System.nanoTime();
  }

  /** A RedLock on every (proxied) master of the cluster. */
  static RedLock redlock(ChaosCluster cluster, Duration nodeTimeout) {
    return admitted(RedLock.builder().nodes(cluster.uris()).nodeTimeout(nodeTimeout).build());
  }

  /**
   * Admits the cluster's brand-new masters, as an operator would, so the restart guard lets them
   * vote.
   */
  static RedLock admitted(RedLock redlock) {
    redlock.admitFreshNodes();
    return redlock;
  }

  /**
   * Opens every connection of {@code redlock} (waiting until a round reaches every master) and
   * loads the extend and release scripts on every master, so that faults injected next meet live
   * connections and one-round-trip Lua commands. (A master with an empty script cache answers the
   * first EVALSHA with NOSCRIPT and needs a second round trip; a connection opened under a fault
   * slower than the node timeout never completes its handshake.)
   */
  static void warmUp(ChaosCluster cluster, RedLock redlock) {
    Duration timeout = Duration.ofSeconds(5);
    awaitDrained(cluster, redlock, timeout);
    // Retried: on a loaded machine one round can miss the node timeout; that is not under test.
    awaitTrue(
        timeout,
        () -> {
          try (Lease lease = redlock.acquire(resource("warm-up"), timeout, timeout)) {
            return lease.extend(timeout);
          } catch (RedLockException e) {
            return false;
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
          }
        },
        () -> "no acquire and extend succeeded on a healthy cluster");
  }

  /**
   * Waits until {@code condition} holds, looking every few milliseconds.
   *
   * @throws AssertionError with {@code message} if it does not hold within {@code timeout}
   */
  static void awaitTrue(Duration timeout, BooleanSupplier condition, Supplier<String> message) {
    Poll.until(timeout, condition, message);
  }

  /** Which masters hold {@code key}, read directly. */
  static List<Integer> holders(ChaosCluster cluster, String key) {
    List<Integer> holders = new ArrayList<>();
    for (int i = 0; i < cluster.size(); i++) {
      if (cluster.admin(i).exists(key)) {
        holders.add(i);
      }
    }
    return holders;
  }

  /** Waits until no master holds {@code key}. */
  static void awaitNoHolder(ChaosCluster cluster, String key, Duration timeout) {
    awaitTrue(
        timeout,
        () -> holders(cluster, key).isEmpty(),
        () -> "'" + key + "' still held on nodes " + holders(cluster, key));
  }

  /** Waits until none of {@code nodes} holds {@code key}. */
  static void awaitNoHolder(ChaosCluster cluster, String key, List<Integer> nodes, Duration t) {
    awaitTrue(
        t,
        () -> holders(cluster, key).stream().noneMatch(nodes::contains),
        () ->
            "'"
                + key
                + "' still held on nodes "
                + holders(cluster, key)
                + ", expected none of "
                + nodes);
  }

  /** Waits until exactly {@code expected} hold {@code key}. */
  static void awaitHolders(ChaosCluster cluster, String key, List<Integer> expected, Duration t) {
    awaitTrue(
        t,
        () -> holders(cluster, key).equals(expected),
        () -> "'" + key + "' held on " + holders(cluster, key) + ", expected " + expected);
  }

  /**
   * Waits until every connection of {@code redlock} has carried a command issued now to its master,
   * which proves (connections being FIFO) that whatever a healed fault held back on them has been
   * executed or dropped. Acquires fresh sentinel resources until one round reaches all masters.
   */
  static void awaitDrained(ChaosCluster cluster, RedLock redlock, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      String sentinel = resource("drain");
      Optional<Lease> lease = Optional.empty();
      try {
        lease = redlock.tryAcquire(sentinel, Duration.ofSeconds(5));
      } catch (RedLockException e) {
        // Connections still coming back: try again.
      }
      if (lease.isPresent()) {
        try (Lease held = lease.get()) {
          long roundDeadline =
              Math.min(deadline, System.nanoTime() + Duration.ofSeconds(1).toNanos());
          while (holders(cluster, sentinel).size() < cluster.size()
              && System.nanoTime() - roundDeadline < 0) {
            LockSupport.parkNanos(POLL_NANOS);
          }
          if (holders(cluster, sentinel).size() == cluster.size()) {
            return;
          }
        }
      }
      if (System.nanoTime() - deadline > 0) {
        fail("connections did not drain within " + timeout.toMillis() + " ms");
      }
      LockSupport.parkNanos(POLL_NANOS);
    }
  }

  /** The statuses of {@code outcomes}, in node order. */
  static List<NodeOutcome.Status> statuses(List<NodeOutcome> outcomes) {
    return outcomes.stream().map(NodeOutcome::status).toList();
  }

  /** Asserts the status of each node, in node order. */
  static void assertStatuses(List<NodeOutcome.Status> expected, RedLockException e) {
    assertEquals(expected, statuses(e.outcomes()), () -> "outcomes: " + e.outcomes());
  }

  /** Milliseconds since {@code startNanos}. */
  static long millisSince(long startNanos) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
  }
}
