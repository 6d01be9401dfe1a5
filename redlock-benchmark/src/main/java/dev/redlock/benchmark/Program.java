package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.benchmark.Flags.UsageException;
import dev.redlock.drill.Harness;
import dev.redlock.drill.Harness.CannotRun;
import java.io.PrintStream;
import java.util.List;
import java.util.Set;

/**
 * The benchmark's command-line skeleton: parse the options, print the usage for {@code --help},
 * turn a bad command line into exit code {@value Harness#EXIT_USAGE} with one line saying why, run
 * the program, and turn what it throws into exit code {@value Harness#EXIT_FAILED} with one line
 * saying why. (The drill's command line is picocli's: redlock-drill's DrillCommand.)
 *
 * <p>Immutable and thread-safe.
 */
final class Program {

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
  Program(
      String name, String failurePrefix, String usage, Set<String> flags, Set<String> switches) {
    this.name = requireNonNull(name, "name");
    this.failurePrefix = requireNonNull(failurePrefix, "failurePrefix");
    this.usage = requireNonNull(usage, "usage");
    this.flags = Set.copyOf(flags);
    this.switches = Set.copyOf(switches);
  }

  /**
   * Parses {@code args}, runs {@code body} and returns the exit code: {@value Harness#EXIT_OK}
   * after {@code --help}, {@value Harness#EXIT_USAGE} for a bad command line, {@value
   * Harness#EXIT_FAILED} if {@code body} throws, else what {@code body} returned. Every line goes
   * to {@code out}.
   */
  <C> int run(String[] args, PrintStream out, Parser<C> parser, Body<C> body) {
    requireNonNull(args, "args");
    requireNonNull(out, "out");
    C config;
    try {
      Flags parsed = Flags.parse(args, flags, switches);
      if (parsed.help()) {
        out.print(usage);
        return Harness.EXIT_OK;
      }
      config = parser.parse(parsed);
    } catch (UsageException e) {
      out.println(name + ": " + e.getMessage());
      out.println("Run with --help to see the options.");
      return Harness.EXIT_USAGE;
    }
    try {
      return body.run(config);
    } catch (CannotRun e) {
      out.println(failurePrefix + e.getMessage());
      return Harness.EXIT_FAILED;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      out.println(name + " interrupted");
      return Harness.EXIT_FAILED;
    } catch (Exception e) {
      // Startup problems (no redis-server, unreachable masters) end here, after cleanup.
      out.println(failurePrefix + e);
      return Harness.EXIT_FAILED;
    }
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
}
