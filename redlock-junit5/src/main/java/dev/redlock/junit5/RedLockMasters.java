package dev.redlock.junit5;

import static java.util.Objects.requireNonNull;
import static java.util.stream.Collectors.joining;

import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A JUnit 5 extension that runs N independent Redis masters for a test class and hands each test a
 * ready {@link RedLock} on them. Register it on a static field:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final RedLockMasters masters = RedLockMasters.of(5);
 *
 * @Test
 * void onlyOneWorkerRunsTheJob(RedLock redlock) { ... }
 *
 * @Test
 * void aLeaseSurvivesTwoMastersDown(RedLock redlock) {
 *   masters.master(0).stop();
 *   masters.master(1).pause();
 *   ...
 * }
 * }</pre>
 *
 * <h2>What it does</h2>
 *
 * <ul>
 *   <li><b>Before all tests</b> of the class: starts {@code count} {@code redis-server} processes,
 *       each on a free port on 127.0.0.1, without persistence, and says which: one INFO line
 *       (SLF4J) and a report entry {@code redlock-junit5} with the masters, the executable's path,
 *       why it was chosen, and the server's version.
 *   <li><b>Before each test</b>: resumes paused masters, starts stopped ones and deletes every key
 *       but RedLock's own ({@code redlock:*}), so each test starts from N running, empty masters
 *       whatever the one before it did; then builds a new {@link RedLock} on them (with the
 *       settings given to {@link #configure}) and admits them ({@link RedLock#admitFreshNodes()}:
 *       they are brand new, and the restart guard would otherwise keep them from voting for a
 *       maximum lease time). A new RedLock per test means no circuit breaker, renewal or listener
 *       carries over from an earlier test.
 *   <li><b>After each test</b>: closes that RedLock.
 *   <li><b>After all tests</b>, whether they passed or not: stops every master; a JVM shutdown hook
 *       kills any still running.
 * </ul>
 *
 * Test methods and {@code @BeforeEach} / {@code @AfterEach} methods get the test's RedLock as a
 * parameter of type {@link RedLock}; don't close it. {@code @Nested} classes share the enclosing
 * class's masters. Because each test resets the masters, the tests of one class must not run
 * concurrently.
 *
 * <h2>Which {@code redis-server}</h2>
 *
 * The first of these wins: the system property {@code redlock.redis.server} (a path to an
 * executable, or the word {@code embedded}); the environment variable {@code REDIS_SERVER}, read
 * the same way; {@code redis-server} on {@code PATH}; the Redis 6.2 binary bundled in {@code
 * com.github.codemonstur:embedded-redis}, if the application has put that jar on its test class
 * path (this module does not depend on it). Redis 6.2 or later is supported, as by RedLock itself.
 *
 * <p>Instances are immutable until registered; the started masters are thread-safe.
 */
public final class RedLockMasters
    implements BeforeAllCallback,
        BeforeEachCallback,
        AfterEachCallback,
        AfterAllCallback,
        ParameterResolver {

  private static final Logger log = LoggerFactory.getLogger(RedLockMasters.class);

  /** How long each master may take to start and answer unless {@link #startTimeout} says: 10 s. */
  public static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(10);

  /** The most masters one extension starts: 15. */
  public static final int MAX_COUNT = 15;

  private final int count;
  private final Consumer<RedLockBuilder> settings;
  private final Duration startTimeout;

  // Written by the callbacks, read by the tests' threads.
  private volatile Running running;
  private volatile RedLock current;

  private record Running(String owner, List<Master> masters, List<String> uris) {}

  private RedLockMasters(int count, Consumer<RedLockBuilder> settings, Duration startTimeout) {
    this.count = count;
    this.settings = settings;
    this.startTimeout = startTimeout;
  }

  /**
   * An extension that starts {@code count} masters and a RedLock with the default settings.
   *
   * @param count how many masters, 1 to {@link #MAX_COUNT}; Redlock deployments use an odd number,
   *     usually 3 or 5
   * @return the extension, to register with {@code @RegisterExtension} on a static field
   * @throws IllegalArgumentException if {@code count} is out of range
   */
  public static RedLockMasters of(int count) {
    if (count < 1 || count > MAX_COUNT) {
      throw new IllegalArgumentException("count must be from 1 to " + MAX_COUNT + ", was " + count);
    }
    return new RedLockMasters(count, builder -> {}, DEFAULT_START_TIMEOUT);
  }

  /**
   * A copy of this extension whose RedLock is built with these settings, e.g. {@code configure(b ->
   * b.nodeTimeout(Duration.ofMillis(100)).fencing(false))}. The extension adds the masters itself
   * ({@link RedLockBuilder#nodes}); {@code settings} should add none.
   *
   * @param settings applied to the builder before the RedLock is built; replaces earlier settings
   * @return a new extension
   */
  public RedLockMasters configure(Consumer<RedLockBuilder> settings) {
    return new RedLockMasters(count, requireNonNull(settings, "settings"), startTimeout);
  }

  /**
   * A copy of this extension that waits this long for each master to start; {@link
   * #DEFAULT_START_TIMEOUT} otherwise.
   *
   * @param timeout positive
   * @return a new extension
   * @throws IllegalArgumentException if the timeout is zero or negative
   */
  public RedLockMasters startTimeout(Duration timeout) {
    requireNonNull(timeout, "timeout");
    if (timeout.isZero() || timeout.isNegative()) {
      throw new IllegalArgumentException("startTimeout must be positive, was " + timeout);
    }
    return new RedLockMasters(count, settings, timeout);
  }

  /**
   * How many masters this extension starts.
   *
   * @return the count
   */
  public int count() {
    return count;
  }

  /**
   * The masters, in start order.
   *
   * @return an unmodifiable list of {@link #count()} masters
   * @throws IllegalStateException outside the test class's run, or if the extension was not
   *     registered on a static field
   */
  public List<Master> masters() {
    return running().masters();
  }

  /**
   * One master, to stop, restart or pause it.
   *
   * @param index from 0 to {@code count() - 1}
   * @return the master
   * @throws IndexOutOfBoundsException if {@code index} is out of range
   * @throws IllegalStateException as {@link #masters()} does
   */
  public Master master(int index) {
    return running().masters().get(index);
  }

  /**
   * The masters' URIs, in start order, to build another RedLock on them (then call {@link
   * RedLock#admitFreshNodes()} on it, or {@link #admit()}). Ports never change, so neither do
   * these.
   *
   * @return an unmodifiable list of {@code "redis://127.0.0.1:<port>"}
   * @throws IllegalStateException as {@link #masters()} does
   */
  public List<String> uris() {
    return running().uris();
  }

  /**
   * The running test's RedLock, the one its parameters receive; the extension closes it after the
   * test.
   *
   * @return the RedLock
   * @throws IllegalStateException outside a test (or its {@code @BeforeEach} and {@code @AfterEach}
   *     methods), or if the extension was not registered on a static field
   */
  public RedLock redLock() {
    RedLock r = current;
    if (r == null) {
      running(); // the more useful message, if it applies
      throw new IllegalStateException("no RedLock: there is one only while a test runs");
    }
    return r;
  }

  /**
   * Admits every running master, so that the restart guard counts its vote at once: after a {@link
   * Master#restart()}, a test that wants the master back in the quorum without waiting a maximum
   * lease time calls this. Paused and stopped masters are left out.
   *
   * @return one outcome per master, as {@link RedLock#admitFreshNodes()} returns them
   * @throws IllegalStateException as {@link #redLock()} does
   */
  public List<NodeOutcome> admit() {
    return redLock().admitFreshNodes();
  }

  /**
   * Starts the masters, unless an enclosing class's registration already did.
   *
   * @param context the class's context
   * @throws IllegalStateException if no {@code redis-server} is found or a master does not start;
   *     those started are stopped again
   */
  @Override
  public void beforeAll(ExtensionContext context) {
    if (running != null) {
      return; // a @Nested class: the enclosing class's masters serve it
    }
    ServerBinary.Choice binary = ServerBinary.select();
    List<Master> masters = new ArrayList<>(count);
    try {
      for (int i = 0; i < count; i++) {
        masters.add(Master.start(i, binary, startTimeout));
      }
    } catch (RuntimeException | Error e) {
      closeAll(null, masters, e);
      throw e;
    }
    List<String> uris = masters.stream().map(Master::uri).toList();
    running = new Running(context.getUniqueId(), List.copyOf(masters), uris);
    String started =
        "started "
            + masters.size()
            + (masters.size() == 1 ? " master (" : " masters (")
            + uris.stream().map(u -> u.substring("redis://".length())).collect(joining(", "))
            + ") with "
            + binary
            + ", "
            + masters.get(0).version();
    log.info("{}: {}", context.getDisplayName(), started);
    context.publishReportEntry("redlock-junit5", started);
  }

  /**
   * Brings every master back running and empty, and builds the test's RedLock and admits the
   * masters with it.
   *
   * @param context the test's context
   * @throws IllegalStateException if a master cannot be started, emptied or admitted
   */
  @Override
  public void beforeEach(ExtensionContext context) {
    Running r = running();
    closeCurrent(); // a test whose afterEach did not run
    for (Master master : r.masters()) {
      master.resume();
      master.start();
      master.clear();
    }
    RedLockBuilder builder = RedLock.builder();
    settings.accept(builder);
    RedLock redlock = builder.nodes(r.uris()).build();
    try {
      requireAdmitted(redlock.admitFreshNodes());
    } catch (RuntimeException | Error e) {
      closeAll(redlock, List.of(), e);
      throw e;
    }
    current = redlock;
  }

  /**
   * Closes the test's RedLock.
   *
   * @param context the test's context
   */
  @Override
  public void afterEach(ExtensionContext context) {
    closeCurrent();
  }

  /**
   * Stops the masters, if this is the class that started them.
   *
   * @param context the class's context
   */
  @Override
  public void afterAll(ExtensionContext context) {
    Running r = running;
    if (r != null && r.owner().equals(context.getUniqueId())) {
      running = null;
      closeAll(null, r.masters(), null);
    }
  }

  /**
   * Whether the parameter is a {@link RedLock} of a test method or of a {@code @BeforeEach} or
   * {@code @AfterEach} method.
   *
   * @param parameterContext the parameter
   * @param extensionContext the context
   * @return true for a parameter of type {@link RedLock} of a method that runs with a test
   */
  @Override
  public boolean supportsParameter(
      ParameterContext parameterContext, ExtensionContext extensionContext) {
    return parameterContext.getParameter().getType() == RedLock.class
        && parameterContext.getDeclaringExecutable() instanceof Method
        && extensionContext.getTestMethod().isPresent();
  }

  /**
   * The test's RedLock.
   *
   * @param parameterContext the parameter
   * @param extensionContext the context
   * @return the RedLock
   * @throws IllegalStateException as {@link #redLock()} does
   */
  @Override
  public Object resolveParameter(
      ParameterContext parameterContext, ExtensionContext extensionContext) {
    return redLock();
  }

  @Override
  public String toString() {
    Running r = running;
    return "RedLockMasters" + (r == null ? "(" + count + " masters, not running)" : r.uris());
  }

  private void closeCurrent() {
    RedLock r = current;
    current = null;
    if (r != null) {
      r.close();
    }
  }

  private Running running() {
    Running r = running;
    if (r == null) {
      throw new IllegalStateException(
          "no masters: register RedLockMasters with @RegisterExtension on a static field, and use"
              + " it only while its test class runs");
    }
    return r;
  }

  private void requireAdmitted(List<NodeOutcome> outcomes) {
    List<NodeOutcome> refused =
        outcomes.stream()
            .filter(
                o ->
                    o.status() != NodeOutcome.Status.GRANTED
                        && o.status() != NodeOutcome.Status.TAKEN)
            .toList();
    if (!refused.isEmpty()) {
      throw new IllegalStateException("masters not admitted: " + refused);
    }
  }

  private static void closeAll(RedLock redlock, List<Master> masters, Throwable primary) {
    Throwable failure = primary;
    if (redlock != null) {
      try {
        redlock.close();
      } catch (RuntimeException e) {
        failure = add(failure, e);
      }
    }
    for (Master master : masters) {
      try {
        master.close();
      } catch (RuntimeException e) {
        failure = add(failure, e);
      }
    }
    if (primary == null && failure != null) {
      throw failure instanceof RuntimeException r ? r : new IllegalStateException(failure);
    }
  }

  private static Throwable add(Throwable failure, RuntimeException e) {
    if (failure == null) {
      return e;
    }
    failure.addSuppressed(e);
    return failure;
  }
}
