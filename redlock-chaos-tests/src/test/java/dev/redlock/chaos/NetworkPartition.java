package dev.redlock.chaos;

import dev.redlock.NodeOutcome;
import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;

/**
 * Three ways to cut one master off through Toxiproxy, and what a RedLock round sees from a master
 * cut off that way. {@link ChaosCluster#heal()} undoes each.
 */
enum NetworkPartition {
  /**
   * The proxy is disabled: its listener closes and so do its live connections, so the client's
   * connection drops and reconnecting is refused.
   */
  PROXY_DISABLED(NodeOutcome.Status.FAILED) {
    @Override
    void apply(Proxy proxy) throws IOException {
      proxy.disable();
    }
  },

  /**
   * A {@code timeout} toxic with timeout 0 on both streams: connections stay open and every byte is
   * dropped, so the client waits for replies that never come.
   */
  BLACK_HOLE(NodeOutcome.Status.TIMED_OUT) {
    @Override
    void apply(Proxy proxy) throws IOException {
      proxy.toxics().timeout("partition-up", ToxicDirection.UPSTREAM, 0);
      proxy.toxics().timeout("partition-down", ToxicDirection.DOWNSTREAM, 0);
    }
  },

  /**
   * A {@code bandwidth} toxic with rate 0 on both streams (what Testcontainers calls a cut
   * connection): bytes are held, not dropped, and flow again on heal.
   */
  ZERO_BANDWIDTH(NodeOutcome.Status.TIMED_OUT) {
    @Override
    void apply(Proxy proxy) throws IOException {
      proxy.toxics().bandwidth("partition-up", ToxicDirection.UPSTREAM, 0);
      proxy.toxics().bandwidth("partition-down", ToxicDirection.DOWNSTREAM, 0);
    }
  };

  private final NodeOutcome.Status seenAs;

  NetworkPartition(NodeOutcome.Status seenAs) {
    this.seenAs = seenAs;
  }

  /** Cuts the master behind {@code proxy} off. */
  abstract void apply(Proxy proxy) throws IOException;

  /** Cuts off the masters {@code nodes} of {@code cluster}. */
  void apply(ChaosCluster cluster, int... nodes) throws IOException {
    for (int node : nodes) {
      apply(cluster.proxy(node));
    }
  }

  /** What a round reports for a master cut off this way, on a connection opened before the cut. */
  NodeOutcome.Status seenAs() {
    return seenAs;
  }
}
