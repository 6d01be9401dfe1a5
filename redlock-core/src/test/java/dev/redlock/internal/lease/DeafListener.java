package dev.redlock.internal.lease;

import dev.redlock.internal.transport.NoticeLink;

/**
 * Hears nothing: for a notice link whose own events a test keeps from the wake-ups, telling them by
 * hand what the link would.
 */
final class DeafListener implements NoticeLink.Listener {
  @Override
  public void notice(String key, String release) {}

  @Override
  public void subscribed(String key, boolean afterReset) {}

  @Override
  public void lost(NoticeLink link) {}
}
