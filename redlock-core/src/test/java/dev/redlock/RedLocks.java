package dev.redlock;

import dev.redlock.internal.transport.SelectorLoop;
import dev.redlock.internal.transport.Transport;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * RedLocks on the test cluster's real masters, what the integration tests ask of those masters, and
 * the package-private test hooks of the API: a public fixture, for the tests of every package.
 */
public final class RedLocks {

  private RedLocks() {}

  /** The node timeout of {@link #redlock}. */
  public static final Duration NODE_TIMEOUT = Duration.ofMillis(100);

  /** The TTL most tests use. */
  public static final Duration TTL = Duration.ofSeconds(10);

  /** An admitted RedLock on the first {@code n} masters. */
  public static RedLock redlock(RedisCluster cluster, int n) {
    return redlock(cluster.uris().subList(0, n));
  }

  /** An admitted RedLock on {@code uris}. */
  public static RedLock redlock(List<String> uris) {
    return admitted(RedLock.builder().nodes(uris).nodeTimeout(NODE_TIMEOUT).build());
  }

  /** The test masters are brand new: admit them, as an operator would for a new cluster. */
  public static RedLock admitted(RedLock redlock) {
    redlock.admitFreshNodes();
    return redlock;
  }

  /** Polls until the condition holds or five seconds pass. */
  public static void eventually(String what, BooleanSupplier condition) {
    Poll.until(what, condition);
  }

  /** The keys on a node, sorted, leaving out the library's own ({@code redlock:...}). */
  public static List<String> userKeys(RedisCluster cluster, int node) {
    Object keys = cluster.node(node).admin().command("KEYS", "*");
    return ((List<?>) keys)
        .stream().map(String::valueOf).filter(k -> !k.startsWith("redlock:")).sorted().toList();
  }

  /** Whether none of {@code nodes} holds {@code key}. */
  public static boolean keysGone(RedisCluster cluster, String key, int... nodes) {
    for (int i : nodes) {
      RedisAdmin admin = cluster.node(i).admin();
      if (admin.exists(key)) {
        return false;
      }
    }
    return true;
  }

  /** The selector the RedLock's plaintext masters share, or null: its package-private hook. */
  public static SelectorLoop selectorLoop(RedLock redlock) {
    return redlock.selectorLoop();
  }

  /** Picks the transport of plaintext masters, whatever the build's property: a builder hook. */
  public static RedLockBuilder transport(RedLockBuilder builder, Transport transport) {
    return builder.transport(transport);
  }
}
