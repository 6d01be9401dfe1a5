/**
 * A JUnit 5 extension for an application's own tests of code that takes leases: {@link
 * dev.redlock.junit5.RedLockMasters} starts N local {@code redis-server} masters on free loopback
 * ports, admits them and injects a ready {@link dev.redlock.RedLock}; each {@link
 * dev.redlock.junit5.Master} can be stopped, restarted or paused to test failure handling.
 *
 * <p><b>Why this module starts the servers itself.</b> The project's own test kit ({@code
 * redlock-testkit}) is not published: it carries a dozen public classes for the project's chaos
 * tests (fault proxies, clock skew through {@code faketime}, hostile servers, TLS certificates)
 * that would become an API to keep, and it depends on embedded-redis, a 12 MB jar of Redis binaries
 * that also declares Jedis 3 (the same packages as RedLock's Jedis 8). Starting {@code
 * redis-server} as a child process takes a few hundred lines, so this module holds its own and
 * depends only on RedLock and the JUnit Jupiter API.
 *
 * <p><b>Null policy.</b> No parameter of any public method in this package accepts {@code null}; a
 * {@code null} argument throws {@link NullPointerException} naming the argument. No public method
 * returns {@code null}.
 */
package dev.redlock.junit5;
