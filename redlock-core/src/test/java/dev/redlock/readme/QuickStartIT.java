package dev.redlock.readme;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The README's quick start runs as written against 5 brand-new masters. */
class QuickStartIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @Test
  void quickStartLocksAndReleasesOnBrandNewMasters(RedisCluster cluster) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrintStream stdout = System.out;
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      QuickStart.main(cluster.uris().toArray(String[]::new));
    } finally {
      System.setOut(stdout);
    }
    String printed = out.toString(StandardCharsets.UTF_8);
    assertTrue(
        printed.matches("(?s)locked orders:42, fencing token \\d+\\s*"),
        "the quick start prints its fencing token: " + printed);
    for (int node = 0; node < 5; node++) {
      assertFalse(cluster.node(node).admin().exists("orders:42"), "released on master " + node);
    }
  }
}
