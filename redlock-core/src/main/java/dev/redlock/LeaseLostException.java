package dev.redlock;

/**
 * Thrown by {@link Lease#ensureValid()} when the lease can no longer be trusted: it expired, an
 * extend or automatic renewal failed, or it was released. Work protected by the lease must stop.
 */
public final class LeaseLostException extends IllegalStateException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates an exception; public so that integrations built on a lease (a lock registry that steps
   * down before its lease runs out, say) can signal a loss with the same type.
   *
   * @param message what was lost and why
   */
  public LeaseLostException(String message) {
    super(message);
  }
}
