package dev.redlock.spring.boot;

import dev.redlock.RedLock;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.beans.factory.BeanFactoryUtils;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * Fails startup, rather than every run of a task, when the context's ShedLock tasks cannot be
 * locked: ShedLock in use with no {@link LockProvider} (redlock-shedlock missing), or, with the
 * starter's RedLock behind a {@code RedLockProvider}, a task whose {@code lockAtMostFor} is longer
 * than {@code redlock.max-lease-time} or not longer than the node timeout. Runs once every
 * singleton exists, when each task's bean can be seen behind its proxy.
 */
final class ShedLockCheck implements SmartInitializingSingleton {

  private final ConfigurableListableBeanFactory beanFactory;
  private final RedLockProperties properties;
  // Set by the RedLock bean's creation, before this runs (same thread, during the refresh).
  private volatile RedLock built;
  private volatile MaxLeaseTime maxLeaseTime;

  ShedLockCheck(ConfigurableListableBeanFactory beanFactory, RedLockProperties properties) {
    this.beanFactory = beanFactory;
    this.properties = properties;
  }

  /** The starter built {@code redlock} with {@code maxLeaseTime}. */
  void builtWith(RedLock redlock, MaxLeaseTime maxLeaseTime) {
    this.built = redlock;
    this.maxLeaseTime = maxLeaseTime;
  }

  @Override
  public void afterSingletonsInstantiated() {
    ShedLockTasks tasks = ShedLockTasks.of(beanFactory);
    if (!tasks.inUse()) {
      return;
    }
    String[] providers =
        BeanFactoryUtils.beanNamesForTypeIncludingAncestors(
            beanFactory, LockProvider.class, true, false);
    if (providers.length == 0) {
      throw new IllegalStateException(noProvider(tasks));
    }
    if (built == null || !lockedByTheStartersRedLock(providers)) {
      return;
    }
    if (properties.isRestartGuard()) {
      List<ShedLockTasks.Task> tooLong =
          tasks.tasks().stream()
              .filter(t -> t.lockAtMostFor().compareTo(maxLeaseTime.value()) > 0)
              .toList();
      if (!tooLong.isEmpty()) {
        throw new IllegalStateException(tooLong(tooLong));
      }
    }
    Duration nodeTimeout = longestNodeTimeout();
    List<ShedLockTasks.Task> tooShort =
        tasks.tasks().stream().filter(t -> t.lockAtMostFor().compareTo(nodeTimeout) <= 0).toList();
    if (!tooShort.isEmpty()) {
      throw new IllegalStateException(
          "the lockAtMostFor of "
              + count(tooShort)
              + " is not longer than the node timeout ("
              + nodeTimeout
              + ", redlock.node-timeout), so every run would fail to lock: "
              + list(tooShort)
              + ". Give each a longer lockAtMostFor, or lower redlock.node-timeout.");
    }
  }

  /** One RedLockProvider, in a context whose only RedLock is the starter's. */
  private boolean lockedByTheStartersRedLock(String[] providers) {
    if (providers.length != 1 || !isRedLockProvider(providers[0])) {
      return false;
    }
    String[] redlocks =
        BeanFactoryUtils.beanNamesForTypeIncludingAncestors(beanFactory, RedLock.class);
    return redlocks.length == 1 && beanFactory.getBean(redlocks[0]) == built;
  }

  private boolean isRedLockProvider(String bean) {
    Class<?> type = beanFactory.getType(bean);
    return type != null && type.getName().equals(MaxLeaseTime.PROVIDER);
  }

  private String tooLong(List<ShedLockTasks.Task> tooLong) {
    Duration needed =
        tooLong.stream().map(ShedLockTasks.Task::lockAtMostFor).max(Duration::compareTo).get();
    return maxLeaseTime
        + " is shorter than the lockAtMostFor of "
        + count(tooLong)
        + ", so every run would fail to lock (RedLock refuses a TTL longer than its max-lease-time,"
        + " which the restart guard relies on): "
        + list(tooLong)
        + ". Set redlock.max-lease-time to at least "
        + needed
        + (maxLeaseTime.set()
            ? ", or leave it unset: it is then the longest lockAtMostFor of the tasks."
            : ".")
        + " A master that restarts without its data then stays out of the vote for about that"
        + " long.";
  }

  private String noProvider(ShedLockTasks tasks) {
    ClassLoader loader = beanFactory.getBeanClassLoader();
    String remedy;
    if (!ClassUtils.isPresent(MaxLeaseTime.PROVIDER, loader)) {
      remedy =
          "Add the dependency dev.redlock:redlock-shedlock: the RedLock starter then provides a"
              + " LockProvider on its RedLock (or define a LockProvider bean of your own).";
    } else if (!properties.getShedlock().isEnabled()) {
      remedy =
          "redlock.shedlock.enabled is false: set it to true (the default) for the starter's"
              + " RedLockProvider, or define a LockProvider bean of your own.";
    } else {
      remedy = "Define a LockProvider bean, e.g. new RedLockProvider(redlock).";
    }
    return "ShedLock is in use ("
        + tasks.evidence()
        + ") but the context has no ShedLock LockProvider, so every locked task would fail at"
        + " each run. "
        + remedy;
  }

  private Duration longestNodeTimeout() {
    Duration longest = properties.getNodeTimeout();
    for (RedLockProperties.Datacenter datacenter : properties.getDatacenters().values()) {
      if (datacenter.getNodeTimeout().compareTo(longest) > 0) {
        longest = datacenter.getNodeTimeout();
      }
    }
    return longest;
  }

  private static String count(List<ShedLockTasks.Task> tasks) {
    return tasks.size() == 1 ? "ShedLock task" : tasks.size() + " ShedLock tasks";
  }

  private static String list(List<ShedLockTasks.Task> tasks) {
    return tasks.stream().map(ShedLockTasks.Task::toString).collect(Collectors.joining(", "));
  }
}
