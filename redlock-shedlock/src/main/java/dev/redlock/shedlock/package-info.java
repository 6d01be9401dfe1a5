/**
 * A <a href="https://github.com/lukas-krecan/ShedLock">ShedLock</a> lock provider on RedLock:
 * {@link dev.redlock.shedlock.RedLockProvider} locks scheduled tasks on a quorum of independent
 * Redis masters.
 *
 * <p><b>Null policy.</b> No parameter of any public method in this package accepts {@code null}; a
 * {@code null} argument throws {@link NullPointerException} naming the argument. No public method
 * returns {@code null}.
 */
package dev.redlock.shedlock;
