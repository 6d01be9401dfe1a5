package dev.redlock.readme;

import dev.redlock.RedLock;
import java.util.List;

/** docs/troubleshooting.md's startup check, compiled here and run by {@link StartupCheckIT}. */
final class StartupCheckExample {

  private StartupCheckExample() {}

  static RedLock startOrRefuse(List<String> nodes) {
    // README: RequireQuorum
    RedLock redlock = RedLock.builder().nodes(nodes).build();
    try {
      // Refuse to start unless a majority of the masters can grant now: reachable, accepting
      // the password and the database, fit for Redlock, and counted by the restart guard.
      redlock.inspect().requireQuorum();
    } catch (IllegalStateException cannotGrant) {
      redlock.close();
      throw cannotGrant; // its message names each master that cannot grant, and why
    }
    // end README: RequireQuorum
    return redlock;
  }
}
