package dev.redlock.internal.lease;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NodeClient;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.junit.jupiter.api.Test;

/**
 * A set waiter's naming ({@code Turn}'s one value replaced by compare-and-set) is linearizable: the
 * notice link's thread names or notices it while the waiter's thread takes the naming for a round
 * and decides it, and every interleaving Lincheck's model checker explores ends as some sequential
 * order of those calls would. The state was bit-packed before issue 32; this is its lock-free part.
 */
public class TurnNamingLincheckTest {

  private static final List<String> NAMES = List.of("a:1", "b:2", "c:3");

  private final Turn turn;

  public TurnNamingLincheckTest() {
    FakeTicker ticker = new FakeTicker();
    List<NodeClient> nodes = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      nodes.add(new FakeNode(ticker));
    }
    Masters masters = FakeMasters.of(nodes, NAMES, ticker);
    LockKey.Set set =
        LockKey.of(
            List.of("r".getBytes(StandardCharsets.UTF_8), "s".getBytes(StandardCharsets.UTF_8)));
    turn = new Turn(masters, set, 1_000_000, true, "0123456789abcdef");
  }

  /** The notice link names the waiter (a release named it first in the queue). */
  @Operation
  public void named() {
    turn.named();
  }

  /** The notice link heard a plain release of one of the set's resources. */
  @Operation
  public void noticed() {
    turn.noticed();
  }

  /** The waiter's thread takes the naming for its next round. */
  @Operation
  public boolean takeNamed() {
    return turn.takeNamed();
  }

  /** The waiter's thread asks whether its last round was a named one. */
  @Operation
  public boolean wasNamed() {
    return turn.wasNamed();
  }

  @Test
  void theNamingIsLinearizable() {
    new ModelCheckingOptions().iterations(50).invocationsPerIteration(200).check(getClass());
  }
}
