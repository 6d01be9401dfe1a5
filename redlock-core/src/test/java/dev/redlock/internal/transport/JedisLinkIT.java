package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The one class over Jedis: a link is one socket, with its handshake, and nothing more; its replies
 * are read within the decoder's limits.
 */
class JedisLinkIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(1);

  private static final long TIMEOUT = TimeUnit.MILLISECONDS.toNanos(200);

  @Test
  void aClosedLinkFailsRatherThanOpeningASocketWithoutItsHandshake(RedisCluster cluster) {
    NodeAddress address = NodeAddress.parse(cluster.uris().get(0));
    long before = cluster.node(0).admin().connectionsReceived();
    JedisLink link = JedisLink.open(address, TIMEOUT, null);
    NodeCommand command = NodeCommand.of(Command.release(LockKey.of(bytes("job")), bytes("token")));
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

  @Test
  void aBulkStringAnnouncedBeyondTheLimitIsRefusedAtItsHeaderNotAllocated() throws Exception {
    try (HostileMaster master = new HostileMaster(HostileMaster.Behavior.OVERSIZE)) {
      JedisLink link = JedisLink.open(NodeAddress.parse(master.uri()), TIMEOUT, null);
      link.write(NodeCommand.set(bytes("job"), bytes("token"), 10_000));
      Resp.ProtocolException refused =
          assertTimeoutPreemptively(
              Duration.ofSeconds(2), () -> assertThrows(Resp.ProtocolException.class, link::read));
      assertEquals("bulk string length 536870912", refused.getMessage());
      link.close();
    }
  }

  @Test
  void anEndlessLineIsRefusedOnceItPassesTheLineLimit() throws Exception {
    try (HostileMaster master = new HostileMaster(HostileMaster.Behavior.ENDLESS_LINE)) {
      JedisLink link = JedisLink.open(NodeAddress.parse(master.uri()), TIMEOUT, null);
      link.write(NodeCommand.set(bytes("job"), bytes("token"), 10_000));
      Resp.ProtocolException refused =
          assertTimeoutPreemptively(
              Duration.ofSeconds(2), () -> assertThrows(Resp.ProtocolException.class, link::read));
      assertEquals("line longer than " + Resp.MAX_LINE_BYTES + " bytes", refused.getMessage());
      link.close();
    }
  }

  @Test
  void bytesJedisReadAheadDuringTheHandshakeAreTheFirstReplyNeitherLostNorReadTwice()
      throws Exception {
    // Sent in one write with the last SCRIPT LOAD reply: Jedis, decoding that reply, reads them
    // into its buffer; the link must read them from there.
    byte[] early = ":7\r\n:8\r\n".getBytes(StandardCharsets.US_ASCII);
    try (HostileMaster master = new HostileMaster(HostileMaster.Behavior.GARBAGE, early)) {
      JedisLink link = JedisLink.open(NodeAddress.parse(master.uri()), TIMEOUT, null);
      assertTimeoutPreemptively(
          Duration.ofSeconds(2),
          () -> {
            assertEquals(7L, link.read()); // read past Jedis's buffer, this would wait forever
            assertEquals(8L, link.read());
            link.write(NodeCommand.set(bytes("job"), bytes("token"), 10_000));
            assertThrows(
                Resp.ProtocolException.class, link::read, "then the garbage, and no 7 again");
          });
      link.close();
    }
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
