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

  /**
   * Whether the command certainly left nothing on {@code node}: it was never sent (behind a gate
   * that refused), or the master answered that the key was another's or gone (TAKEN, GONE), which
   * an acquire sets nothing on. Never for a master that granted, has not answered (or timed out),
   * failed, or lost the command in flight: the key may be there.
   */
  boolean leftNothing(int node);

  /** Whether the command was written and then lost unanswered with its connection. */
  boolean lostInFlight(int node);
}
