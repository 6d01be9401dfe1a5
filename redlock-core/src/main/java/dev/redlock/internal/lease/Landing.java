package dev.redlock.internal.lease;

/**
 * What a round's command may have left on each master, learned as its answers come, also after the
 * round was decided: a release uses the acquire's to know where the key may be, and whether an
 * acquire lost in flight may still run ({@link Releases}).
 */
interface Landing {

  /**
   * Whether the command may have run, or may still run, on {@code node}: it answered GRANTED (or
   * RESTARTED: a young master runs the SET all the same), has not answered yet, or was written and
   * lost with its connection. Not if it answered anything else, or failed before it was written.
   */
  boolean mayHaveRun(int node);

  /** Whether the command was written and then lost unanswered with its connection. */
  boolean lostInFlight(int node);
}
