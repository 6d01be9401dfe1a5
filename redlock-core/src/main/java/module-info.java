/**
 * RedLock for Java: a Redlock multi-master quorum lock.
 *
 * <p>Exports only {@code dev.redlock}, the API. The machinery sits in packages the module does not
 * export, one per layer, each importing only those below it (a lower one tells a higher one through
 * a callback interface or a value type of its own): {@code dev.redlock.internal.lease} (the quorum
 * round, the lease lifecycle, renewals, releases, the event thread), {@code
 * dev.redlock.internal.preflight} (whether a master is fit for Redlock) and {@code
 * dev.redlock.internal.transport} (the node clients behind the {@code NodeClient} port: RESP, the
 * selector, Jedis, the circuit breakers). None of their types appears in the API.
 */
module dev.redlock {
  requires redis.clients.jedis;
  requires org.slf4j;
  requires io.github.resilience4j.circuitbreaker;
  requires io.github.resilience4j.core;

  exports dev.redlock;
}
