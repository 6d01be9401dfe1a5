package dev.redlock.internal.transport;

/** What tests outside this package need of its package-private parts: a public fixture. */
public final class TransportHooks {

  private TransportHooks() {}

  /**
   * How long a command may wait for its reply before its connection is dropped, for a master with
   * this node timeout.
   */
  public static long stallNanos(long nodeTimeoutNanos) {
    return CommandPipeline.stallNanos(nodeTimeoutNanos);
  }
}
