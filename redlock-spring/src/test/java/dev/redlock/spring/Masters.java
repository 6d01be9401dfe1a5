package dev.redlock.spring;

import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.IntStream;

/** What the tests read from the masters directly, and how they wait for it. */
final class Masters {

  private Masters() {}

  /**
   * Admits brand-new masters, as an operator would, retrying until every master is admitted: on a
   * loaded machine one round can miss a master, whose votes the restart guard would then refuse.
   */
  static RedLock admitted(RedLock redlock) {
    awaitTrue(
        Duration.ofSeconds(10),
        () ->
            redlock.admitFreshNodes().stream()
                .map(NodeOutcome::status)
                .allMatch(s -> s == NodeOutcome.Status.GRANTED || s == NodeOutcome.Status.TAKEN),
        () -> "masters not admitted");
    return redlock;
  }

  /** Which masters hold {@code resource}, read directly. */
  static List<Integer> holders(RedisCluster cluster, String resource) {
    return IntStream.range(0, cluster.nodes().size())
        .filter(i -> cluster.node(i).admin().exists(resource))
        .boxed()
        .toList();
  }

  /**
   * Waits until exactly {@code expected} hold {@code resource}: a round returns at a quorum, so the
   * last master may answer a moment later.
   */
  static void awaitHolders(RedisCluster cluster, String resource, List<Integer> expected) {
    awaitTrue(
        Duration.ofSeconds(5),
        () -> holders(cluster, resource).equals(expected),
        () -> resource + " held on " + holders(cluster, resource) + ", expected " + expected);
  }

  /**
   * Waits until {@code condition} holds, looking every few milliseconds.
   *
   * @throws AssertionError with {@code message} if it does not hold within {@code timeout}
   */
  static void awaitTrue(Duration timeout, BooleanSupplier condition, Supplier<String> message) {
    Poll.until(timeout, condition, message);
  }
}
