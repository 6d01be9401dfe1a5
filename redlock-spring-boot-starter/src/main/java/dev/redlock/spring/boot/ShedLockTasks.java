package dev.redlock.spring.boot;

import java.lang.reflect.Method;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.aop.framework.AopProxyUtils;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.core.annotation.MergedAnnotation;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.annotation.MergedAnnotations.SearchStrategy;
import org.springframework.util.ClassUtils;

/**
 * The ShedLock tasks a context declares: its {@code @SchedulerLock} methods, each with the {@code
 * lockAtMostFor} ShedLock will lock it with (its own, or {@code @EnableSchedulerLock}'s {@code
 * defaultLockAtMostFor}), read the way ShedLock reads them (placeholders resolved, ISO-8601 or
 * {@code 10m}, a bare number in milliseconds). The annotations are found by name, so that the
 * starter needs no shedlock-spring to compile or to run. Immutable.
 */
final class ShedLockTasks {

  static final String SCHEDULER_LOCK = "net.javacrumbs.shedlock.spring.annotation.SchedulerLock";
  static final String ENABLE_SCHEDULER_LOCK =
      "net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock";

  // ShedLock's own duration syntax (its StringToDurationConverter).
  private static final Pattern ISO8601 = Pattern.compile("^[+-]?P.*$");
  private static final Pattern SIMPLE = Pattern.compile("^([+-]?\\d+)([a-zA-Z]{0,2})$");
  private static final Map<String, ChronoUnit> UNITS =
      Map.of(
          "", ChronoUnit.MILLIS,
          "ns", ChronoUnit.NANOS,
          "us", ChronoUnit.MICROS,
          "ms", ChronoUnit.MILLIS,
          "s", ChronoUnit.SECONDS,
          "m", ChronoUnit.MINUTES,
          "h", ChronoUnit.HOURS,
          "d", ChronoUnit.DAYS);

  /**
   * One {@code @SchedulerLock} method.
   *
   * @param name the task's lock name, as written (placeholders resolved)
   * @param method {@code SimpleClassName.method}
   * @param lockAtMostFor the longest TTL ShedLock asks for it
   * @param byDefault whether that is {@code @EnableSchedulerLock}'s {@code defaultLockAtMostFor}
   */
  record Task(String name, String method, Duration lockAtMostFor, boolean byDefault) {
    @Override
    public String toString() {
      return "'"
          + name
          + "' ("
          + method
          + ", lockAtMostFor "
          + lockAtMostFor
          + (byDefault ? " from @EnableSchedulerLock's defaultLockAtMostFor" : "")
          + ")";
    }
  }

  private final List<Task> tasks;
  private final String enabledOn;

  private ShedLockTasks(List<Task> tasks, String enabledOn) {
    this.tasks = List.copyOf(tasks);
    this.enabledOn = enabledOn;
  }

  /**
   * Reads the tasks of every bean whose class can be known: a bean already created by its object's
   * class (behind any proxy), one not created yet by its definition's type, without creating it. A
   * method whose {@code lockAtMostFor} does not resolve or parse is left out: ShedLock reports it.
   */
  static ShedLockTasks of(ConfigurableListableBeanFactory beanFactory) {
    Set<Class<?>> seen = new HashSet<>();
    List<Method> methods = new ArrayList<>();
    String enabledOn = null;
    String defaultAtMostFor = "";
    for (String bean : beanFactory.getBeanDefinitionNames()) {
      Class<?> type = typeOf(beanFactory, bean);
      if (type == null
          || !seen.add(type)
          || !AnnotationUtils.isCandidateClass(type, SCHEDULER_LOCK)) {
        continue;
      }
      MergedAnnotation<?> enable =
          MergedAnnotations.from(type, SearchStrategy.TYPE_HIERARCHY).get(ENABLE_SCHEDULER_LOCK);
      if (enable.isPresent() && enabledOn == null) {
        enabledOn = type.getSimpleName();
        defaultAtMostFor = enable.getString("defaultLockAtMostFor");
      }
      methods.addAll(
          MethodIntrospector.selectMethods(
                  type,
                  (MethodIntrospector.MetadataLookup<Boolean>)
                      m -> schedulerLock(m).isPresent() ? Boolean.TRUE : null)
              .keySet());
    }
    Duration byDefault = duration(beanFactory, defaultAtMostFor);
    List<Task> tasks = new ArrayList<>();
    for (Method method : methods) {
      MergedAnnotation<?> lock = schedulerLock(method);
      String own = lock.getString("lockAtMostFor");
      Duration atMostFor = own.isEmpty() ? byDefault : duration(beanFactory, own);
      if (atMostFor != null) {
        tasks.add(
            new Task(
                resolve(beanFactory, lock.getString("name")),
                method.getDeclaringClass().getSimpleName() + "." + method.getName(),
                atMostFor,
                own.isEmpty()));
      }
    }
    tasks.sort(Comparator.comparing(Task::method));
    return new ShedLockTasks(tasks, enabledOn);
  }

  /** Every task, by declaring class and method. */
  List<Task> tasks() {
    return tasks;
  }

  /** The task with the longest {@code lockAtMostFor}, if there is any. */
  Optional<Task> longest() {
    return tasks.stream().max(Comparator.comparing(Task::lockAtMostFor));
  }

  /** Whether the context uses ShedLock's annotations at all. */
  boolean inUse() {
    return enabledOn != null || !tasks.isEmpty();
  }

  /** What shows that ShedLock is in use, for a message. */
  String evidence() {
    if (tasks.isEmpty()) {
      return "@EnableSchedulerLock on " + enabledOn;
    }
    return (enabledOn == null ? "" : "@EnableSchedulerLock on " + enabledOn + ", ")
        + "@SchedulerLock on "
        + tasks.get(0).method()
        + (tasks.size() > 1 ? " and " + (tasks.size() - 1) + " more" : "");
  }

  private static MergedAnnotation<?> schedulerLock(Method method) {
    return MergedAnnotations.from(method, SearchStrategy.TYPE_HIERARCHY).get(SCHEDULER_LOCK);
  }

  private static Class<?> typeOf(ConfigurableListableBeanFactory beanFactory, String bean) {
    try {
      if (beanFactory.containsSingleton(bean)) {
        Object instance = beanFactory.getSingleton(bean);
        return instance == null ? null : AopProxyUtils.ultimateTargetClass(instance);
      }
      if (beanFactory.getBeanDefinition(bean).isAbstract()) {
        return null;
      }
      Class<?> type = beanFactory.getType(bean, false);
      return type == null ? null : ClassUtils.getUserClass(type);
    } catch (RuntimeException | LinkageError e) {
      return null; // a type that cannot be known: the check after startup sees its instance
    }
  }

  private static String resolve(ConfigurableListableBeanFactory beanFactory, String value) {
    try {
      String resolved = beanFactory.resolveEmbeddedValue(value);
      return resolved == null ? value : resolved;
    } catch (RuntimeException e) {
      return value;
    }
  }

  /** ShedLock's reading of a duration, or null if it does not parse. */
  static Duration duration(ConfigurableListableBeanFactory beanFactory, String text) {
    String value = resolve(beanFactory, text).strip();
    try {
      if (ISO8601.matcher(value).matches()) {
        return Duration.parse(value);
      }
      Matcher simple = SIMPLE.matcher(value);
      ChronoUnit unit =
          simple.matches() ? UNITS.get(simple.group(2).toLowerCase(Locale.ROOT)) : null;
      return unit == null ? null : Duration.of(Long.parseLong(simple.group(1)), unit);
    } catch (RuntimeException e) {
      return null;
    }
  }
}
