/**
 * Micrometer metrics for a {@link dev.redlock.RedLock}: {@link
 * dev.redlock.micrometer.RedLockMetrics} times its rounds, counts each master's answers and lost
 * leases, and gauges its leases, renewals and circuit breakers.
 *
 * <p><b>Null policy.</b> No parameter of any public method in this package accepts {@code null}; a
 * {@code null} argument throws {@link NullPointerException} naming the argument. No public method
 * returns {@code null}.
 */
package dev.redlock.micrometer;
