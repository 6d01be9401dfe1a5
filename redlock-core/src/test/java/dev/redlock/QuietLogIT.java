package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Each trouble of a master is logged once per episode: a circuit breaker that opens and half-opens
 * every wait while its master is down is one line when it opens and one when it closes, not one per
 * turn; several RedLocks in one process that meet the same trouble log it once between them. The
 * log is slf4j-simple's (INFO and above), on System.err.
 */
class QuietLogIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final Duration TTL = Duration.ofSeconds(10);

  @RegisterExtension final CapturedLog captured = new CapturedLog();

  private String log() {
    return captured.text();
  }

  private static int count(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }

  private static String name(RedisProcess node) {
    return Pattern.quote(node.host() + ":" + node.port());
  }

  @Test
  void aBreakerThatKeepsReopeningIsLoggedWhenItOpensAndWhenItCloses(RedisCluster cluster) {
    RedisProcess down = cluster.node(2);
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(RedLocks.NODE_TIMEOUT)
                .circuitBreakerWait(Duration.ofMillis(20))
                .build())) {
      down.kill();
      // Rounds for 2 s: the breaker opens, half-opens after each 20 ms wait, fails its probe and
      // opens again, dozens of times.
      long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
      int round = 0;
      while (System.nanoTime() - until < 0) {
        try {
          redlock.tryAcquire("r" + round++, TTL).ifPresent(Lease::close);
        } catch (QuorumUnavailableException slow) {
          // a loaded machine: one of the two live masters missed the node timeout
        }
      }
      String breaker = "(INFO|WARN) .*circuit breaker of " + name(down);
      Poll.until("the breaker's opening is logged", () -> count(log(), breaker) >= 1);
      assertEquals(1, count(log(), breaker), log());

      down.restart();
      redlock.admitFreshNodes(); // a new server run
      Poll.until(
          Duration.ofSeconds(10),
          () -> {
            redlock.tryAcquire("back", TTL).ifPresent(Lease::close);
            return log()
                .contains(
                    "circuit breaker of " + down.host() + ":" + down.port() + " is CLOSED again");
          },
          () -> "closed again: " + log());
      assertEquals(2, count(log(), breaker), log());
    }
  }

  @Test
  void redLocksInOneProcessLogAMastersTroubleOnceBetweenThem(RedisCluster cluster)
      throws Exception {
    List<String> uris = new ArrayList<>(cluster.uris());
    int closedPort;
    try (java.net.ServerSocket closed =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      closedPort = closed.getLocalPort();
    }
    uris.add("redis://127.0.0.1:" + closedPort);
    String unreachable = "WARN .*master 127\\.0\\.0\\.1:" + closedPort + ": unreachable";
    List<RedLock> redlocks = new ArrayList<>();
    try {
      for (int i = 0; i < 4; i++) {
        redlocks.add(
            RedLocks.admitted(
                RedLock.builder().nodes(uris).nodeTimeout(RedLocks.NODE_TIMEOUT).build()));
      }
      for (RedLock redlock : redlocks) {
        redlock.tryAcquire("shared", TTL).orElseThrow().close();
      }
      Poll.until("the trouble is logged", () -> count(log(), unreachable) >= 1);
    } finally {
      redlocks.forEach(RedLock::close);
    }
    assertEquals(1, count(log(), unreachable), log());
    // Every RedLock that met it closed: the episode ended with them, and the next one tells it.
    try (RedLock again =
        RedLocks.admitted(
            RedLock.builder().nodes(uris).nodeTimeout(RedLocks.NODE_TIMEOUT).build())) {
      again.tryAcquire("shared", TTL).orElseThrow().close();
      Poll.until("told again", () -> count(log(), unreachable) >= 2);
    }
    assertEquals(2, count(log(), unreachable), log());
  }
}
