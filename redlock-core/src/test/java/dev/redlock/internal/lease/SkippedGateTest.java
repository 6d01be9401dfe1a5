package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.lease.QuorumRound.Tally;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.ForwardingNodeClient;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.Vote;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A gate the round may not ask (its breaker open, or an unfit master kept from voting) is no vote:
 * the masters behind it must make the quorum alone, so the round probes those it would otherwise
 * skip, as an ungated round does.
 */
class SkippedGateTest {

  /** A master the round may not ask: its permission refused, its probe {@code probe}. */
  private static final class Refusing extends ForwardingNodeClient {
    private final boolean probed;

    Refusing(NodeClient delegate, boolean probed) {
      super(delegate);
      this.probed = probed;
    }

    @Override
    public boolean permits() {
      return false;
    }

    @Override
    public NodeUnavailableException skipped() {
      return new NodeUnavailableException("skipped");
    }

    @Override
    public NodeClient probe() {
      return probed ? delegate : this;
    }

    @Override
    public <R> java.util.concurrent.CompletableFuture<R> send(Command<R> command) {
      return probed || command.kind() != Command.Kind.ACQUIRE
          ? delegate.send(command)
          : java.util.concurrent.CompletableFuture.failedFuture(skipped());
    }
  }

  @Test
  void aSkippedGateLeavesTheOthersToMakeTheQuorumAndTheyAreProbed() {
    FakeTicker ticker = new FakeTicker();
    List<FakeNode> fakes = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      fakes.add(new FakeNode(ticker));
    }
    List<String> names = List.of("a:1", "b:2", "c:3");
    byte[] key = "r".getBytes(StandardCharsets.UTF_8);
    int gate = FakeMasters.of(fakes, names, ticker).gateOf(key);
    int open = (gate + 1) % 3; // its breaker open: skipped unless the round needs it
    List<NodeClient> clients = new ArrayList<>(fakes);
    clients.set(gate, new Refusing(fakes.get(gate), false));
    clients.set(open, new Refusing(fakes.get(open), true));
    Masters masters = FakeMasters.of(clients, names, ticker);
    assertEquals(gate, masters.gateOf(key), "the refusing gate is still the key's gate");
    byte[] token = "t".getBytes(StandardCharsets.UTF_8);

    Tally tally =
        masters.vote(
            (node, i) -> node.send(new Command.Acquire(LockKey.of(key), token, 1000, false, 0)),
            gate,
            TimeUnit.MILLISECONDS.toNanos(10));

    assertEquals(Vote.FAILED, tally.outcomes().get(gate).vote());
    assertEquals(Vote.GRANTED, tally.outcomes().get(open).vote(), "the open master was probed");
    assertTrue(tally.reachedQuorum(), tally.outcomes().toString());
    assertEquals(0, fakes.get(gate).received().size(), "the gate was asked");
  }
}
