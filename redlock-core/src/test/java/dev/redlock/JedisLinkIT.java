package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The one class over Jedis: a link is one socket, with its handshake, and nothing more. */
class JedisLinkIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(1);

  private static final long TIMEOUT = TimeUnit.MILLISECONDS.toNanos(200);

  @Test
  void aClosedLinkFailsRatherThanOpeningASocketWithoutItsHandshake(RedisCluster cluster) {
    NodeAddress address = NodeAddress.parse(cluster.uris().get(0));
    long before = cluster.node(0).admin().connectionsReceived();
    JedisLink link = JedisLink.open(address, TIMEOUT, null);
    NodeCommand command = NodeCommand.release(bytes("job"), bytes("token"));
    link.write(command);
    assertEquals(-1L, link.read(), "the open link works: the key is gone");
    link.close();

    assertThrows(RuntimeException.class, () -> link.write(command));
    assertThrows(RuntimeException.class, link::read);
    assertEquals(
        before + 1,
        cluster.node(0).admin().connectionsReceived(),
        "no second socket was opened behind our back");
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
