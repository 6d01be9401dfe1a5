package dev.redlock.readme;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The README's quick start runs as written against 5 brand-new masters once they are admitted (the
 * README's step before it, {@code redlock admit}); it does not admit them itself.
 */
class QuickStartIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @Test
  void quickStartLocksAndReleasesOnceTheMastersAreAdmitted(RedisCluster cluster) throws Exception {
    try (RedLock operator = RedLock.builder().nodes(cluster.uris()).build()) {
      // What the README's `redlock admit` does.
      assertTrue(
          operator.admitFreshNodes().stream()
              .allMatch(o -> o.status() == NodeOutcome.Status.GRANTED));
    }
    String printed = run(cluster);
    assertTrue(
        printed.matches("(?s)locked orders:42, fencing token \\d+\\s*"),
        "the quick start prints its fencing token: " + printed);
    for (int node = 0; node < 5; node++) {
      assertFalse(cluster.node(node).admin().exists("orders:42"), "released on master " + node);
    }
  }

  @Test
  void quickStartDoesNotAdmitBrandNewMastersItself(RedisCluster cluster) {
    QuorumUnavailableException refused =
        assertThrows(QuorumUnavailableException.class, () -> run(cluster));
    assertTrue(refused.getMessage().contains("restart guard"), refused.getMessage());
    assertTrue(refused.getMessage().contains("redlock admit"), refused.getMessage());
    try (RedLock observer = RedLock.builder().nodes(cluster.uris()).build()) {
      assertEquals(0, observer.inspect().voting(), "no master was admitted by the quick start");
    }
  }

  private static String run(RedisCluster cluster) throws InterruptedException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrintStream stdout = System.out;
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      QuickStart.main(cluster.uris().toArray(String[]::new));
    } finally {
      System.setOut(stdout);
    }
    return out.toString(StandardCharsets.UTF_8);
  }
}
