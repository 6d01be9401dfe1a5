package dev.redlock.chaos;

import static java.util.Objects.requireNonNull;

import dev.redlock.testkit.RedisProcess;
import java.util.function.IntFunction;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension: one {@link ChaosCluster} per test class, started before all tests, {@link
 * ChaosCluster#heal() healed} and {@link ChaosCluster#flushAll() flushed} before each test, closed
 * after all tests. Resolves parameters of type {@link ChaosCluster}.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);
 *
 * @Test
 * void acquireSucceedsWithAMinorityPartitioned(ChaosCluster cluster) throws IOException {
 *   cluster.proxy(0).disable();
 *   ...
 * }
 * }</pre>
 *
 * <p>Register it on a static field. {@code @Nested} classes share the enclosing class's cluster.
 * Data written after the flush by a fault of the previous test (bytes a toxic held back and let go
 * on heal) can still land, so tests should use resource names of their own.
 */
final class ChaosClusterExtension
    implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback, ParameterResolver {

  private final int nodes;
  private final IntFunction<RedisProcess.Builder> nodeBuilder; // null: ChaosCluster.start(n)
  private volatile ChaosCluster cluster;
  private volatile String owner;

  private ChaosClusterExtension(int nodes, IntFunction<RedisProcess.Builder> nodeBuilder) {
    this.nodes = nodes;
    this.nodeBuilder = nodeBuilder;
  }

  /**
   * An extension over {@link ChaosCluster#start(int)}: the backend is chosen automatically.
   *
   * @param n the number of masters, at least 1
   * @return the extension
   * @throws IllegalArgumentException if {@code n} is less than 1
   */
  static ChaosClusterExtension withNodes(int n) {
    checkNodes(n);
    return new ChaosClusterExtension(n, null);
  }

  /**
   * An extension over {@link ChaosCluster#start(int, IntFunction)}: always local processes.
   *
   * @param n the number of masters, at least 1
   * @param nodeBuilder the builder of node {@code i}
   * @return the extension
   * @throws IllegalArgumentException if {@code n} is less than 1
   */
  static ChaosClusterExtension withNodes(int n, IntFunction<RedisProcess.Builder> nodeBuilder) {
    checkNodes(n);
    return new ChaosClusterExtension(n, requireNonNull(nodeBuilder, "nodeBuilder"));
  }

  /**
   * The cluster of the running test class.
   *
   * @return the cluster
   * @throws IllegalStateException outside the test class's lifetime
   */
  ChaosCluster cluster() {
    ChaosCluster c = cluster;
    if (c == null) {
      throw new IllegalStateException(
          "no cluster: register ChaosClusterExtension with @RegisterExtension on a static field,"
              + " and use it only while the test class runs");
    }
    return c;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    if (cluster == null) {
      cluster =
          nodeBuilder == null ? ChaosCluster.start(nodes) : ChaosCluster.start(nodes, nodeBuilder);
      owner = context.getUniqueId();
    }
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    ChaosCluster c = cluster();
    c.heal();
    c.flushAll();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (context.getUniqueId().equals(owner)) {
      ChaosCluster c = cluster;
      cluster = null;
      owner = null;
      c.close();
    }
  }

  @Override
  public boolean supportsParameter(
      ParameterContext parameterContext, ExtensionContext extensionContext) {
    return parameterContext.getParameter().getType() == ChaosCluster.class;
  }

  @Override
  public Object resolveParameter(
      ParameterContext parameterContext, ExtensionContext extensionContext) {
    return cluster();
  }

  private static void checkNodes(int n) {
    if (n < 1) {
      throw new IllegalArgumentException("n must be at least 1, was " + n);
    }
  }
}
