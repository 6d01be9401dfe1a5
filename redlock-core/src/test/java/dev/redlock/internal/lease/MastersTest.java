package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.lease.QuorumRound.Tally;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.ForwardingNodeClient;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.Ticker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The masters as one, on scripted masters: which master is a key's gate and which one its waiters
 * hear next; the gated round, blocking and asynchronous, whichever master the gate is; and the
 * close, which lets the commands already sent be answered for at most the node timeout (50 ms).
 */
class MastersTest {

  private static final List<String> NAMES = List.of("a:1", "b:2", "c:3", "d:4", "e:5");
  private static final byte[] TOKEN = "t".getBytes(StandardCharsets.UTF_8);

  private final FakeTicker ticker = new FakeTicker();
  private final List<FakeNode> fakes = new ArrayList<>();
  private final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1);

  @AfterEach
  void stopTheTimer() {
    timer.shutdownNow();
  }

  private Masters masters(int n, Ticker clock) {
    for (int i = 0; i < n; i++) {
      fakes.add(new FakeNode(ticker));
    }
    return FakeMasters.of(fakes, NAMES.subList(0, n), clock);
  }

  /** The first key named {@code resource-N} whose gate is master {@code gate}. */
  private static byte[] keyGatedBy(Masters masters, int gate) {
    for (int k = 0; ; k++) {
      byte[] key = ("resource-" + k).getBytes(StandardCharsets.UTF_8);
      if (masters.gateOf(key) == gate) {
        return key;
      }
    }
  }

  private static Masters.Call acquire(byte[] key) {
    return (node, i) -> node.send(new Command.Acquire(LockKey.of(key), TOKEN, 1000, false, 0));
  }

  private List<Integer> asked() {
    List<Integer> asked = new ArrayList<>();
    for (FakeNode fake : fakes) {
      asked.add(fake.received().size());
    }
    return asked;
  }

  /** {@code n} masters whose drain at the close tells {@code drainedBy} its deadline. */
  private Masters drainingInto(int n, LongConsumer drainedBy) {
    List<NodeClient> nodes = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      nodes.add(
          new ForwardingNodeClient(new FakeNode(ticker)) {
            @Override
            public void awaitDrained(long deadlineNanos) {
              drainedBy.accept(deadlineNanos);
            }
          });
    }
    return FakeMasters.of(nodes, NAMES.subList(0, n), ticker);
  }

  @Test
  void keysSpreadTheirGatesOverEveryMaster() {
    Masters masters = masters(5, ticker);
    int[] gated = new int[5];
    for (int k = 0; k < 1000; k++) {
      gated[masters.gateOf(("resource-" + k).getBytes(StandardCharsets.UTF_8))]++;
    }
    // 200 each on average; a master that is the gate of under 100 (or over 300) of 1000 keys
    // carries its waiters' queues for too few (or too many) resources.
    for (int i = 0; i < 5; i++) {
      assertTrue(gated[i] >= 100 && gated[i] <= 300, "master " + i + " gates " + gated[i]);
    }
  }

  @Test
  void aKeysReleaseGoesToItsGateAndToTheNextMasterByNameFromThreeMastersOn() {
    Masters three = masters(3, ticker);
    for (int k = 0; k < 20; k++) {
      byte[] key = ("resource-" + k).getBytes(StandardCharsets.UTF_8);
      int gate = three.gateOf(key);
      assertSame(fakes.get(gate), three.gateClient(key), "the gate's client");
      assertSame(fakes.get((gate + 1) % 3), three.fallbackClient(key), "the next by name");
    }
    fakes.clear();
    Masters two = masters(2, ticker);
    byte[] key = "r".getBytes(StandardCharsets.UTF_8);
    assertNull(two.gateClient(key), "no gate with two masters");
    assertNull(two.fallbackClient(key), "nor a next master");
  }

  @Test
  void theGateCountsAsSilentHalfItsNodeTimeoutAfterTheNextMasterAnswered() {
    Masters masters = masters(5, ticker); // node timeouts of 50 ms
    assertEquals(
        TimeUnit.MILLISECONDS.toNanos(25),
        masters.fallbackDelayNanos("r".getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void aGateAtTheFirstMasterIsAskedAloneToo() {
    Masters masters = masters(5, Ticker.system());
    byte[] key = keyGatedBy(masters, 0);
    fakes.get(0).onSet = Answer.TAKEN;
    Tally refused = masters.vote(acquire(key), 0, TimeUnit.MILLISECONDS.toNanos(10));
    assertFalse(refused.reachedQuorum(), "refused at the gate: no lease");
    assertEquals(List.of(1, 0, 0, 0, 0), asked(), "refused at the gate: no one else asked");
  }

  @Test
  void aBlockingRoundPassesASilentGateAfterTheGateWait() {
    Masters masters = masters(5, Ticker.system());
    byte[] key = keyGatedBy(masters, 2);
    fakes.get(2).onSet = Answer.HANG;
    Tally passed = masters.vote(acquire(key), 2, TimeUnit.MILLISECONDS.toNanos(5));
    assertTrue(passed.reachedQuorum(), "the four others decide without the gate");
    assertEquals(List.of(1, 1, 1, 1, 1), asked());
  }

  @Test
  void theFirstConnectIsAwaitedOnEveryMasterUntilTheDeadline() {
    List<Long> awaited = new ArrayList<>();
    List<NodeClient> nodes = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      nodes.add(
          new ForwardingNodeClient(new FakeNode(ticker)) {
            @Override
            public void awaitFirstConnect(long deadlineNanos) {
              awaited.add(deadlineNanos);
            }
          });
    }
    FakeMasters.of(nodes, NAMES.subList(0, 3), ticker).awaitFirstConnect(42);
    assertEquals(List.of(42L, 42L, 42L), awaited);
  }

  @Test
  void anAsynchronousGatedRoundAsksTheOthersOnlyOnceTheGateGranted() throws Exception {
    Masters masters = masters(5, Ticker.system());
    byte[] key = keyGatedBy(masters, 0);
    fakes.get(0).onSet = Answer.TAKEN;
    Tally refused =
        masters.voteAsync(acquire(key), timer, 0, TimeUnit.SECONDS.toNanos(10), () -> true).get();
    assertFalse(refused.reachedQuorum(), "refused at the gate: no lease");
    assertEquals(List.of(1, 0, 0, 0, 0), asked(), "refused at the gate: no one else asked");

    fakes.get(0).onSet = Answer.GRANT;
    Tally granted =
        masters.voteAsync(acquire(key), timer, 0, TimeUnit.SECONDS.toNanos(10), () -> true).get();
    assertTrue(granted.reachedQuorum());
    assertEquals(List.of(2, 1, 1, 1, 1), asked(), "granted at the gate: every other asked");
  }

  @Test
  void anAsynchronousRoundPassesASilentGateAfterTheGateWaitWhileStillWanted() throws Exception {
    Masters masters = masters(5, Ticker.system());
    byte[] key = keyGatedBy(masters, 2);
    fakes.get(2).onSet = Answer.HANG;
    Tally passed =
        masters
            .voteAsync(acquire(key), timer, 2, TimeUnit.MILLISECONDS.toNanos(5), () -> true)
            .get(5, TimeUnit.SECONDS);
    assertTrue(passed.reachedQuorum(), "the four others decide without the gate");
    assertEquals(List.of(1, 1, 1, 1, 1), asked());
  }

  @Test
  void anAsynchronousRoundNoLongerWantedAsksNoOneBehindASilentGate() throws Exception {
    Masters masters = masters(5, Ticker.system());
    byte[] key = keyGatedBy(masters, 2);
    fakes.get(2).onSet = Answer.HANG;
    Tally dropped =
        masters
            .voteAsync(acquire(key), timer, 2, TimeUnit.MILLISECONDS.toNanos(5), () -> false)
            .get(5, TimeUnit.SECONDS); // decided at the round's deadline, the node timeout
    assertFalse(dropped.reachedQuorum());
    assertEquals(List.of(0, 0, 1, 0, 0), asked(), "cancelled: only the gate was asked");
  }

  @Test
  void anAsynchronousRoundWithoutAGateAsksEveryMasterAtOnce() throws Exception {
    Masters masters = masters(5, Ticker.system());
    fakes.get(0).onSet = Answer.TAKEN;
    byte[] key = keyGatedBy(masters, 0);
    Tally tally =
        masters.voteAsync(acquire(key), timer, -1, TimeUnit.SECONDS.toNanos(10), () -> true).get();
    assertTrue(tally.reachedQuorum());
    assertEquals(List.of(1, 1, 1, 1, 1), asked());
  }

  @Test
  void aReleaseRoundOffTheCallersThreadIsDecidedByAMajority() throws Exception {
    Masters masters = masters(5, Ticker.system());
    fakes.get(3).onRelease = Answer.HANG;
    fakes.get(4).onRelease = Answer.HANG;
    byte[] key = "r".getBytes(StandardCharsets.UTF_8);
    Tally tally =
        masters
            .freedAsync((node, i) -> node.send(Command.release(LockKey.of(key), TOKEN)), timer)
            .get(5, TimeUnit.SECONDS);
    assertTrue(tally.reachedQuorum(), "three of five answered: decided without the other two");
  }

  @Test
  void theCloseLetsTheCommandsSentBeAnsweredForAtMostTheNodeTimeout() {
    AtomicLong drainedBy = new AtomicLong();
    Masters masters = drainingInto(3, drainedBy::set);
    long now = ticker.read();
    masters.close(now + TimeUnit.SECONDS.toNanos(5));
    assertEquals(
        now + TimeUnit.MILLISECONDS.toNanos(50), drainedBy.get(), "the node timeout from now");
    assertNotEquals(0, drainedBy.get());
  }

  @Test
  void aCloseDueSoonerThanTheNodeTimeoutDrainsUntilItsDeadline() {
    CompletableFuture<Long> drainedBy = new CompletableFuture<>();
    Masters masters = drainingInto(1, drainedBy::complete);
    long deadline = ticker.read() + TimeUnit.MILLISECONDS.toNanos(10);
    masters.close(deadline);
    assertEquals(deadline, drainedBy.join());
  }
}
