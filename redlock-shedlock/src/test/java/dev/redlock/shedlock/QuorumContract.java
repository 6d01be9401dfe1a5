package dev.redlock.shedlock;

import static java.time.Duration.ZERO;
import static java.time.Duration.ofSeconds;
import static org.assertj.core.api.Assertions.assertThat;

import dev.redlock.RedLock;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.function.BooleanSupplier;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.test.support.AbstractExtensibleLockProviderIntegrationTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * ShedLock's own contract tests ({@link AbstractExtensibleLockProviderIntegrationTest}, which
 * extends {@code AbstractLockProviderIntegrationTest} and runs {@code FuzzTester}) against a {@link
 * RedLockProvider} on real masters. Each subclass registers a cluster of a different size. One test
 * is overridden, and says why. Each test gets a RedLock of its own: {@code shouldTimeout} one with
 * a node timeout below its 50 ms lock, the others one that a loaded 2-core machine can meet.
 */
@DisplayNameGeneration(ContractClassNames.class)
abstract class QuorumContract extends AbstractExtensibleLockProviderIntegrationTest {

  /**
   * The node timeout for {@code shouldTimeout}, which locks for 50 ms: RedLock takes only TTLs
   * above its node timeout, and this leaves the 50 ms lock's TTL (less the moment since its
   * createdAt) well above it.
   */
  static final Duration SHORT_NODE_TIMEOUT = Duration.ofMillis(25);

  /**
   * The node timeout for every other test, whose locks are 800 ms or longer; redlock-core's
   * contention IT uses the same. {@code FuzzTester} runs eight threads that retry as fast as they
   * can: on a loaded 2-core machine 25 ms was missed often (a missed answer is a failed vote, and
   * too many make {@code lock} throw). Longer is not better: a starved master's breaker opens, and
   * its stalled link is dropped, only after its answers miss the node timeout, and until then the
   * retries pile up commands for it (1 s did worse than this under load).
   */
  static final Duration NODE_TIMEOUT = Duration.ofMillis(200);

  private static final Set<String> SHORT_LOCK_TESTS = Set.of("shouldTimeout");

  /**
   * {@code FuzzTester} and {@code lockConfig(name)} lock for 5 minutes: the guard must allow it.
   */
  static final Duration MAX_LEASE_TIME = Duration.ofMinutes(5);

  private RedisCluster cluster;
  private RedLock redlock;
  private RedLockProvider provider;
  private Duration nodeTimeout;

  @BeforeEach
  void startRedLock(RedisCluster cluster, TestInfo test) {
    this.cluster = cluster;
    String name = test.getTestMethod().orElseThrow().getName();
    nodeTimeout = SHORT_LOCK_TESTS.contains(name) ? SHORT_NODE_TIMEOUT : NODE_TIMEOUT;
    redlock =
        RedLock.builder()
            .nodes(cluster.uris())
            .nodeTimeout(nodeTimeout)
            .maxLeaseTime(MAX_LEASE_TIME)
            .build();
    redlock.admitFreshNodes(); // the masters are new (and flushed before each test)
    provider = new RedLockProvider(redlock);
  }

  @AfterEach
  void closeRedLock() {
    redlock.close();
  }

  @Override
  protected ExtensibleLockProvider getLockProvider() {
    return provider;
  }

  /** Locked: a majority of the masters hold the key (lock returns as soon as they answered). */
  @Override
  protected void assertLocked(String lockName) {
    assertThat(holders(lockName))
        .describedAs("masters holding %s", lockName)
        .isGreaterThanOrEqualTo(quorum());
  }

  /**
   * Unlocked: at once, too few masters hold the key for a quorum; and soon no master holds it (a
   * release waits for each master only up to the node timeout, so a slow one may still be on its
   * way).
   */
  @Override
  protected void assertUnlocked(String lockName) {
    assertThat(holders(lockName)).describedAs("masters holding %s", lockName).isLessThan(quorum());
    eventually("no master holds " + lockName, () -> holders(lockName) == 0);
  }

  /**
   * Overrides ShedLock's version, which locks for 2 ms and sleeps 4 ms: RedLock refuses a TTL that
   * is not above its node timeout (a master's answer could come after the lock expired), so no
   * quorum lock can be taken for 2 ms. Same steps with a lock for four node timeouts, and instead
   * of a fixed sleep, a wait until the lock has expired on every master.
   */
  @Override
  @Test
  public void shouldNotBeAbleToExtendExpiredLock() {
    Optional<SimpleLock> lock =
        getLockProvider().lock(lockConfig(LOCK_NAME1, nodeTimeout.multipliedBy(4), ZERO));
    assertThat(lock).isNotEmpty();
    eventually("the lock expired on every master", () -> holders(LOCK_NAME1) == 0);

    Optional<SimpleLock> newLock = lock.get().extend(ofSeconds(10), ZERO);
    assertThat(newLock).isEmpty();
    assertUnlocked(LOCK_NAME1);
  }

  private int holders(String lockName) {
    String key = RedLockProvider.DEFAULT_KEY_PREFIX + lockName;
    int holders = 0;
    for (int i = 0; i < cluster.nodes().size(); i++) {
      if (cluster.node(i).admin().exists(key)) {
        holders++;
      }
    }
    return holders;
  }

  private int quorum() {
    return cluster.nodes().size() / 2 + 1;
  }

  /** Polls until the condition holds or five seconds pass. */
  static void eventually(String what, BooleanSupplier condition) {
    Poll.until(what, condition);
  }
}
