package dev.redlock;

/**
 * Thrown by {@link Lease#ensureValid()} when the lease can no longer be trusted: it expired, an
 * extend or automatic renewal failed, or it was released. Work protected by the lease must stop.
 */
public final class LeaseLostException extends IllegalStateException {

  private static final long serialVersionUID = 1L;

  LeaseLostException(String message) {
    super(message);
  }
}
