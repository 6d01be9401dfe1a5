package dev.redlock.spring;

import static dev.redlock.spring.Masters.admitted;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.integration.support.locks.DistributedLock;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * What {@link RedLockRegistry} offers only on Spring Integration 7.x: its locks are {@link
 * DistributedLock}s, with a TTL per hold, and it is a {@code
 * RenewableLockRegistry<DistributedLock>} to 7.x code. The build leaves this class out of the
 * Spring Integration 6.5 run, which has no {@code DistributedLock}.
 */
class DistributedLockIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final String PREFIX = "it:";
  private static final Duration WAIT = Duration.ofSeconds(5);

  private final List<RedLock> redlocks = new ArrayList<>();

  @AfterEach
  void closeRedLocks() {
    redlocks.forEach(RedLock::close);
  }

  private RedLock redlock(RedisCluster cluster) {
    RedLock redlock =
        RedLock.builder().nodes(cluster.uris()).nodeTimeout(Duration.ofMillis(200)).build();
    redlocks.add(redlock);
    return admitted(redlock);
  }

  private static boolean onAnotherThread(BooleanSupplier attempt) throws Exception {
    return CompletableFuture.supplyAsync(attempt::getAsBoolean).get(10, TimeUnit.SECONDS);
  }

  @Test
  @SuppressWarnings("unchecked") // the registry implements 7.x's interfaces raw, as 6.5 has them
  void obtainReturnsADistributedLockThatSevenXCodeTakesAsSuch(RedisCluster cluster)
      throws Exception {
    RenewableLockRegistry<DistributedLock> registry =
        RedLockRegistry.builder(redlock(cluster)).keyPrefix(PREFIX).build();

    DistributedLock lock = registry.obtain("typed");
    assertInstanceOf(DistributedLock.class, lock);
    assertTrue(lock.tryLock(WAIT, Duration.ofSeconds(5)));
    registry.renewLock("typed", Duration.ofSeconds(6));
    lock.unlock();
  }

  @Test
  void aHoldKeepsTheTtlItWasLockedWith(RedisCluster cluster) throws Exception {
    RedLockRegistry registry =
        RedLockRegistry.builder(redlock(cluster))
            .keyPrefix(PREFIX)
            .ttl(Duration.ofSeconds(20))
            .build();
    DistributedLock lock = (DistributedLock) registry.obtain("ttl");
    String resource = PREFIX + "ttl";

    lock.lock(Duration.ofSeconds(5));
    long pttl = cluster.node(0).admin().pttl(resource);
    assertTrue(pttl > 3_000 && pttl <= 5_000, "pttl " + pttl);
    lock.lock(Duration.ofSeconds(30)); // nested: keeps the outer hold's TTL
    assertTrue(cluster.node(1).admin().pttl(resource) <= 5_000);
    lock.unlock();
    lock.unlock();

    assertTrue(lock.tryLock(WAIT, Duration.ofSeconds(7)));
    pttl = cluster.node(2).admin().pttl(resource);
    assertTrue(pttl > 5_000 && pttl <= 7_000, "pttl " + pttl);
    lock.unlock();

    lock.lock();
    assertTrue(cluster.node(0).admin().pttl(resource) > 15_000, "the registry's TTL");
    lock.unlock();
  }

  @Test
  void aPerCallTtlThatLeavesNoRoomForTheSafetyMarginIsRefused(RedisCluster cluster)
      throws Exception {
    RedLockRegistry registry =
        RedLockRegistry.builder(redlock(cluster))
            .ttl(Duration.ofSeconds(20))
            .safetyMargin(Duration.ofSeconds(4))
            .build();
    DistributedLock lock = (DistributedLock) registry.obtain("margin");

    assertThrows(IllegalArgumentException.class, () -> lock.lock(Duration.ofSeconds(12)));
    assertThrows(
        IllegalArgumentException.class,
        () -> lock.tryLock(WAIT, Duration.ofMinutes(5)),
        "maxLease");
    assertTrue(onAnotherThread(lock::tryLock), "nothing is held after a refusal");
  }
}
