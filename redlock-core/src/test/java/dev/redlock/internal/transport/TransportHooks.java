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

  /**
   * A master's answer to a release script returning {@code code}: 1 deleted, 2 deleted and heard by
   * a waiting client, 3 deleted with clients listening (the release after the gate), 0 another's,
   * -1 gone.
   */
  public static NodeReply releaseReply(long code) {
    return NodeReply.ofScriptCode(code);
  }

  /** The keys whose channels {@code link} is asked to subscribe (a client's channel: "@..."). */
  public static java.util.Set<String> wanted(NoticeLink link) {
    return link.wanted();
  }

  /**
   * A failure of a command written and then lost with its connection: the master may have run it.
   */
  public static NodeUnavailableException lostInFlight(String message) {
    return new NodeUnavailableException(message, true);
  }
}
