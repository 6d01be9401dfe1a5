package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The selector transport's connection: one socket with its handshake, and nothing more; writes that
 * never block, whatever the master does.
 */
class SelectorLinkIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(1);

  private static final long TIMEOUT = TimeUnit.MILLISECONDS.toNanos(200);

  private final SelectorLoop loop = new SelectorLoop();

  @AfterEach
  void stopLoop() {
    assertTrue(loop.close(TimeUnit.SECONDS.toNanos(5)), "the selector thread stopped");
  }

  @Test
  void aClosedLinkFailsRatherThanOpeningASocketWithoutItsHandshake(RedisCluster cluster)
      throws Exception {
    long before = cluster.node(0).admin().connectionsReceived();
    Recorder events = new Recorder();
    SelectorLink link = events.open(loop, cluster.node(0).uri());
    send(link, NodeCommand.of(Command.release(LockKey.of(bytes("job")), bytes("token"))));
    assertEquals(-1L, events.reply(), "the open link works: the key is gone");
    link.close();

    assertThrows(
        RuntimeException.class,
        () -> link.write(NodeCommand.of(Command.release(LockKey.of(bytes("job")), bytes("t")))));
    assertEquals(
        before + 1,
        cluster.node(0).admin().connectionsReceived(),
        "no second socket was opened behind our back");
    assertNull(events.replies.poll(200, TimeUnit.MILLISECONDS), "nothing more was read");
  }

  @Test
  void theHandshakeAuthenticatesSelectsTheDatabaseAndLoadsEveryScript(RedisCluster cluster)
      throws Exception {
    RedisProcess node = cluster.node(0);
    node.admin().command("SCRIPT", "FLUSH");
    node.admin().command("ACL", "SETUSER", "locker", "on", ">s3cret", "~*", "+@all");
    try {
      Recorder events = new Recorder();
      SelectorLink link =
          events.open(loop, "redis://locker:s3cret@" + node.host() + ":" + node.port() + "/3");
      assertTrue(link.scriptsLoaded());
      send(link, NodeCommand.set(bytes("in-db-3"), bytes("token"), 10_000));
      assertEquals("OK", new String((byte[]) events.reply(), StandardCharsets.US_ASCII));
      assertFalse(node.admin().exists("in-db-3"), "not in database 0");
      assertTrue(
          String.valueOf(node.admin().command("INFO", "keyspace")).contains("db3:keys=1"),
          "in database 3");
      for (LuaScript script : LuaScript.ALL) {
        Object exists =
            node.admin()
                .command("SCRIPT", "EXISTS", new String(script.sha1(), StandardCharsets.US_ASCII));
        assertEquals(List.of(1L), exists, "loaded: " + script);
      }
      link.close();
    } finally {
      node.admin().command("ACL", "DELUSER", "locker");
      node.admin().command("FLUSHALL");
    }
  }

  @Test
  void aRefusedPasswordFailsTheAttemptWithoutShowingIt(RedisCluster cluster) throws Exception {
    RedisProcess node = cluster.node(0);
    Recorder events = new Recorder();
    SelectorLink.open(
        loop,
        NodeAddress.parse("redis://nobody:hunter2@" + node.host() + ":" + node.port()),
        TIMEOUT,
        events);
    ExecutionException failed =
        assertThrows(ExecutionException.class, () -> events.opened.get(5, TimeUnit.SECONDS));
    String message = failed.getCause().getMessage();
    assertTrue(message.startsWith("AUTH refused: WRONGPASS"), message);
    assertFalse(message.contains("hunter2"), message);
  }

  @Test
  void aMasterThatNeverAnswersFailsTheAttemptWithinTheTimeout() throws Exception {
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Recorder events = new Recorder();
      long start = System.nanoTime();
      SelectorLink.open(
          loop, NodeAddress.parse("redis://127.0.0.1:" + silent.getLocalPort()), TIMEOUT, events);
      ExecutionException failed =
          assertThrows(ExecutionException.class, () -> events.opened.get(5, TimeUnit.SECONDS));
      long took = System.nanoTime() - start;
      assertEquals("handshake timed out after 200 ms", failed.getCause().getMessage());
      assertTrue(took >= TIMEOUT, "not before the timeout: " + took);
      assertTrue(took < TIMEOUT + TimeUnit.SECONDS.toNanos(1), "soon after it: " + took);
    }
  }

  @Test
  void aNameIsResolvedOffTheSelectorThread(RedisCluster cluster) throws Exception {
    Recorder events = new Recorder();
    SelectorLink link = events.open(loop, "redis://localhost:" + cluster.node(0).port());
    send(link, NodeCommand.query(NodeCommand.Verb.TIME));
    assertEquals(2, ((List<?>) events.reply()).size());
    link.close();
  }

  @Test
  void aMasterThatStopsReadingNeverBlocksAWriteAndGetsEveryCommandInOrderWhenItResumes(
      RedisCluster cluster) throws Exception {
    RedisProcess node = cluster.node(0);
    Recorder events = new Recorder();
    SelectorLink link = events.open(loop, node.uri());
    byte[] big = new byte[64 * 1024];
    Arrays.fill(big, (byte) 'x');
    int commands = 400; // 25 MiB: far beyond the socket buffers on both sides
    node.pause();
    long slowest;
    try {
      slowest = 0;
      for (int i = 0; i < commands; i++) {
        // Pairs on one key: the first SET NX is granted, the second finds the key.
        long start = System.nanoTime();
        send(link, NodeCommand.set(bytes("big-" + i / 2), big, 60_000));
        slowest = Math.max(slowest, System.nanoTime() - start);
      }
    } finally {
      node.resume();
    }
    assertTrue(slowest < TimeUnit.MILLISECONDS.toNanos(500), "no write blocked: " + slowest);
    for (int i = 0; i < commands; i++) {
      Object reply = events.reply();
      if (i % 2 == 0) {
        assertEquals("OK", new String((byte[]) reply, StandardCharsets.US_ASCII), "reply " + i);
      } else {
        assertNull(reply, "reply " + i + " answers the second SET of its key");
      }
    }
    assertEquals(commands / 2, node.admin().dbSize());
    link.close();
    node.admin().command("FLUSHALL");
  }

  @Test
  void commandsWaitForTheRepliesDueAndGoOutRightAfterThem(RedisCluster cluster) throws Exception {
    RedisProcess node = cluster.node(0);
    Recorder events = new Recorder();
    // Held back for as long as the replies take (up to 10 s), not the 2 ms a link holds at most.
    SelectorLink link = events.open(loop, node.uri(), TimeUnit.SECONDS.toNanos(10));
    // CLIENT PAUSE WRITE holds a SET unanswered while the master still reads what follows it into
    // the connection's query buffer (qbuf), which CLIENT LIST shows.
    node.admin().command("CLIENT", "PAUSE", "10000", "WRITE");
    callersInRounds(2); // callers in numbers: their bytes are worth holding back
    try {
      send(link, NodeCommand.set(bytes("first"), bytes("t"), 60_000));
      awaitBlocked(node);
      // A read flushes what is held: let the loop finish the handshake's reads first.
      awaitLoop();
      send(link, NodeCommand.set(bytes("second"), bytes("t"), 60_000));
      send(link, NodeCommand.set(bytes("third"), bytes("t"), 60_000));
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
      while (System.nanoTime() - deadline < 0) {
        assertEquals(0, blockedQueryBuffer(node), "held back while the first reply is due");
        Thread.sleep(10); // polling a condition that must not change
      }
    } finally {
      callersInRounds(-2);
      node.admin().command("CLIENT", "UNPAUSE");
    }
    for (int i = 0; i < 3; i++) {
      assertEquals("OK", new String((byte[]) events.reply(), StandardCharsets.US_ASCII));
    }
    assertEquals(3, node.admin().dbSize(), "the held commands went out after the reply");

    link.close();
    node.admin().command("FLUSHALL");
  }

  @Test
  void bytesHeldBackForRepliesThatDoNotComeAreSentSoonAnyway(RedisCluster cluster)
      throws Exception {
    RedisProcess node = cluster.node(0);
    Recorder events = new Recorder();
    // Holds back for 2 ms at most. A connect timeout far beyond this test keeps the loop's thread
    // from waking for its timer: only the held bytes themselves may get it to send them.
    SelectorLink.open(
        loop,
        NodeAddress.parse(node.uri()),
        TimeUnit.SECONDS.toNanos(30),
        SelectorLink.HOLD_NANOS,
        events);
    SelectorLink link = events.opened.get(5, TimeUnit.SECONDS);
    node.admin().command("CLIENT", "PAUSE", "10000", "WRITE");
    callersInRounds(2);
    try {
      // The second is held back behind the first's reply, which the pause keeps from coming: the
      // loop's leader sends it anyway once that reply is late.
      send(link, NodeCommand.set(bytes("first"), bytes("t"), 60_000));
      send(link, NodeCommand.set(bytes("second"), bytes("t"), 60_000));
      Poll.until(
          Duration.ofSeconds(1),
          () -> blockedQueryBuffer(node) > 0,
          () -> "the second reaching the master");
    } finally {
      callersInRounds(-2);
      node.admin().command("CLIENT", "UNPAUSE");
    }
    for (int i = 0; i < 2; i++) {
      assertEquals("OK", new String((byte[]) events.reply(), StandardCharsets.US_ASCII));
    }
    link.close();
    node.admin().command("FLUSHALL");
  }

  @Test
  void aLoneCallersCommandGoesOutAtOnceWhateverRepliesAreStillDue() throws Exception {
    // Held back for a minute at most: long enough that a command held at all arrives far too late.
    long hold = TimeUnit.SECONDS.toNanos(60);
    try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Recorder events = new Recorder();
      SelectorLink.open(
          loop,
          NodeAddress.parse("redis://127.0.0.1:" + server.getLocalPort()),
          TimeUnit.SECONDS.toNanos(5),
          hold,
          events);
      try (Socket accepted = server.accept()) {
        // A fake master: answers the handshake, then it only listens.
        accepted.getOutputStream().write(handshakeAnswers());
        SelectorLink link = events.opened.get(5, TimeUnit.SECONDS);
        StringBuffer received = listen(accepted);
        callersInRounds(1); // this thread, alone in its round; the loop's thread leads meanwhile
        try {
          send(link, NodeCommand.set(bytes("never-answered"), bytes("t"), 60_000));
          Poll.until(
              Duration.ofSeconds(5),
              () -> received.indexOf("never-answered") >= 0,
              () -> "the first command reaching the master");
          send(link, NodeCommand.set(bytes("sent-at-once"), bytes("t"), 60_000));
          // Held back, it would come after the whole hold: a twentieth of it is ample.
          Poll.until(
              Duration.ofNanos(hold / 20),
              () -> received.indexOf("sent-at-once") >= 0,
              () -> "the second command reaching the master while the first's reply is due");
        } finally {
          callersInRounds(-1);
        }
        link.close();
      }
    }
  }

  /** Counts {@code callers} more (or fewer) callers inside a round on the loop. */
  private void callersInRounds(int callers) {
    for (int i = 0; i < Math.abs(callers); i++) {
      if (callers > 0) {
        loop.enterRound();
      } else {
        loop.leaveRound();
      }
    }
  }

  /** Reads what {@code socket} receives, on a thread of its own, until it closes. */
  private static StringBuffer listen(Socket socket) {
    StringBuffer received = new StringBuffer();
    Thread reader =
        new Thread(
            () -> {
              byte[] chunk = new byte[8192];
              try {
                for (int n; (n = socket.getInputStream().read(chunk)) >= 0; ) {
                  received.append(new String(chunk, 0, n, StandardCharsets.US_ASCII));
                }
              } catch (java.io.IOException e) {
                // closed by the test
              }
            },
            "fake-master-reader");
    reader.setDaemon(true);
    reader.start();
    return received;
  }

  /** Waits until the loop's thread has run a task: what it was reading before is done. */
  private void awaitLoop() throws InterruptedException {
    CountDownLatch ran = new CountDownLatch(1);
    assertTrue(loop.execute(ran::countDown), "the loop runs");
    assertTrue(ran.await(5, TimeUnit.SECONDS), "the loop ran the task within 5 s");
  }

  /** Waits until a client is blocked by the pause: the link's SET reached the master. */
  private static void awaitBlocked(RedisProcess node) {
    Poll.until("a client blocked by the pause", () -> blockedQueryBuffer(node) >= 0);
  }

  /** The query buffer of the client the pause blocks (flags=b), or -1 if none is blocked. */
  private static long blockedQueryBuffer(RedisProcess node) {
    for (String client : String.valueOf(node.admin().command("CLIENT", "LIST")).split("\n")) {
      List<String> fields = Arrays.asList(client.trim().split(" "));
      if (fields.contains("flags=b")) {
        for (String field : fields) {
          if (field.startsWith("qbuf=")) {
            return Long.parseLong(field.substring("qbuf=".length()));
          }
        }
      }
    }
    return -1;
  }

  @Test
  void aMasterThatClosesTheConnectionIsToldOnceAsLost() throws Exception {
    Recorder events = new Recorder();
    try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      SelectorLink.open(
          loop,
          NodeAddress.parse("redis://127.0.0.1:" + server.getLocalPort()),
          TimeUnit.SECONDS.toNanos(5),
          events);
      try (Socket accepted = server.accept()) {
        // A fake master: answers the handshake, then it hangs up.
        accepted.getOutputStream().write(handshakeAnswers());
        SelectorLink link = events.opened.get(5, TimeUnit.SECONDS);
        assertTrue(link.scriptsLoaded());
      }
      assertEquals("connection closed by the master", events.lost.get(5, TimeUnit.SECONDS));
    }
    assertEquals(1, events.losses.get(), "told once");
  }

  /**
   * What a fake master answers to the handshake of a link without password or database: {@code INFO
   * server} (a run up for 100 s), {@code CONFIG GET append*} (nothing) and every {@code SCRIPT
   * LOAD}.
   */
  static byte[] handshakeAnswers() {
    String info = "run_id:" + "f".repeat(40) + "\r\nuptime_in_seconds:100\r\n";
    StringBuilder answers =
        new StringBuilder("$" + info.length() + "\r\n" + info + "\r\n").append("*0\r\n");
    for (int i = 0; i < LuaScript.ALL.size(); i++) {
      answers.append("$40\r\n").append("0".repeat(40)).append("\r\n");
    }
    return answers.toString().getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** Records what a link tells, for the test thread to wait on. */
  static final class Recorder implements SelectorLink.Events {
    final CompletableFuture<SelectorLink> opened = new CompletableFuture<>();
    final LinkedBlockingQueue<Optional<Object>> replies = new LinkedBlockingQueue<>();
    final CompletableFuture<String> lost = new CompletableFuture<>();
    final AtomicInteger losses = new AtomicInteger();

    /** Opens a link to {@code uri} and waits until it is open. */
    SelectorLink open(SelectorLoop loop, String uri) throws Exception {
      return open(loop, uri, SelectorLink.HOLD_NANOS);
    }

    /** Opens a link that holds bytes back at most {@code holdNanos}, and waits until it is open. */
    SelectorLink open(SelectorLoop loop, String uri, long holdNanos) throws Exception {
      SelectorLink.open(loop, NodeAddress.parse(uri), TIMEOUT, holdNanos, this);
      return opened.get(5, TimeUnit.SECONDS);
    }

    /** The next reply, waiting up to 10 s. */
    Object reply() throws InterruptedException {
      Optional<Object> reply = replies.poll(10, TimeUnit.SECONDS);
      assertInstanceOf(Optional.class, reply, "a reply within 10 s");
      return reply.orElse(null);
    }

    @Override
    public void opened(SelectorLink link) {
      opened.complete(link);
    }

    @Override
    public void failed(String error) {
      opened.completeExceptionally(new NodeUnavailableException(error));
    }

    @Override
    public boolean replied(SelectorLink link, Object reply) {
      replies.add(Optional.ofNullable(reply));
      return true;
    }

    @Override
    public void lost(SelectorLink link, String reason) {
      losses.incrementAndGet();
      lost.complete(reason);
    }
  }

  /** What the pipeline does: append the command, then send it (a write alone only buffers). */
  private static void send(SelectorLink link, NodeCommand command) {
    link.write(command);
    link.kick();
  }
}
