/**
 * The drill, a command-line program over the public RedLock API (also redlock-cli's {@code drill}).
 *
 * <p>{@link dev.redlock.drill.Drill} (the README's first command) makes workers, each with its own
 * {@link dev.redlock.RedLock}, fight over one resource and checks that no two leases overlapped and
 * no update of the guarded counter was lost. The benchmark (module redlock-benchmark, same package
 * on the class path) prints latency and throughput figures next to a hand-written baseline that
 * speaks RESP over plain sockets; it uses the drill's local masters, percentiles and rows.
 *
 * <p><b>Null policy.</b> No parameter of any method in this package accepts {@code null}; a {@code
 * null} argument throws {@link NullPointerException}. No method returns {@code null}.
 */
package dev.redlock.drill;
