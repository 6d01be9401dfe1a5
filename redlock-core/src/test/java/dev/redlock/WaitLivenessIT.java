package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Waits that stay live when the masters misbehave, on three real masters: a master that stops
 * reading its subscriber connection freezes no one (other waiters get their leases, renewals go on,
 * the close returns); a queued waiter that can never win (its restart guard sees every master as
 * too young) does not keep the waiter behind it from the lock; and a waiter whose subscriber
 * connection drops tries again at once, not at its timer.
 */
class WaitLivenessIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(200);

  private static final Duration TTL = Duration.ofSeconds(10);

  private final List<AutoCloseable> closing = new ArrayList<>();
  private ExecutorService threads;

  @BeforeEach
  void start() {
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void closeEverything() throws Exception {
    threads.shutdownNow();
    for (int i = closing.size() - 1; i >= 0; i--) {
      closing.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closed(T closeable) {
    closing.add(closeable);
    return closeable;
  }

  /**
   * Hears the rounds a RedLock's waits were refused in: per resource, how many, and when the last
   * one began and ended ({@link System#nanoTime}, as told on the event thread).
   */
  private static final class Rounds implements RedLockListener {
    private final Map<String, AtomicInteger> refused = new ConcurrentHashMap<>();
    private final Map<String, Long> lastBegan = new ConcurrentHashMap<>();
    private final Map<String, Long> lastEnded = new ConcurrentHashMap<>();

    @Override
    public void denied(String resource, Denial reason, List<NodeOutcome> outcomes, Duration took) {
      long now = System.nanoTime();
      refused.computeIfAbsent(resource, r -> new AtomicInteger()).incrementAndGet();
      lastBegan.merge(resource, now - took.toNanos(), (a, b) -> b - a > 0 ? b : a);
      lastEnded.merge(resource, now, (a, b) -> b - a > 0 ? b : a);
    }

    int refused(String resource) {
      AtomicInteger count = refused.get(resource);
      return count == null ? 0 : count.get();
    }

    /** Whether a refused round of {@code resource} began after {@code nanos}. */
    boolean beganAfter(String resource, long nanos) {
      Long began = lastBegan.get(resource);
      return began != null && began - nanos > 0;
    }

    /** Whether no refused round of {@code resource} ended in the last {@code nanos}. */
    boolean quietFor(String resource, long nanos) {
      Long ended = lastEnded.get(resource);
      return ended != null && System.nanoTime() - ended > nanos;
    }
  }

  /**
   * The master where waiters queue for {@code resource} (its gate), found by its queue: the one
   * place these tests look inside the library's keys.
   */
  private static RedisProcess gate(RedisCluster cluster, String resource) {
    for (RedisProcess node : cluster.nodes()) {
      if ((Long) node.admin().command("ZCARD", "redlock:queue:" + resource) > 0) {
        return node;
      }
    }
    throw new AssertionError("no master queues waiters for " + resource);
  }

  /** How many of the waiters on {@code pad} and a number below {@code n} were refused twice. */
  private static long queued(Rounds rounds, String pad, int n) {
    long queued = 0;
    for (int i = 0; i < n; i++) {
      if (rounds.refused(pad + i) >= 2) {
        queued++;
      }
    }
    return queued;
  }

  /** How many clients are subscribed to {@code resource}'s wake-up channel, over every master. */
  private static long subscribers(RedisCluster cluster, String resource) {
    long subscribed = 0;
    for (RedisProcess node : cluster.nodes()) {
      List<?> counts =
          (List<?>) node.admin().command("PUBSUB", "NUMSUB", "redlock:wake:" + resource);
      subscribed += Long.parseLong(String.valueOf(counts.get(1)));
    }
    return subscribed;
  }

  // R1: a master that accepts the subscriber connection and then stops reading it.

  /**
   * A subscriber connection whose master stops reading fills its socket's buffers (a small receive
   * window, and many SUBSCRIBEs of long names). Its writes must not hold up anything else: a waiter
   * of the same RedLock on another resource still gets its lease within its maxWait, a renewed
   * lease stays renewed, and the close returns.
   */
  @Test
  void aMasterThatStopsReadingTheSubscriberConnectionFreezesNoOne(RedisCluster cluster)
      throws Exception {
    StallingProxy proxy = closed(new StallingProxy(cluster.node(2)));
    List<String> uris = List.of(cluster.node(0).uri(), cluster.node(1).uri(), proxy.uri());
    AtomicInteger extended = new AtomicInteger();
    AtomicInteger lost = new AtomicInteger();
    Rounds rounds = new Rounds();
    // The machine is loaded by the test's own traffic (900 waiters on 16 KB names, through a
    // proxy): a node timeout that an answer under that load does not miss.
    Duration slowMasters = Duration.ofMillis(500);
    RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(uris)
                .nodeTimeout(slowMasters)
                .retryDelay(Duration.ofSeconds(5)) // the many waiters ask rarely
                .listener(
                    new RedLockListener() {
                      @Override
                      public void denied(
                          String resource,
                          Denial reason,
                          List<NodeOutcome> outcomes,
                          Duration elapsed) {
                        rounds.denied(resource, reason, outcomes, elapsed);
                      }

                      @Override
                      public void extended(
                          String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                        if (resource.equals("renewed")) {
                          extended.incrementAndGet();
                        }
                      }

                      @Override
                      public void lost(
                          String resource, List<NodeOutcome> outcomes, Duration elapsed) {
                        lost.incrementAndGet();
                      }
                    })
                .build());
    Rounds otherRounds = new Rounds();
    RedLock other =
        closed(
            RedLocks.admitted(
                RedLock.builder()
                    .nodes(uris)
                    .nodeTimeout(slowMasters)
                    .listener(otherRounds)
                    .build()));
    boolean closedInTime = false;
    try {
      // A lease renewed every 2 s while it is held.
      CountDownLatch done = new CountDownLatch(1);
      AtomicReference<Lease> renewed = new AtomicReference<>();
      Future<?> holding =
          threads.submit(
              () -> {
                redlock.withLock(
                    "renewed",
                    Duration.ofSeconds(6),
                    Duration.ofSeconds(10),
                    lease -> {
                      renewed.set(lease);
                      try {
                        done.await(60, TimeUnit.SECONDS);
                      } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                      }
                    });
                return null;
              });
      RedLocks.eventually("the renewed lease held", () -> renewed.get() != null);
      Lease handed = redlock.tryAcquire("handed", TTL).orElseThrow();

      // Waiters on long names that someone else holds: each subscribes its resource's channel on
      // two of the three masters, most of them on the stalling one: about 10 MB of SUBSCRIBEs,
      // more than the socket's buffers hold.
      String pad = "x".repeat(16 * 1024 - 8);
      int waiters = 900;
      for (int i = 0; i < waiters; i++) {
        String name = pad + i;
        for (RedisProcess node : cluster.nodes()) {
          node.admin().command("SET", name, "someone-else", "PX", "120000");
        }
      }
      // Started on a thread of the test: an acquireAsync that blocks is itself the freeze.
      List<CompletableFuture<Lease>> waiting = new CopyOnWriteArrayList<>();
      threads.submit(
          () -> {
            for (int i = 0; i < waiters; i++) {
              waiting.add(redlock.acquireAsync(pad + i, TTL, Duration.ofSeconds(60)));
            }
          });
      // Each refused twice (asking every master, then queued at its gate): each subscribed first.
      Poll.until(
          Duration.ofSeconds(60),
          () -> queued(rounds, pad, waiters) == waiters,
          () -> "long-named waiters queued: " + queued(rounds, pad, waiters) + " of " + waiters);
      assertTrue(proxy.stalled() > 0, "the stalling master stopped reading a subscriber");
      int extendedBefore = extended.get();

      // A release that a waiter of the other client hears: the selector's reader runs its
      // callback, which records the hand-off (under the wake-ups' lock).
      CompletableFuture<Lease> handedOver =
          other.acquireAsync("handed", TTL, Duration.ofSeconds(30));
      RedLocks.eventually(
          "the other client's waiter queued", () -> otherRounds.refused("handed") >= 2);
      handed.close();
      handedOver.get(30, TimeUnit.SECONDS).close();

      // Another waiter of the same RedLock, on a resource the other client releases.
      Duration maxWait = Duration.ofSeconds(20);
      Lease held = other.tryAcquire("probe", TTL).orElseThrow();
      long asked = System.nanoTime();
      Future<Lease> probe = threads.submit(() -> redlock.acquire("probe", TTL, maxWait));
      // Refused twice: once asking every master, then queued at its gate.
      Poll.until(
          maxWait,
          () -> rounds.refused("probe") >= 2 || probe.isDone(),
          () -> "the waiter on 'probe' refused twice (queued at its gate)");
      held.close();
      Lease got = probe.get(maxWait.toNanos() - (System.nanoTime() - asked), TimeUnit.NANOSECONDS);
      got.close();

      // Renewals go on: three more rounds (a TTL's time) with the lease never lost.
      Poll.until(
          Duration.ofSeconds(20),
          () -> extended.get() >= extendedBefore + 3,
          () -> "renewals since the stall: " + (extended.get() - extendedBefore));
      assertTrue(renewed.get().isValid(), "the renewed lease is still valid");
      assertTrue(lost.get() == 0, "leases lost: " + lost.get());
      done.countDown();
      holding.get(10, TimeUnit.SECONDS);

      // The close returns within its bound (a few node timeouts and seconds of grace), with the
      // many waiters still pending.
      assertFalse(waiting.get(0).isDone(), "the long-named waiters are still waiting");
      Future<?> closing = threads.submit(redlock::close);
      closing.get(30, TimeUnit.SECONDS);
      closedInTime = true;
      for (CompletableFuture<Lease> f : waiting) {
        assertTrue(f.isCompletedExceptionally(), "a pending waiter failed by the close");
      }
    } finally {
      if (!closedInTime) {
        proxy.close(); // frees whatever a blocked write holds, so that the close can return
        redlock.close();
      }
    }
  }

  // R2: a queued waiter that can never win.

  /**
   * A waiter whose restart guard sees every master as too young (they were never admitted) is
   * granted at its gate each time it asks first, and never gets its lease. Queued ahead of a waiter
   * that could win, it yields its place once it has been granted there for two of its stale windows
   * (2 x (2 retry delays + 2 node timeouts): 4.4 s here) without leaving, and the waiter behind it
   * is told that it is its turn. Without that, the waiter behind is refused at the gate, free as it
   * is, until its wait runs out.
   */
  @Test
  void aQueuedWaiterThatCannotWinYieldsItsPlaceToTheWaiterBehindIt(RedisCluster cluster)
      throws Exception {
    String resource = "unwinnable";
    Duration retryDelay = Duration.ofMillis(100);
    // Long, so that the guarded waiter, which asks every 100 ms or so, does not go stale in the
    // queue (and out of it) whenever a loaded machine leaves its thread unscheduled for a while.
    Duration nodeTimeout = Duration.ofSeconds(1);
    Duration bound = retryDelay.plus(nodeTimeout).multipliedBy(4); // two stale windows
    Duration maxWait = Duration.ofSeconds(30);
    // No restart guard: the masters are brand new, and not admitted.
    RedLock holder =
        closed(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(nodeTimeout)
                .restartGuard(false)
                .build());
    Rounds guardedRounds = new Rounds();
    // Without circuit breakers: on a loaded machine a breaker that opened on slow answers would
    // take the gate out of its rounds, and let it go stale in the queue.
    RedLock guarded =
        closed(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(nodeTimeout)
                .retryDelay(retryDelay)
                .circuitBreakers(false)
                .listener(guardedRounds)
                .build());
    Rounds unguardedRounds = new Rounds();
    RedLock unguarded =
        closed(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(nodeTimeout)
                .retryDelay(retryDelay)
                .restartGuard(false)
                .listener(unguardedRounds)
                .build());
    Lease held = holder.tryAcquire(resource, TTL).orElseThrow();
    // Each is refused twice, asking every master and then at the gate: queued there, in order.
    Future<Lease> first = threads.submit(() -> guarded.acquire(resource, TTL, maxWait));
    RedLocks.eventually("the guarded waiter queued", () -> guardedRounds.refused(resource) >= 2);
    Future<Lease> second = threads.submit(() -> unguarded.acquire(resource, TTL, maxWait));
    RedLocks.eventually(
        "the unguarded waiter queued", () -> unguardedRounds.refused(resource) >= 2);

    // A third client holds the key on one master besides the gate: a majority needs the gate, so
    // that the unguarded waiter cannot take the lock past the queue when, on a loaded machine, its
    // round passes a gate slow to answer.
    RedisProcess gate = gate(cluster, resource);
    RedisProcess blocked =
        cluster.nodes().stream().filter(n -> n != gate).findFirst().orElseThrow();
    blocked.admin().command("SET", resource, "someone-else", "PX", "60000");

    long released = System.nanoTime();
    held.close(); // names the guarded waiter, which is granted at its gate but by no majority
    Lease got = second.get(maxWait.toSeconds() + 10, TimeUnit.SECONDS);
    long took = System.nanoTime() - released;
    got.close();
    // The bound, then a round or two of each.
    assertTrue(
        took < 2 * bound.toNanos(),
        "granted after " + took / 1_000_000 + " ms; the bound is " + bound.toMillis() + " ms");
    assertFalse(first.isDone(), "the guarded waiter is still waiting");
    first.cancel(true);
  }

  // A reset subscriber connection.

  /**
   * Once the subscriber connections of a client with queued waiters are killed (as an idle-timeout
   * proxy or a failover does), and cannot be opened again for a while (the user's password was
   * changed; the connections already open keep theirs), each of its waiters, blocking or not, asks
   * again at once: a release in the gap would not be heard. Its timer (10 to 30 s) is far later.
   */
  @Test
  void aWaiterWhoseSubscriberConnectionDropsAsksAgainAtOnce(RedisCluster cluster) throws Exception {
    for (RedisProcess node : cluster.nodes()) {
      node.admin().command("ACL", "SETUSER", "waiter", "on", ">first", "~*", "&*", "+@all");
    }
    List<String> uris = new ArrayList<>();
    for (RedisProcess node : cluster.nodes()) {
      uris.add("redis://waiter:first@" + node.host() + ":" + node.port());
    }
    RedLock holder = closed(RedLocks.redlock(cluster.uris()));
    Rounds rounds = new Rounds();
    RedLock waiters =
        closed(
            RedLock.builder()
                .nodes(uris)
                .nodeTimeout(NODE_TIMEOUT)
                .retryDelay(Duration.ofSeconds(20))
                .listener(rounds)
                .build());
    // Three waiters of one client, each on its own resource: two blocking, one asynchronous.
    List<String> resources = List.of("dropped-0", "dropped-1", "dropped-2");
    List<Lease> held = new ArrayList<>();
    for (String resource : resources) {
      held.add(holder.tryAcquire(resource, TTL).orElseThrow());
    }
    Duration maxWait = Duration.ofSeconds(60);
    List<Future<Lease>> waiting = new ArrayList<>();
    waiting.add(threads.submit(() -> waiters.acquire(resources.get(0), TTL, maxWait)));
    waiting.add(threads.submit(() -> waiters.acquire(resources.get(1), TTL, maxWait)));
    waiting.add(waiters.acquireAsync(resources.get(2), TTL, maxWait));
    for (String resource : resources) {
      RedLocks.eventually(
          resource + " subscribed on two masters", () -> subscribers(cluster, resource) == 2);
    }
    // Quiet: the rounds that the subscriptions' confirmations started are over.
    Poll.until(
        Duration.ofSeconds(10),
        () -> resources.stream().allMatch(r -> rounds.quietFor(r, 200_000_000L)),
        () -> "no round for 200 ms");

    for (RedisProcess node : cluster.nodes()) {
      node.admin().command("ACL", "SETUSER", "waiter", "resetpass", ">second");
    }
    long killed = System.nanoTime();
    try {
      for (RedisProcess node : cluster.nodes()) {
        node.admin().command("CLIENT", "KILL", "TYPE", "pubsub");
      }
      Poll.until(
          Duration.ofSeconds(5),
          () -> resources.stream().allMatch(r -> rounds.beganAfter(r, killed)),
          () ->
              "waiters that asked again since the kill: "
                  + resources.stream().filter(r -> rounds.beganAfter(r, killed)).toList());
    } finally {
      for (RedisProcess node : cluster.nodes()) {
        node.admin().command("ACL", "SETUSER", "waiter", "resetpass", ">first");
      }
    }
    for (Lease lease : held) {
      lease.close();
    }
    for (Future<Lease> f : waiting) {
      f.get(maxWait.toSeconds(), TimeUnit.SECONDS).close();
    }
  }

  /**
   * A master on loopback that stops reading every subscriber connection (one that starts with
   * {@code SUBSCRIBE}) as soon as it sees it, with a receive buffer of 4 KB, and forwards every
   * other connection to a real master.
   */
  private static final class StallingProxy implements AutoCloseable {
    private static final byte[] SUBSCRIBE = "SUBSCRIBE".getBytes(StandardCharsets.US_ASCII);

    private final RedisProcess master;
    private final ServerSocket server;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final AtomicInteger stalled = new AtomicInteger();
    private volatile boolean closed;

    StallingProxy(RedisProcess master) throws IOException {
      this.master = master;
      server = new ServerSocket();
      server.setReceiveBufferSize(4096); // accepted sockets inherit it: a small window
      server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      Thread acceptor = new Thread(this::accept, "stalling-proxy");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    String uri() {
      return "redis://127.0.0.1:" + server.getLocalPort();
    }

    /** How many subscriber connections it has stopped reading. */
    int stalled() {
      return stalled.get();
    }

    private void accept() {
      while (!closed) {
        try {
          Socket client = server.accept();
          sockets.add(client);
          Thread serving = new Thread(() -> serve(client), "stalling-proxy-conn");
          serving.setDaemon(true);
          serving.start();
        } catch (IOException e) {
          return; // closed
        }
      }
    }

    private void serve(Socket client) {
      try {
        InputStream in = client.getInputStream();
        byte[] first = new byte[64];
        int n = 0;
        // Enough of the first command to see its name: the array header's line, then "$9\r\n"
        // and the name.
        while (n < first.length && !named(first, n)) {
          int read = in.read(first, n, first.length - n);
          if (read < 0) {
            client.close();
            return;
          }
          n += read;
        }
        if (contains(first, n, SUBSCRIBE)) {
          stalled.incrementAndGet();
          return; // never read again: the socket stays open until close()
        }
        Socket upstream = new Socket(master.host(), master.port());
        sockets.add(upstream);
        upstream.getOutputStream().write(first, 0, n);
        Thread back = new Thread(() -> pump(upstream, client), "stalling-proxy-back");
        back.setDaemon(true);
        back.start();
        pump(client, upstream);
      } catch (IOException e) {
        // the connection ended
      }
    }

    /** Whether {@code n} bytes hold the first command's name, or enough to tell it is not one. */
    private static boolean named(byte[] bytes, int n) {
      for (int i = 0; i + 1 < n; i++) {
        if (bytes[i] == '\r' && bytes[i + 1] == '\n') {
          return n >= i + 2 + 4 + SUBSCRIBE.length;
        }
      }
      return false;
    }

    private static boolean contains(byte[] bytes, int n, byte[] word) {
      outer:
      for (int i = 0; i + word.length <= n; i++) {
        for (int j = 0; j < word.length; j++) {
          if (Character.toUpperCase(bytes[i + j]) != word[j]) {
            continue outer;
          }
        }
        return true;
      }
      return false;
    }

    private static void pump(Socket from, Socket to) {
      byte[] buffer = new byte[64 * 1024];
      try {
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        int n;
        while ((n = in.read(buffer)) >= 0) {
          out.write(buffer, 0, n);
        }
      } catch (IOException e) {
        // one side closed
      }
      try {
        from.close();
        to.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }

    @Override
    public void close() throws IOException {
      closed = true;
      server.close();
      for (Socket socket : sockets) {
        socket.close();
      }
    }
  }
}
