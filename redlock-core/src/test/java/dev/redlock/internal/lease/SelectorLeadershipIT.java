package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.lease.QuorumRound.Mode;
import dev.redlock.internal.lease.QuorumRound.Tally;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.SelectorClients;
import dev.redlock.internal.transport.SelectorLoop;
import dev.redlock.internal.transport.SelectorNodeClient;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Vote;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Who reads the replies on the selector ({@link SelectorLoop#await}): a lone caller reads its own,
 * callers in numbers all get their rounds decided, an interrupt is kept, and what arrives after a
 * round was decided is read with no caller waiting.
 */
class SelectorLeadershipIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);

  private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(2);

  private final SelectorClients selector = new SelectorClients();

  @AfterEach
  void close() {
    selector.close();
  }

  private List<SelectorNodeClient> connect(RedisCluster cluster) {
    List<SelectorNodeClient> clients = new ArrayList<>();
    for (String uri : cluster.uris()) {
      clients.add(selector.open(uri, TIMEOUT_NANOS, Ticker.system(), 0));
    }
    return clients;
  }

  private Tally round(Mode mode, IntFunction<CompletableFuture<NodeReply>> command) {
    List<String> names = List.of("a", "b", "c");
    long[] timeouts = {TIMEOUT_NANOS, TIMEOUT_NANOS, TIMEOUT_NANOS};
    QuorumRound round = QuorumRound.start(names, timeouts, 2, mode, Ticker.system(), command);
    return round.await(selector.loop, round.startNanos() + TIMEOUT_NANOS);
  }

  @Test
  void aLoneCallerReadsItsOwnReplies(RedisCluster cluster) {
    List<SelectorNodeClient> nodes = connect(cluster);
    String ioThread = "redlock-io-selector-";
    AtomicInteger readByTheIoThread = new AtomicInteger();
    int rounds = 50;
    for (int r = 0; r < rounds; r++) {
      byte[] key = bytes("lone-" + r);
      Tally tally =
          round(
              Mode.ALL,
              i ->
                  nodes
                      .get(i)
                      .send(Command.release(LockKey.of(key), bytes("token")))
                      .whenComplete(
                          (reply, error) -> {
                            if (Thread.currentThread().getName().startsWith(ioThread)) {
                              readByTheIoThread.incrementAndGet();
                            }
                          }));
      assertEquals(List.of(Vote.GONE, Vote.GONE, Vote.GONE), statuses(tally));
    }
    // Without leadership every reply is read by the I/O thread; with it, only those of a round
    // that began while that thread still held the selector (the first, or after a long pause).
    assertTrue(
        readByTheIoThread.get() <= rounds * 3 / 2,
        "replies read by the I/O thread rather than the caller: "
            + readByTheIoThread.get()
            + " of "
            + rounds * 3);
  }

  @Test
  void callersInNumbersAllGetTheirRoundsDecided(RedisCluster cluster) throws Exception {
    List<SelectorNodeClient> nodes = connect(cluster);
    int threads = 16;
    int rounds = 200;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Integer>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        done.add(
            pool.submit(
                () -> {
                  int answered = 0;
                  for (int r = 0; r < rounds; r++) {
                    byte[] key = bytes("many-" + thread + "-" + r);
                    Tally tally =
                        round(
                            Mode.ALL,
                            i -> nodes.get(i).send(Command.release(LockKey.of(key), bytes("t"))));
                    if (statuses(tally).equals(List.of(Vote.GONE, Vote.GONE, Vote.GONE))) {
                      answered++;
                    }
                  }
                  return answered;
                }));
      }
      for (Future<Integer> result : done) {
        assertEquals(rounds, result.get(60, TimeUnit.SECONDS), "every master answered each round");
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void anInterruptedCallerStillGetsItsRoundAndKeepsTheInterrupt(RedisCluster cluster) {
    List<SelectorNodeClient> nodes = connect(cluster);
    Thread.currentThread().interrupt();
    try {
      Tally tally =
          round(
              Mode.ALL,
              i ->
                  nodes.get(i).send(Command.release(LockKey.of(bytes("interrupted")), bytes("t"))));
      assertEquals(List.of(Vote.GONE, Vote.GONE, Vote.GONE), statuses(tally));
      assertTrue(Thread.currentThread().isInterrupted(), "the interrupt is kept for the caller");
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void repliesARoundWasDecidedWithoutAreReadWithNoCallerWaiting(RedisCluster cluster) {
    List<SelectorNodeClient> nodes = connect(cluster);
    List<CompletableFuture<NodeReply>> sent = new ArrayList<>();
    for (int r = 0; r < 20; r++) {
      byte[] key = bytes("late-" + r);
      Tally tally =
          round(
              Mode.QUORUM,
              i -> {
                CompletableFuture<NodeReply> reply =
                    nodes
                        .get(i)
                        .send(new Command.Acquire(LockKey.of(key), bytes("t"), 10_000, false, 0));
                sent.add(reply);
                return reply;
              });
      assertTrue(tally.reachedQuorum(), tally.outcomes()::toString);
    }
    // No caller waits any more: the loop's thread takes the selector back and reads the rest.
    CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new))
        .orTimeout(Duration.ofSeconds(5).toMillis(), TimeUnit.MILLISECONDS)
        .join();
    for (CompletableFuture<NodeReply> reply : sent) {
      assertEquals(Vote.GRANTED, reply.join().status());
    }
  }

  private static List<Vote> statuses(Tally tally) {
    return tally.outcomes().stream().map(Outcome::vote).toList();
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
