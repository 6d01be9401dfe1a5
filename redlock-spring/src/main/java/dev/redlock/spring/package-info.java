/**
 * Spring Integration over RedLock: {@link dev.redlock.spring.RedLockRegistry} is a {@code
 * LockRegistry} whose locks are quorum locks on N independent Redis masters, for Spring's {@code
 * LockRegistryLeaderInitiator} and any other code that takes a {@code LockRegistry}.
 *
 * <p><b>Null policy.</b> No parameter of any public method in this package accepts {@code null}
 * unless its documentation says so; a {@code null} argument throws {@link NullPointerException}
 * naming the argument. No public method returns {@code null}.
 */
package dev.redlock.spring;
