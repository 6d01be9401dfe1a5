/**
 * Internal, not exported: the quorum round and the lease lifecycle. {@link
 * dev.redlock.internal.lease.Coordinator} runs an acquisition top to bottom (token, vote, validity,
 * lease or release-all, retries, the fencing token); {@link dev.redlock.internal.lease.Masters}
 * runs one round on the N masters and {@link dev.redlock.internal.lease.QuorumRound} counts it;
 * {@link dev.redlock.internal.lease.Leases} moves each {@link dev.redlock.internal.lease.Grant}
 * through extend, release and loss; {@link dev.redlock.internal.lease.Renewer} and {@link
 * dev.redlock.internal.lease.Releases} follow what outlives a call; {@link
 * dev.redlock.internal.lease.AsyncLeases} runs the async API and every retry's pause; {@link
 * dev.redlock.internal.lease.Events} tells the {@link dev.redlock.internal.lease.Listener}.
 *
 * <p>Imports the preflight (for {@code inspect()}) and the transport, never the API: what the API
 * shows is reported here in types of this package's own ({@link
 * dev.redlock.internal.lease.Outcome}, {@link dev.redlock.internal.lease.Attempt}, {@link
 * dev.redlock.internal.lease.Grant.FenceFailure}), which the API converts.
 */
package dev.redlock.internal.lease;
