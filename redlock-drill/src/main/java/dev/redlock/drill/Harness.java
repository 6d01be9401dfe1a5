package dev.redlock.drill;

import dev.redlock.RedLock;
import java.util.Locale;

/**
 * What the drill and the benchmark (redlock-benchmark) share about running as programs: the exit
 * codes, the switch that admits {@code --nodes} masters and what both say about the restart guard,
 * and the exception for a run that cannot be made.
 *
 * <p>Immutable and thread-safe.
 */
public final class Harness {

  /** The program ran (the drill passed, the benchmark measured). */
  public static final int EXIT_OK = 0;

  /** The program ran and failed, or could not run. */
  public static final int EXIT_FAILED = 1;

  /** The command line was bad. */
  public static final int EXIT_USAGE = 2;

  /** The switch that admits the masters given by {@code --nodes} although they look fresh. */
  public static final String ADMIT_FRESH_NODES = "admit-fresh-nodes";

  /** Flushes standard output and ends the JVM with {@code code}; for a program's {@code main}. */
  public static void exit(int code) {
    System.out.flush();
    System.exit(code);
  }

  /** What to do about masters that answered RESTARTED in {@code rounds} rounds. */
  public static String restartedHint(long rounds) {
    long maxLease = RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds();
    return String.format(
        Locale.ROOT,
        """
        Hint: in %,d rounds some masters answered RESTARTED: they restarted, or their dataset was
          flushed, less than maxLeaseTime (%d s, stretched for clock drift) ago, so the restart
          guard did not count their votes (each outcome's detail says which and for how long). A
          brand-new master looks exactly like one that restarted and lost keys. If these masters
          are new, or none of them lost a lock it held within the last %d s, admit them: run again
          with --%s. Otherwise they vote again once they have been up that long.""",
        rounds,
        maxLease,
        maxLease,
        ADMIT_FRESH_NODES);
  }

  /** The program cannot do what it should; the message says why, for the user. */
  public static final class CannotRun extends Exception {
    private static final long serialVersionUID = 1L;

    /**
     * A run that cannot be made.
     *
     * @param message why, for the user
     */
    public CannotRun(String message) {
      super(message);
    }
  }
}
