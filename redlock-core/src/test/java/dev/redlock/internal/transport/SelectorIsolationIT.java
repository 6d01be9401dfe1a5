package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import dev.redlock.RedLockListener;
import dev.redlock.internal.transport.HostileMaster.Behavior;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * One master cannot stall the others on the shared selector: a master that answers a lock command
 * with an endless line, with garbage, or with a huge announced reply costs the healthy masters'
 * replies no delay worth the name and the client no heap, and a link it broke comes back only after
 * a back-off; a master that streams well-formed replies without end still leaves the selector to
 * the others.
 */
class SelectorIsolationIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  private static final int CYCLES = 200;

  /**
   * How much slower a cycle may be with the hostile master than without, at the median and at the
   * 99th percentile (a few outliers on a shared machine make the latter noisy).
   */
  private static final int MEDIAN_SLOWDOWN = 2;

  private static final int P99_SLOWDOWN = 10;

  /**
   * And 1 ms more at the median, as the benchmark's isolation goal allows (p99 at most 1.5x the
   * healthy one plus 1 ms): on a loaded machine the hostile master's bytes, read on the shared
   * selector, cost the median a few hundred microseconds (it was 2.27x the baseline's 361 us once,
   * under a CI run); the stall isolation prevents costs every round a node timeout (100 ms).
   */
  private static final long SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /**
   * And a tenth of the node timeout more at the 99th percentile (the second slowest of 200 cycles):
   * one scheduler stall of a loaded 2-core machine lasts several milliseconds, on either side,
   * while a hostile master that stalled the selector would cost a whole node timeout.
   */
  private static final long P99_SLACK_NANOS = NODE_TIMEOUT.toNanos() / 10;

  private static final long HEAP_GROWTH_BYTES = 16L * 1024 * 1024;

  private static final long LINK_TIMEOUT = TimeUnit.SECONDS.toNanos(5);

  /** The first four healthy masters and the hostile one: five masters, three of them a quorum. */
  private static List<String> withTheHostile(RedisCluster cluster, HostileMaster hostile) {
    List<String> uris = new ArrayList<>(cluster.uris().subList(0, 4));
    uris.add(hostile.uri());
    return uris;
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(value = Behavior.class, names = "STREAM", mode = EnumSource.Mode.EXCLUDE)
  void aHostileMasterNeitherDelaysTheHealthyMastersNorFillsTheHeap(
      Behavior behavior, RedisCluster cluster) throws Exception {
    try (HostileMaster hostile = new HostileMaster(behavior)) {
      List<String> uris = withTheHostile(cluster, hostile);
      // The baseline: as many masters, all healthy (the same four, and a fifth healthy one where
      // the hostile master is): the same quorum, as many commands sent and answers to wait for, so
      // that only the hostile master's behaviour differs (against the four alone, the fifth
      // master's own cost made the median 1.5x, and 2.05x once under load). On a selector of its
      // own, timed cycle for cycle in turn with the other, so that both see the same machine.
      HostileOutcomes outcomes = new HostileOutcomes(hostile.uri());
      try (RedLock healthy = open(cluster.uris(), null);
          RedLock redlock = open(uris, outcomes)) {
        long before = usedHeapAfterGc();
        cycles(healthy, redlock, "warm-" + behavior, CYCLES, new int[2]);
        // The measured part's rounds without a quorum: the baseline's, the tested side's.
        int[] lost = new int[2];
        Poll.until(
            Duration.ofSeconds(5), () -> hostile.floods() > 0, () -> "the hostile master's turn");
        // Timed in four parts, the retained heap looked at after each (a link may hold a big
        // buffer only while its master floods).
        long[] baseline = new long[0];
        long[] flooded = new long[0];
        long grew = 0;
        for (int part = 0; part < 4; part++) {
          long[][] some = cycles(healthy, redlock, behavior + "-" + part, CYCLES / 4, lost);
          baseline = concat(baseline, some[0]);
          flooded = concat(flooded, some[1]);
          grew = Math.max(grew, usedHeapAfterGc() - before);
        }

        long baseMedian = percentile(baseline, 50);
        long floodMedian = percentile(flooded, 50);
        long basePercentile = percentile(baseline, 99);
        long floodPercentile = percentile(flooded, 99);
        long grown = grew;
        System.out.printf(
            "ISOLATION %s: p50 %d -> %d us, p99 %d -> %d us, heap %+d KiB, %d connections,"
                + " %d floods, %d hostile bytes written%n",
            behavior,
            baseMedian / 1000,
            floodMedian / 1000,
            basePercentile / 1000,
            floodPercentile / 1000,
            grown / 1024,
            hostile.connections(),
            hostile.floods(),
            hostile.bytesSent());
        assertTrue(
            floodMedian <= MEDIAN_SLOWDOWN * baseMedian + SLACK_NANOS,
            () ->
                "p50 of a cycle "
                    + floodMedian / 1000
                    + " us with the hostile master, "
                    + baseMedian / 1000
                    + " us without");
        assertTrue(
            floodPercentile <= P99_SLOWDOWN * basePercentile + P99_SLACK_NANOS,
            () ->
                "p99 of a cycle "
                    + floodPercentile / 1000
                    + " us with the hostile master, "
                    + basePercentile / 1000
                    + " us without");
        assertTrue(grown <= HEAP_GROWTH_BYTES, () -> "the heap grew by " + grown / 1024 + " KiB");
        assertTrue(
            lost[1] <= lost[0] + 1,
            () ->
                "rounds without a quorum: "
                    + lost[1]
                    + " with the hostile master, "
                    + lost[0]
                    + " without");
        // Each hostile link is cut at once: at the header, the first bad byte, or the line bound.
        Poll.until(
            Duration.ofSeconds(5),
            () -> !hostile.hostileLifetimes.isEmpty(),
            () -> "the client hanging up on the hostile master");
        for (long lifetime : hostile.hostileLifetimes) {
          assertTrue(
              lifetime < TimeUnit.SECONDS.toNanos(1),
              () -> "a hostile link lived " + TimeUnit.NANOSECONDS.toMillis(lifetime) + " ms");
        }
      }
      System.out.printf("ISOLATION %s: the hostile master's outcomes %s%n", behavior, outcomes);
      outcomes.assertNeverAVote();
    }
  }

  @Test
  void aMasterThatBreaksTheProtocolIsReconnectedOnlyAfterABackOffThatDoubles(RedisCluster cluster)
      throws Exception {
    try (HostileMaster hostile = new HostileMaster(Behavior.GARBAGE)) {
      List<String> uris = withTheHostile(cluster, hostile);
      try (RedLock redlock = open(uris, null)) {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1600);
        int rounds = 0;
        while (System.nanoTime() - end < 0) {
          grant(redlock, "backoff:" + rounds++);
        }
        List<Long> accepted = new ArrayList<>(hostile.accepted);
        long[] gapsMillis = new long[accepted.size() - 1];
        for (int i = 1; i < accepted.size(); i++) {
          gapsMillis[i - 1] = TimeUnit.NANOSECONDS.toMillis(accepted.get(i) - accepted.get(i - 1));
        }
        System.out.printf(
            "BACKOFF %d rounds, %d connections, gaps %s ms%n",
            rounds, accepted.size(), Arrays.toString(gapsMillis));
        // Connected at build, broken by the first lock command (admitting), then connected again
        // at least 100, 200, 400, 800 ms later, each broken at once.
        assertTrue(
            accepted.size() >= 4 && accepted.size() <= 6,
            () -> accepted.size() + " connections in 1.6 s, gaps " + Arrays.toString(gapsMillis));
        for (int i = 0; i < gapsMillis.length; i++) {
          long least = 100L << i;
          assertTrue(
              gapsMillis[i] >= least,
              "reconnect " + i + " waited " + gapsMillis[i] + " ms, not " + least);
        }
      }
    }
  }

  @Test
  void aMasterThatStreamsRepliesWithoutEndLeavesTheSelectorToTheOtherMasters(RedisCluster cluster)
      throws Exception {
    SelectorLoop loop = new SelectorLoop();
    SelectorLink flooded;
    try (HostileMaster streaming = new HostileMaster(Behavior.STREAM)) {
      Counter counter = new Counter();
      SelectorLink.open(loop, NodeAddress.parse(streaming.uri()), LINK_TIMEOUT, counter);
      flooded = counter.opened.get(5, TimeUnit.SECONDS);
      flooded.write(NodeCommand.set(ascii("job"), ascii("token"), 10_000));
      flooded.kick();
      Poll.until(
          Duration.ofSeconds(5), () -> counter.replies.get() > 100_000, () -> "the stream flowing");

      // While it streams, another master's link opens (its handshake read on the same selector)
      // and its reply is read at once.
      long start = System.nanoTime();
      SelectorLinkIT.Recorder healthy = new SelectorLinkIT.Recorder();
      SelectorLink.open(loop, NodeAddress.parse(cluster.node(0).uri()), LINK_TIMEOUT, healthy);
      SelectorLink link = healthy.opened.get(5, TimeUnit.SECONDS);
      link.write(NodeCommand.query(NodeCommand.Verb.TIME));
      link.kick();
      assertTrue(healthy.reply() instanceof List<?>, "TIME answered");
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      long streamed = counter.replies.get();
      assertTrue(tookMillis < 1000, () -> "opened and answered in " + tookMillis + " ms");
      Poll.until(
          Duration.ofSeconds(5),
          () -> counter.replies.get() > streamed + 100_000,
          () -> "the stream still read: its master has its turns too");
      System.out.printf(
          "STREAM a link opened and answered in %d ms; %d streamed replies read by then%n",
          tookMillis, streamed);
      link.close();
      flooded.close();
    } finally {
      assertTrue(loop.close(TimeUnit.SECONDS.toNanos(5)), "the selector thread stopped");
    }
    // The loop's thread has stopped: what it wrote is seen.
    System.out.printf("STREAM at most %d bytes read in one turn%n", flooded.mostReadAtOnce());
    assertEquals(
        SelectorLink.READ_BUDGET_BYTES,
        flooded.mostReadAtOnce(),
        "a turn of the streaming master's link read its budget, and no more");
  }

  /**
   * The hostile master's outcome in every acquire and every completed release of a RedLock: what
   * the client made of its bytes. Keyed by status, with each distinct detail (its numbers left out,
   * so that the same breach reads the same every time).
   */
  private static final class HostileOutcomes implements RedLockListener {
    private final String node;
    private final Map<Status, Map<String, Integer>> acquires = new ConcurrentHashMap<>();
    private final Map<Status, Map<String, Integer>> releases = new ConcurrentHashMap<>();

    HostileOutcomes(String uri) {
      this.node = uri.substring("redis://".length());
    }

    @Override
    public void acquired(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
      note(acquires, outcomes);
    }

    @Override
    public void releaseCompleted(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
      note(releases, outcomes);
    }

    private void note(Map<Status, Map<String, Integer>> into, List<NodeOutcome> outcomes) {
      for (NodeOutcome outcome : outcomes) {
        if (outcome.node().equals(node)) {
          into.computeIfAbsent(outcome.status(), s -> new ConcurrentHashMap<>())
              .merge(outcome.detail().replaceAll("[0-9]+", "N"), 1, Integer::sum);
        }
      }
    }

    /**
     * Asserts that the hostile master never cast a vote, and that what it sent was seen as the
     * failure it is: its acquires fail or are left pending by the healthy quorum, never granted,
     * taken or gone; and its acquires fail for the protocol error it made, at least once.
     */
    void assertNeverAVote() {
      Set<Status> notVotes = EnumSet.of(Status.FAILED, Status.TIMED_OUT, Status.PENDING);
      assertTrue(
          notVotes.containsAll(acquires.keySet()) && notVotes.containsAll(releases.keySet()),
          () -> "the hostile master's outcomes: " + this);
      assertTrue(
          acquires.getOrDefault(Status.FAILED, Map.of()).keySet().stream()
              .anyMatch(detail -> detail.contains("protocol error: ")),
          () -> "the hostile master's acquires failed for its protocol error: " + this);
    }

    @Override
    public String toString() {
      return "acquires " + new TreeMap<>(acquires) + ", releases " + new TreeMap<>(releases);
    }
  }

  /** Counts what a link hands on, keeping nothing of it. */
  private static final class Counter implements SelectorLink.Events {
    final CompletableFuture<SelectorLink> opened = new CompletableFuture<>();
    final AtomicLong replies = new AtomicLong();

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
      replies.incrementAndGet();
      return true;
    }

    @Override
    public void lost(SelectorLink link, String reason) {}
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * A RedLock over {@code uris} whose healthy masters (all but a hostile one) are admitted. A cold
   * JVM on a busy machine may take longer than the node timeout to connect: admitting is tried
   * again until they are.
   *
   * <p>No circuit breakers: a breaker would keep commands from the hostile master after a few
   * failed votes, so that it would misbehave only at the first contact and at each half-open probe.
   * Without, it gets every command its pipeline lets through: the worst case, and the one where the
   * pipeline's own back-off shows.
   */
  private static RedLock open(List<String> uris, RedLockListener listener) {
    RedLockBuilder builder =
        RedLock.builder().nodes(uris).nodeTimeout(NODE_TIMEOUT).circuitBreakers(false);
    if (listener != null) {
      builder.listener(listener);
    }
    RedLock redlock = builder.build();
    long healthy = uris.stream().filter(redis.cluster().uris()::contains).count();
    Poll.until(
        Duration.ofSeconds(10),
        () ->
            redlock.admitFreshNodes().stream()
                    .filter(o -> o.status() == Status.GRANTED || o.status() == Status.TAKEN)
                    .count()
                >= healthy,
        () -> "the healthy masters admitted");
    return redlock;
  }

  /**
   * Acquires and releases a fresh resource {@code count} times on each RedLock in turn; each
   * cycle's nanoseconds, the baseline's and the tested one's. The rounds that reached no quorum are
   * added to {@code lost}: the baseline's at 0, the tested one's at 1.
   */
  private static long[][] cycles(
      RedLock baseline, RedLock tested, String prefix, int count, int[] lost) {
    long[][] took = new long[2][count];
    for (int i = 0; i < count; i++) {
      took[0][i] = timedRound(baseline, prefix + "-a" + i, "baseline", lost, 0);
      took[1][i] = timedRound(tested, prefix + "-b" + i, "tested", lost, 1);
    }
    return took;
  }

  /**
   * One acquire and release, timed. A round that reached no quorum is timed too (it took at least
   * the node timeout, so it lands in the slow tail the p99 compares) and counted: on two loaded
   * cores a stall of the whole machine times out every master of either side now and then (seen
   * once: the four healthy masters of the tested side, all at 100.1 ms), which is no failure of the
   * masters under test; a hostile master that delayed the others would lose many.
   */
  private static long timedRound(
      RedLock redlock, String resource, String side, int[] lost, int index) {
    long start = System.nanoTime();
    try {
      redlock.tryAcquire(resource, TTL).ifPresent(Lease::close);
    } catch (QuorumUnavailableException e) {
      lost[index]++;
      System.out.println("ISOLATION " + side + " round failed: " + e.getMessage());
    }
    return System.nanoTime() - start;
  }

  /** Acquires and releases a fresh resource {@code count} times; each cycle's nanoseconds. */
  private static long[] cycles(RedLock redlock, String prefix, int count) {
    long[] took = new long[count];
    for (int i = 0; i < count; i++) {
      long start = System.nanoTime();
      grant(redlock, prefix + ":" + i);
      took[i] = System.nanoTime() - start;
    }
    return took;
  }

  private static void grant(RedLock redlock, String resource) {
    Optional<Lease> lease = redlock.tryAcquire(resource, TTL);
    assertTrue(lease.isPresent(), () -> resource + " was granted");
    lease.get().close();
  }

  private static long[] concat(long[] a, long[] b) {
    long[] all = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return all;
  }

  private static long percentile(long[] values, int percent) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[Math.min(sorted.length - 1, sorted.length * percent / 100)];
  }

  /**
   * The heap in use after a full collection: what is retained. (Runtime rather than the
   * MemoryMXBean, whose module the tests, patched into dev.redlock, do not read.)
   */
  private static long usedHeapAfterGc() {
    Runtime runtime = Runtime.getRuntime();
    System.gc();
    System.gc();
    return runtime.totalMemory() - runtime.freeMemory();
  }
}
