/**
 * RedLock for Java: a Redlock multi-master quorum lock.
 *
 * <p>Exports only {@code dev.redlock}; every other type is internal to the module.
 */
module dev.redlock {
  requires redis.clients.jedis;
  requires org.slf4j;

  exports dev.redlock;
}
