package dev.redlock.internal.lease;

import dev.redlock.internal.transport.NodeAddress;
import dev.redlock.internal.transport.NoticeLink;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Hears nothing: for a notice link whose own events a test keeps from the wake-ups, telling them by
 * hand what the link would.
 */
final class DeafListener implements NoticeLink.Listener {

  /**
   * Adds {@code count} notice links that never connect (port 1 refuses: each retries in the
   * background and tells no one) to {@code links}, and returns it: the wake-ups' links in a test
   * that tells them by hand what a link would.
   */
  static List<dev.redlock.internal.transport.Subscriber> deafLinks(
      int count, List<dev.redlock.internal.transport.Subscriber> links) {
    for (int i = 0; i < count; i++) {
      links.add(
          new NoticeLink(
              NodeAddress.parse("redis://127.0.0.1:1"),
              TimeUnit.SECONDS.toNanos(1),
              null,
              new DeafListener()));
    }
    return links;
  }

  /** As {@link #deafLinks(int, List)}, in a new list. */
  static List<dev.redlock.internal.transport.Subscriber> deafLinks(int count) {
    return deafLinks(count, new ArrayList<>());
  }

  @Override
  public void notice(String key, String release) {}

  @Override
  public void subscribed(String key, boolean afterReset) {}

  @Override
  public void lost(dev.redlock.internal.transport.Subscriber link) {}
}
