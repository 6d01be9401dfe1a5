package dev.redlock.spring.boot;

import dev.redlock.RedLock;
import java.time.Duration;
import java.util.Optional;
import org.springframework.beans.factory.BeanFactoryUtils;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * The {@code redlock.max-lease-time} the starter builds its RedLock with, and where it comes from:
 * the property when it is set; unset, the longest TTL the context's own configuration asks for (at
 * least the library's default of 1 min): every ShedLock {@code lockAtMostFor} when a {@code
 * RedLockProvider} locks the tasks, and {@code redlock.registry.ttl} when a {@code RedLockRegistry}
 * is defined. Immutable.
 *
 * @param value the longest TTL, and the restart guard's wait
 * @param source where it comes from, for the startup line and the messages
 * @param set whether {@code redlock.max-lease-time} is set
 */
record MaxLeaseTime(Duration value, String source, boolean set) {

  static final String PROVIDER = "dev.redlock.shedlock.RedLockProvider";
  static final String REGISTRY = "dev.redlock.spring.RedLockRegistry";

  /** The property's value if set; otherwise derived from the context's bean definitions. */
  static MaxLeaseTime of(
      RedLockProperties properties, ConfigurableListableBeanFactory beanFactory) {
    if (properties.getMaxLeaseTime() != null) {
      return new MaxLeaseTime(properties.getMaxLeaseTime(), "set", true);
    }
    MaxLeaseTime longest =
        new MaxLeaseTime(RedLock.DEFAULT_MAX_LEASE_TIME, "unset: the default", false);
    if (defines(beanFactory, REGISTRY)) {
      longest = longest.atLeast(properties.getRegistry().getTtl(), "unset: redlock.registry.ttl");
    }
    if (defines(beanFactory, PROVIDER)) {
      Optional<ShedLockTasks.Task> task = ShedLockTasks.of(beanFactory).longest();
      if (task.isPresent()) {
        longest =
            longest.atLeast(
                task.get().lockAtMostFor(),
                "unset: the longest lockAtMostFor, of ShedLock task " + task.get());
      }
    }
    return longest;
  }

  private MaxLeaseTime atLeast(Duration other, String otherSource) {
    return other.compareTo(value) > 0 ? new MaxLeaseTime(other, otherSource, false) : this;
  }

  /** How the messages name it: {@code redlock.max-lease-time (PT10M, unset: ...)}. */
  @Override
  public String toString() {
    return "redlock.max-lease-time (" + value + (set ? "" : ", " + source) + ")";
  }

  private static boolean defines(ConfigurableListableBeanFactory beanFactory, String className) {
    ClassLoader loader = beanFactory.getBeanClassLoader();
    if (!ClassUtils.isPresent(className, loader)) {
      return false;
    }
    Class<?> type = ClassUtils.resolveClassName(className, loader);
    return BeanFactoryUtils.beanNamesForTypeIncludingAncestors(beanFactory, type, true, false)
            .length
        > 0;
  }
}
