package dev.redlock.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * Failsafe runs this module's tests on Spring Integration 7.x and again on 6.5 (the {@code
 * spring-integration-6.5} execution): this checks that each run has the line the build named, and
 * that the registry loads and can be inspected there as Spring inspects a bean.
 */
class SpringIntegrationLineIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(1);

  private static final String DISTRIBUTED_LOCK =
      "org.springframework.integration.support.locks.DistributedLock";

  @Test
  void runsOnTheSpringIntegrationTheBuildNamed() {
    String expected = System.getProperty("redlock.spring.integration.version");
    assumeTrue(expected != null, "only failsafe names the expected version");
    String jar = LockRegistry.class.getProtectionDomain().getCodeSource().getLocation().getPath();
    assertTrue(jar.endsWith("/spring-integration-core-" + expected + ".jar"), jar);
  }

  @Test
  void theRegistryLoadsAndShowsItsWholeSurfaceToReflection() {
    // What Spring does with a bean's class: every declared method and generic interface.
    Method[] methods = RedLockRegistry.class.getDeclaredMethods();
    assertTrue(methods.length > 0);
    Arrays.stream(methods).forEach(Method::getGenericReturnType);
    Arrays.stream(RedLockRegistry.class.getDeclaredClasses()).forEach(Class::getDeclaredMethods);
    assertEquals(3, RedLockRegistry.class.getGenericInterfaces().length);
  }

  @Test
  void obtainReturnsADistributedLockExactlyWhereSpringIntegrationHasTheType(RedisCluster cluster)
      throws Exception {
    boolean present = isPresent(DISTRIBUTED_LOCK);
    String expected = System.getProperty("redlock.spring.integration.version");
    if (expected != null) {
      assertEquals(!expected.startsWith("6."), present, "DistributedLock on " + expected);
    }
    try (RedLock redlock = Masters.admitted(RedLock.builder().nodes(cluster.uris()).build())) {
      Lock lock = RedLockRegistry.builder(redlock).build().obtain("line");

      boolean distributed =
          Arrays.stream(lock.getClass().getInterfaces())
              .anyMatch(type -> type.getName().equals(DISTRIBUTED_LOCK));
      assertEquals(present, distributed, lock.getClass().getName());
      assertTrue(lock.tryLock());
      lock.unlock();
    }
  }

  private static boolean isPresent(String className) {
    try {
      Class.forName(className, false, SpringIntegrationLineIT.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }
}
