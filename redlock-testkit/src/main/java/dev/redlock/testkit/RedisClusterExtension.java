package dev.redlock.testkit;

import static java.util.Objects.requireNonNull;

import java.util.function.IntFunction;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * JUnit 5 extension: one {@link RedisCluster} per test class, started before all tests, {@link
 * RedisCluster#reset() reset} before each test and closed after all tests. It also resolves test,
 * lifecycle-method and constructor parameters of type {@link RedisCluster}.
 *
 * <p>Register it on a static field, so that its class-level callbacks run:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);
 *
 * @Test
 * void lockSurvivesOneNodeDown(RedisCluster cluster) {
 *   cluster.node(0).kill();
 *   ...
 * }
 * }</pre>
 *
 * <p>{@code @Nested} classes share the enclosing class's cluster.
 */
public final class RedisClusterExtension
    implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback, ParameterResolver {
  private static final Logger log = LoggerFactory.getLogger(RedisClusterExtension.class);

  private final int nodes;
  private final IntFunction<RedisProcess.Builder> nodeBuilder;
  private volatile RedisCluster cluster;
  private volatile String owner;

  private RedisClusterExtension(int nodes, IntFunction<RedisProcess.Builder> nodeBuilder) {
    this.nodes = nodes;
    this.nodeBuilder = nodeBuilder;
  }

  /**
   * An extension that starts {@code n} default nodes (free ports, no persistence).
   *
   * @param n the number of nodes, at least 1
   * @return the extension, to register with {@code @RegisterExtension} on a static field
   * @throws IllegalArgumentException if {@code n} is less than 1
   */
  public static RedisClusterExtension withNodes(int n) {
    return withNodes(n, i -> RedisProcess.builder());
  }

  /**
   * An extension that starts {@code n} nodes, node {@code i} from {@code nodeBuilder.apply(i)}; see
   * {@link RedisCluster#start(int, IntFunction)}.
   *
   * @param n the number of nodes, at least 1
   * @param nodeBuilder the builder for node {@code i}
   * @return the extension, to register with {@code @RegisterExtension} on a static field
   * @throws IllegalArgumentException if {@code n} is less than 1
   */
  public static RedisClusterExtension withNodes(
      int n, IntFunction<RedisProcess.Builder> nodeBuilder) {
    if (n < 1) {
      throw new IllegalArgumentException("n must be at least 1, was " + n);
    }
    return new RedisClusterExtension(n, requireNonNull(nodeBuilder, "nodeBuilder"));
  }

  /**
   * The cluster of the running test class.
   *
   * @return the cluster
   * @throws IllegalStateException outside the test class's lifetime, or if the extension was not
   *     registered on a static field
   */
  public RedisCluster cluster() {
    RedisCluster c = cluster;
    if (c == null) {
      throw new IllegalStateException(
          "no cluster: register RedisClusterExtension with @RegisterExtension on a static field,"
              + " and use it only while the test class runs");
    }
    return c;
  }

  /**
   * Starts the cluster, unless an enclosing class already did.
   *
   * @param context the class's context
   */
  @Override
  public void beforeAll(ExtensionContext context) {
    if (cluster == null) {
      log.info("Starting {} redis-server nodes with {}", nodes, RedisProcess.binaryDescription());
      cluster = RedisCluster.start(nodes, nodeBuilder);
      owner = context.getUniqueId();
    }
  }

  /**
   * Resets the cluster: every node running and empty.
   *
   * @param context the test's context
   */
  @Override
  public void beforeEach(ExtensionContext context) {
    cluster().reset();
  }

  /**
   * Closes the cluster, if this is the class that started it.
   *
   * @param context the class's context
   */
  @Override
  public void afterAll(ExtensionContext context) {
    if (context.getUniqueId().equals(owner)) {
      RedisCluster c = cluster;
      cluster = null;
      owner = null;
      c.close();
    }
  }

  /**
   * Whether the parameter is a {@link RedisCluster}.
   *
   * @param parameterContext the parameter
   * @param extensionContext the context
   * @return true for parameters of type {@link RedisCluster}
   */
  @Override
  public boolean supportsParameter(
      ParameterContext parameterContext, ExtensionContext extensionContext) {
    return parameterContext.getParameter().getType() == RedisCluster.class;
  }

  /**
   * The cluster.
   *
   * @param parameterContext the parameter
   * @param extensionContext the context
   * @return the running cluster
   */
  @Override
  public Object resolveParameter(
      ParameterContext parameterContext, ExtensionContext extensionContext) {
    return cluster();
  }
}
