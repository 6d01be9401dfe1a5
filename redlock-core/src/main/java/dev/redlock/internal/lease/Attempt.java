package dev.redlock.internal.lease;

import java.util.List;

/**
 * How one acquisition attempt (or the last of a bounded wait) ended. The API turns a failed one
 * into its exceptions: {@code LockTakenException}, or {@code QuorumUnavailableException} when
 * {@code unavailable}.
 *
 * @param grant the lease granted, or null
 * @param outcomes what each master answered in the round
 * @param unavailable whether too few masters answered in time (or the round was too slow), rather
 *     than the lock being held by others; false when granted
 */
public record Attempt(Grant grant, List<Outcome> outcomes, boolean unavailable) {}
