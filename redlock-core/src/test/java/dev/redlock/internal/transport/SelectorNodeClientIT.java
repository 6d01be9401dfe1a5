package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One master's client on the selector: the pipeline's guarantees (byte cap, stall limit, reconnect
 * delay, a connection per handshake) over non-blocking sockets.
 */
class SelectorNodeClientIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(1);

  private final SelectorClients selector = new SelectorClients();

  @AfterEach
  void close() {
    selector.close();
  }

  private SelectorNodeClient client(String uri, Duration timeout, Ticker ticker) {
    return selector.open(uri, timeout.toNanos(), ticker, TimeUnit.SECONDS.toNanos(5));
  }

  @Test
  void aPausedMasterNeverBlocksACallerAndCommandsBeyondTheCapFailAtOnce(RedisCluster cluster) {
    RedisProcess node = cluster.node(0);
    SelectorNodeClient client = client(node.uri(), Duration.ofSeconds(2), Ticker.system());
    assertEquals(Vote.GONE, client.release(bytes("warm"), bytes("up")).join().status());
    byte[] token = new byte[32 * 1024];
    java.util.Arrays.fill(token, (byte) 't');
    List<CompletableFuture<NodeReply>> sent = new ArrayList<>();
    long slowest = 0;
    node.pause();
    try {
      for (int i = 0; i < 400; i++) {
        long start = System.nanoTime();
        sent.add(client.acquire(bytes("key-" + i), null, token, 60_000, 0));
        slowest = Math.max(slowest, System.nanoTime() - start);
      }
    } finally {
      node.resume();
    }
    assertTrue(slowest < TimeUnit.MILLISECONDS.toNanos(500), "no call blocked: " + slowest);
    List<CompletableFuture<NodeReply>> refused =
        sent.stream().filter(CompletableFuture::isCompletedExceptionally).toList();
    assertFalse(refused.isEmpty(), "12.8 MB is beyond any cap: some were refused at once");
    assertTrue(refused.size() < sent.size(), "the first ones were accepted");
    String why = failure(refused.get(0));
    assertEquals("too many commands awaiting replies", why);
    int accepted = sent.size() - refused.size();
    for (int i = 0; i < accepted; i++) {
      assertEquals(Vote.GRANTED, sent.get(i).join().status(), "the accepted ones, in order");
    }
    assertEquals(accepted, node.admin().dbSize());
  }

  @Test
  void aConnectionSilentPastTheStallLimitIsDroppedAndTheNextCommandReconnects(RedisCluster cluster)
      throws Exception {
    RedisProcess node = cluster.node(0);
    long before = node.admin().connectionsReceived();
    FakeTicker ticker = new FakeTicker();
    Duration timeout = Duration.ofSeconds(2);
    SelectorNodeClient client = client(node.uri(), timeout, ticker);
    assertEquals(Vote.GONE, client.release(bytes("job"), bytes("token")).join().status());
    CompletableFuture<NodeReply> stuck;
    CompletableFuture<NodeReply> next;
    node.pause();
    try {
      stuck = client.release(bytes("job"), bytes("token"));
      ticker.advance(Duration.ofNanos(CommandPipeline.stallNanos(timeout.toNanos()) + 1));
      next = client.release(bytes("job"), bytes("token"));
      assertEquals("connection dropped: no reply for 40000 ms", failure(stuck));
      assertFalse(next.isDone(), "waits for the new connection");
    } finally {
      node.resume();
    }
    assertEquals(Vote.GONE, next.get(5, TimeUnit.SECONDS).status());
    assertEquals(
        before + 2, node.admin().connectionsReceived(), "a new connection, handshake and all");
  }

  @Test
  void aFailedConnectFailsCommandsAtOnceUntilTheRetryDelayHasPassed() throws Exception {
    int closedPort;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = probe.getLocalPort();
    }
    FakeTicker ticker = new FakeTicker();
    SelectorNodeClient client =
        client("redis://127.0.0.1:" + closedPort, Duration.ofMillis(200), ticker);
    CompletableFuture<NodeReply> early = client.release(bytes("job"), bytes("token"));
    assertTrue(early.isCompletedExceptionally(), "failed at once, no new attempt");
    assertTrue(failure(early).contains("Connection refused"), failure(early));

    ticker.advance(Duration.ofNanos(CommandPipeline.RECONNECT_DELAY_NANOS));
    CompletableFuture<NodeReply> later = client.release(bytes("job"), bytes("token"));
    CompletionException failed =
        org.junit.jupiter.api.Assertions.assertThrows(
            CompletionException.class, () -> later.orTimeout(5, TimeUnit.SECONDS).join());
    assertTrue(
        failed.getCause().getMessage().contains("Connection refused"),
        "a new attempt, refused again: " + failed.getCause().getMessage());
  }

  private static String failure(CompletableFuture<?> future) {
    try {
      future.join();
    } catch (CompletionException e) {
      return e.getCause().getMessage();
    }
    throw new AssertionError("did not fail: " + future);
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
