package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.drill.Flags.UsageException;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The command-line skeleton the drill and the benchmark share: parse the options, print the usage
 * for {@code --help}, turn a bad command line into exit code {@value #EXIT_USAGE} with one line
 * saying why, run the program, and turn what it throws into exit code {@value #EXIT_FAILED} with
 * one line saying why. Also the pieces of a command line both programs have ({@code --nodes},
 * {@code --admit-fresh-nodes}) and what both say about the restart guard.
 *
 * <p>Immutable and thread-safe.
 */
final class Harness {

  /** The program ran (the drill passed, the benchmark measured). */
  static final int EXIT_OK = 0;

  /** The program ran and failed, or could not run. */
  static final int EXIT_FAILED = 1;

  /** The command line was bad. */
  static final int EXIT_USAGE = 2;

  /** The switch that admits the masters given by {@code --nodes} although they look fresh. */
  static final String ADMIT_FRESH_NODES = "admit-fresh-nodes";

  /** What a program makes of its parsed options. */
  @FunctionalInterface
  interface Parser<C> {
    C parse(Flags flags) throws UsageException;
  }

  /** What a program does with its configuration: returns the exit code. */
  @FunctionalInterface
  interface Body<C> {
    int run(C config) throws Exception;
  }

  private final String name;
  private final String failurePrefix;
  private final String usage;
  private final Set<String> flags;
  private final Set<String> switches;

  /**
   * A program's command line.
   *
   * @param name the program's name at the start of a usage error, e.g. {@code "drill"}
   * @param failurePrefix what starts the line for a failure, e.g. {@code "DRILL FAILED: "}
   * @param usage the text {@code --help} prints
   * @param flags the options that take a value, without the leading dashes
   * @param switches the options that take none
   */
  Harness(
      String name, String failurePrefix, String usage, Set<String> flags, Set<String> switches) {
    this.name = requireNonNull(name, "name");
    this.failurePrefix = requireNonNull(failurePrefix, "failurePrefix");
    this.usage = requireNonNull(usage, "usage");
    this.flags = Set.copyOf(flags);
    this.switches = Set.copyOf(switches);
  }

  /**
   * Parses {@code args}, runs {@code body} and returns the exit code: {@value #EXIT_OK} after
   * {@code --help}, {@value #EXIT_USAGE} for a bad command line, {@value #EXIT_FAILED} if {@code
   * body} throws, else what {@code body} returned. Every line goes to {@code out}.
   */
  <C> int run(String[] args, PrintStream out, Parser<C> parser, Body<C> body) {
    requireNonNull(args, "args");
    requireNonNull(out, "out");
    C config;
    try {
      Flags parsed = Flags.parse(args, flags, switches);
      if (parsed.help()) {
        out.print(usage);
        return EXIT_OK;
      }
      config = parser.parse(parsed);
    } catch (UsageException e) {
      out.println(name + ": " + e.getMessage());
      out.println("Run with --help to see the options.");
      return EXIT_USAGE;
    }
    try {
      return body.run(config);
    } catch (CannotRun e) {
      out.println(failurePrefix + e.getMessage());
      return EXIT_FAILED;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      out.println(name + " interrupted");
      return EXIT_FAILED;
    } catch (Exception e) {
      // Startup problems (no redis-server, unreachable masters) end here, after cleanup.
      out.println(failurePrefix + e);
      return EXIT_FAILED;
    }
  }

  /** Flushes standard output and ends the JVM with {@code code}; for a program's {@code main}. */
  static void exit(int code) {
    System.out.flush();
    System.exit(code);
  }

  /**
   * Returns {@code --nodes}, checked as RedLock checks them (URIs, no master given twice) without
   * connecting; empty if absent.
   *
   * @throws UsageException if RedLock would refuse the list
   */
  static List<String> nodes(Flags flags) throws UsageException {
    List<String> nodes = flags.list("nodes");
    try {
      RedLock.builder().nodes(nodes);
    } catch (IllegalArgumentException e) {
      throw new UsageException("--nodes: " + e.getMessage());
    }
    return nodes;
  }

  /** What to do about masters that answered RESTARTED in {@code rounds} rounds. */
  static String restartedHint(long rounds) {
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
  static final class CannotRun extends Exception {
    private static final long serialVersionUID = 1L;

    CannotRun(String message) {
      super(message);
    }
  }
}
