/**
 * The RedLock API: {@link dev.redlock.RedLock} acquires leases on a resource from a quorum of
 * independent Redis masters; {@link dev.redlock.Lease} is the handle on one acquisition.
 *
 * <p><b>Null policy.</b> No parameter of any public method in this package accepts {@code null}
 * unless its documentation says so; a {@code null} argument throws {@link NullPointerException}
 * naming the argument. No public method returns {@code null}.
 */
package dev.redlock;
