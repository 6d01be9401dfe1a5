package dev.redlock.internal.transport;

import java.util.function.BooleanSupplier;

/**
 * How a caller waits for a {@link CommandPipeline} to drain or to make its first attempt, if not
 * parked on the pipeline's condition: a simulation runs its events until the state it waits for
 * comes.
 */
@FunctionalInterface
interface PipelineWaits {
  /**
   * Returns once {@code done} holds, or the ticker reached {@code deadlineNanos}, or sooner (the
   * caller checks both again).
   *
   * @param done whether the state waited for came (it takes the pipeline's lock)
   * @param deadlineNanos when to stop waiting, on the pipeline's ticker
   */
  void await(BooleanSupplier done, long deadlineNanos);
}
