package dev.redlock;

import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Tells the user's {@link RedLockListener}; a listener that throws is logged, never propagated. */
final class Events {

  private static final Logger log = LoggerFactory.getLogger(Events.class);
  private static final RedLockListener NONE = new RedLockListener() {};

  private final RedLockListener listener;

  Events(RedLockListener listener) {
    this.listener = listener;
  }

  /** No listener: nothing to tell. */
  static RedLockListener none() {
    return NONE;
  }

  /** Whether anyone listens; callers skip building an event (and its lambda) when not. */
  boolean enabled() {
    return listener != NONE;
  }

  void emit(Consumer<RedLockListener> event) {
    if (listener == NONE) {
      return;
    }
    try {
      event.accept(listener);
    } catch (RuntimeException | LinkageError | AssertionError e) {
      log.warn("RedLockListener {} threw; ignored", listener, e);
    }
  }
}
