package dev.redlock.internal.lease;

import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.Ticker;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Masters over clients a test made (fakes, mostly): one datacenter, node timeouts of 50 ms. */
final class FakeMasters {

  private FakeMasters() {}

  static Masters of(List<? extends NodeClient> nodes, List<String> names, Ticker ticker) {
    long[] timeouts = new long[nodes.size()];
    Arrays.fill(timeouts, TimeUnit.MILLISECONDS.toNanos(50));
    return new Masters(
        List.copyOf(nodes), names, Collections.nCopies(nodes.size(), ""), timeouts, ticker, null);
  }
}
