/**
 * RedLock for Java: a Redlock multi-master quorum lock.
 *
 * <p>Exports only {@code dev.redlock}; every other type is internal to the module.
 */
module dev.redlock {
  requires redis.clients.jedis;
  requires org.slf4j;
  requires io.github.resilience4j.circuitbreaker;
  requires io.github.resilience4j.core;

  exports dev.redlock;
}
