/**
 * Local {@code redis-server} processes for tests, chaos tests and drills.
 *
 * <p>{@link dev.redlock.testkit.RedisProcess} starts one server on a loopback port and can kill,
 * stop, restart, pause and resume it; {@link dev.redlock.testkit.RedisCluster} holds N independent
 * masters; {@link dev.redlock.testkit.RedisClusterExtension} gives a JUnit 5 test class one
 * cluster, reset before each test; {@link dev.redlock.testkit.RedisAdmin} is a small synchronous
 * client for assertions; {@link dev.redlock.testkit.Poll} waits for a condition with a deadline.
 *
 * <p>{@link dev.redlock.testkit.HostileMaster} is a fake master that completes the handshake and
 * then misbehaves (floods, sends garbage, dribbles, announces a huge reply, resets, streams valid
 * replies without end), in this JVM or, through {@link dev.redlock.testkit.HostileMasterProcess},
 * in a child process of its own.
 *
 * <p><b>Null policy.</b> No parameter of any public method in this package accepts {@code null}
 * unless its documentation says so; a {@code null} argument throws {@link NullPointerException}
 * naming the argument. No public method returns {@code null} unless its documentation says so.
 */
package dev.redlock.testkit;
