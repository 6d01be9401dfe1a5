/**
 * Internal, not exported: the transports, behind the {@link
 * dev.redlock.internal.transport.NodeClient} port. Everything that speaks RESP or opens a
 * connection: the command codec ({@link dev.redlock.internal.transport.NodeCommand}, {@link
 * dev.redlock.internal.transport.Resp}, the Lua scripts), the per-master pipeline ({@link
 * dev.redlock.internal.transport.CommandPipeline}), the selector transport for {@code redis://}
 * masters ({@link dev.redlock.internal.transport.SelectorLoop}, {@link
 * dev.redlock.internal.transport.SelectorLink}), the Jedis transport for {@code rediss://} ones
 * ({@link dev.redlock.internal.transport.JedisLink}, the only class that imports Jedis), and the
 * circuit breaker ({@link dev.redlock.internal.transport.BreakerNodeClient}, the only one that
 * imports Resilience4j).
 *
 * <p>The lowest layer: imports nothing else of the library. What it reports upward is its own
 * ({@link dev.redlock.internal.transport.Vote}, {@link
 * dev.redlock.internal.transport.BreakerState}, {@link
 * dev.redlock.internal.transport.AwaitedRound}).
 */
package dev.redlock.internal.transport;
