/**
 * RedLock for Java's ShedLock provider.
 *
 * <p>Exports only {@code dev.redlock.shedlock}. Both modules it reads appear in its public
 * signatures ({@code RedLock}, ShedLock's {@code LockProvider}), so both are read transitively.
 * shedlock-core is named {@code net.javacrumbs.shedlock.core} in 6.x (automatic module) and 7.x
 * (explicit module) alike.
 */
module dev.redlock.shedlock {
  requires transitive dev.redlock;
  requires transitive net.javacrumbs.shedlock.core;

  exports dev.redlock.shedlock;
}
