/**
 * The drill and the benchmark: two command-line programs over the public RedLock API.
 *
 * <p>{@link dev.redlock.drill.Drill} (the README's first command) makes workers, each with its own
 * {@link dev.redlock.RedLock}, fight over one resource and checks that no two leases overlapped and
 * no update of the guarded counter was lost. {@link dev.redlock.drill.Benchmark} prints latency and
 * throughput figures next to a hand-written baseline that speaks RESP over plain sockets.
 *
 * <p><b>Null policy.</b> No parameter of any method in this package accepts {@code null}; a {@code
 * null} argument throws {@link NullPointerException}. No method returns {@code null}.
 */
package dev.redlock.drill;
