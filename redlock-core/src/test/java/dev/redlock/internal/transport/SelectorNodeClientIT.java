package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One master's client on the selector: the pipeline's guarantees (byte cap, stall limit, reconnect
 * delay, a connection per handshake) over non-blocking sockets; and a key set's release, which
 * tells the waiters of each key it deleted, unless it is the quiet cleanup of a failed acquire.
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

  /**
   * The selector's reader is kept from its sockets for ten node timeouts (as when it waits for a
   * pipeline's lock that a virtual thread holds while that thread waits for a carrier) while
   * callers go on calling a healthy master through its circuit breaker: the replies wait unread in
   * the socket, which is the client's doing, and the breaker stays closed. Before ReaderWatch each
   * call found the earlier ones silent past the node timeout and the breaker opened.
   */
  @Test
  void aReaderKeptFromItsSocketsDoesNotOpenAHealthyMastersBreaker(RedisCluster cluster)
      throws InterruptedException {
    Duration timeout = Duration.ofMillis(20);
    SelectorNodeClient client = client(cluster.node(0).uri(), timeout, Ticker.system());
    assertEquals(
        Vote.GONE,
        client.send(Command.release(LockKey.of(bytes("warm")), bytes("up"))).join().status());
    List<BreakerState> told = new CopyOnWriteArrayList<>();
    BreakerNodeClient breaker =
        new BreakerNodeClient(
            client,
            "m",
            timeout.toNanos(),
            Duration.ofSeconds(10),
            Ticker.system(),
            (name, state) -> told.add(state));
    CountDownLatch busy = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(1);
    assertTrue(
        selector.loop.execute(
            () -> {
              busy.countDown();
              try {
                done.await(10, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }));
    assertTrue(busy.await(5, TimeUnit.SECONDS), "the reader is busy");
    List<CompletableFuture<NodeReply>> sent = new ArrayList<>();
    long until = System.nanoTime() + 10 * timeout.toNanos();
    try {
      for (int i = 0; System.nanoTime() - until < 0 || i < 2 * BreakerNodeClient.WINDOW; i++) {
        assertTrue(breaker.permits(), "call " + i + " permitted: " + told);
        sent.add(
            breaker.send(
                new Command.Acquire(LockKey.of(bytes("busy-" + i)), bytes("t"), 60_000, false, 0)));
        LockSupport.parkNanos(timeout.toNanos() / 4); // time passes while the reader is kept
      }
    } finally {
      done.countDown();
    }
    for (CompletableFuture<NodeReply> reply : sent) {
      assertEquals(Vote.GRANTED, reply.join().status(), "the master answered every call");
    }
    assertTrue(breaker.permits());
    assertEquals(List.of(), told, "the breaker never opened");
  }

  @Test
  void aPausedMasterNeverBlocksACallerAndCommandsBeyondTheCapFailAtOnce(RedisCluster cluster) {
    RedisProcess node = cluster.node(0);
    SelectorNodeClient client = client(node.uri(), Duration.ofSeconds(2), Ticker.system());
    assertEquals(
        Vote.GONE,
        client.send(Command.release(LockKey.of(bytes("warm")), bytes("up"))).join().status());
    byte[] token = new byte[32 * 1024];
    java.util.Arrays.fill(token, (byte) 't');
    List<CompletableFuture<NodeReply>> sent = new ArrayList<>();
    long slowest = 0;
    node.pause();
    try {
      for (int i = 0; i < 400; i++) {
        long start = System.nanoTime();
        sent.add(
            client.send(
                new Command.Acquire(LockKey.of(bytes("key-" + i)), token, 60_000, false, 0)));
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
    assertTrue(why.startsWith(QueueLimit.QUEUE_FULL), why);
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
    assertEquals(
        Vote.GONE,
        client.send(Command.release(LockKey.of(bytes("job")), bytes("token"))).join().status());
    CompletableFuture<NodeReply> stuck;
    CompletableFuture<NodeReply> next;
    node.pause();
    try {
      stuck = client.send(Command.release(LockKey.of(bytes("job")), bytes("token")));
      ticker.advance(Duration.ofNanos(CommandPipeline.stallNanos(timeout.toNanos()) + 1));
      next = client.send(Command.release(LockKey.of(bytes("job")), bytes("token")));
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
    CompletableFuture<NodeReply> early =
        client.send(Command.release(LockKey.of(bytes("job")), bytes("token")));
    assertTrue(early.isCompletedExceptionally(), "failed at once, no new attempt");
    assertTrue(failure(early).contains("Connection refused"), failure(early));

    ticker.advance(Duration.ofNanos(CommandPipeline.RECONNECT_DELAY_NANOS));
    CompletableFuture<NodeReply> later =
        client.send(Command.release(LockKey.of(bytes("job")), bytes("token")));
    CompletionException failed =
        org.junit.jupiter.api.Assertions.assertThrows(
            CompletionException.class, () -> later.orTimeout(5, TimeUnit.SECONDS).join());
    assertTrue(
        failed.getCause().getMessage().contains("Connection refused"),
        "a new attempt, refused again: " + failed.getCause().getMessage());
  }

  @Test
  void aSetsReleaseTellsTheWaitersOfEachKeyItDeletedButItsQuietCleanupDoesNot(RedisCluster cluster)
      throws Exception {
    RedisProcess node = cluster.node(0);
    SelectorNodeClient client = client(node.uri(), Duration.ofSeconds(2), Ticker.system());
    LockKey.Set set = LockKey.of(List.of(bytes("qs-a"), bytes("qs-b")));
    byte[] token = bytes("set-token");
    try (Socket waiter = new Socket(InetAddress.getLoopbackAddress(), node.port())) {
      waiter.setSoTimeout(5_000);
      waiter.getOutputStream().write(bytes("SUBSCRIBE redlock:wake:qs-b\r\n"));
      awaitText(waiter.getInputStream(), ":1\r\n"); // the subscription is confirmed

      assertEquals(
          Vote.GRANTED,
          client.send(new Command.Acquire(set, token, 60_000, false, 0)).join().status());
      NodeReply quiet = client.send(Command.releaseQuietly(set, token)).join();
      assertEquals(Vote.GRANTED, quiet.status(), "the cleanup deleted the set's keys");
      assertFalse(quiet.waitersTold(), "the cleanup told no one");
      assertEquals(0L, node.admin().command("EXISTS", "qs-a", "qs-b"));

      assertEquals(
          Vote.GRANTED,
          client.send(new Command.Acquire(set, token, 60_000, false, 0)).join().status());
      NodeReply told = client.send(Command.release(set, token)).join();
      assertTrue(told.waitersTold(), "the release answered 2: the waiter on qs-b heard it");
      // The one message the waiter got is the release's, on qs-b's channel, naming it by SHA-1.
      String heard = awaitText(waiter.getInputStream(), "\r\n" + sha1Hex(token) + "\r\n");
      assertTrue(heard.contains("redlock:wake:qs-b"), heard);
      assertEquals(0L, node.admin().command("EXISTS", "qs-a", "qs-b"));
    }
  }

  /** Reads from {@code in} until what was read ends with {@code end} (bounded by the timeout). */
  private static String awaitText(InputStream in, String end) throws IOException {
    StringBuilder read = new StringBuilder();
    while (!read.toString().endsWith(end)) {
      int b = in.read();
      if (b < 0) {
        throw new AssertionError("closed after " + read);
      }
      read.append((char) b);
    }
    return read.toString();
  }

  private static String sha1Hex(byte[] data) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(data));
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
