/**
 * A JUnit 5 extension that runs RedLock's masters for an application's own tests.
 *
 * <p>Exports only {@code dev.redlock.junit5}; its public types use RedLock's and JUnit Jupiter's,
 * so both are read transitively.
 */
module dev.redlock.junit5 {
  requires transitive dev.redlock;
  requires transitive org.junit.jupiter.api;
  requires org.slf4j;

  exports dev.redlock.junit5;
}
