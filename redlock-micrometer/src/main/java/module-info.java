/**
 * Micrometer metrics for RedLock for Java.
 *
 * <p>Exports only {@code dev.redlock.micrometer}; its public types use RedLock's and Micrometer's,
 * so both are read transitively. Micrometer is an automatic module ({@code micrometer.core}).
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.redlock.micrometer {
  requires transitive dev.redlock;
  requires transitive micrometer.core;
  requires org.slf4j;

  exports dev.redlock.micrometer;
}
