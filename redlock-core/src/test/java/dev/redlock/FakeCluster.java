package dev.redlock;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Scripted masters on a fake clock, and a RedLock builder wired to them. */
final class FakeCluster {

  final FakeTicker ticker = new FakeTicker();
  final List<FakeNode> nodes = new ArrayList<>();

  /** Scripts each master as it is created, before the RedLock uses it (for the first preflight). */
  volatile java.util.function.Consumer<FakeNode> beforeBuild = node -> {};

  /**
   * A builder for {@code n} fake masters named {@code 127.0.0.1:7000} and up, with a 20 ms node
   * timeout, on the fake clock. The masters exist once the RedLock is built.
   */
  RedLockBuilder builder(int n) {
    RedLockBuilder builder =
        RedLock.builder()
            .nodeTimeout(Duration.ofMillis(20))
            .ticker(ticker)
            .nodeClients(
                (address, index, timeout, t) -> {
                  FakeNode node = new FakeNode(ticker);
                  nodes.add(node);
                  beforeBuild.accept(node);
                  return node;
                });
    for (int i = 0; i < n; i++) {
      builder.node("redis://127.0.0.1:" + (7000 + i));
    }
    return builder;
  }
}
