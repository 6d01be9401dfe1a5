package dev.redlock.cli;

import dev.redlock.Inspection;
import dev.redlock.RedLock;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code redlock inspect}: the deployment preflight, as {@link RedLock#inspect()} finds it. */
@Command(
    name = "inspect",
    sortOptions = false,
    header = "Print the preflight table: is each master fit for Redlock?",
    description =
        "Checks each master and prints one line per check, PASS, WARN, FAIL or UNKNOWN, with"
            + " what was found: reachable and version, role (a replica FAILs), cluster mode,"
            + " eviction policy, persistence, uptime against maxLeaseTime (the restart guard),"
            + " clock offset; with --datacenter labels, which single-datacenter losses leave a"
            + " quorum. Read-only: changes nothing on any master.",
    footerHeading = "%nExit codes:%n",
    footer = {
      "  0  every check PASSed",
      "  1  some check FAILed: a master is unfit (or an error)",
      "  2  bad command line",
      "  3  nothing FAILed, but a check is WARN or UNKNOWN: read its line"
    })
final class InspectCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Mixin private Masters masters;

  @Option(
      names = {"-h", "--help"},
      usageHelp = true,
      description = "Show this help message and exit.")
  private boolean help;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    Inspection inspection;
    try (RedLock redLock = masters.open()) {
      inspection = redLock.inspect();
    }
    out.print(inspection);
    out.flush();
    return switch (inspection.verdict()) {
      case PASS -> RedLockCli.EXIT_OK;
      case FAIL -> RedLockCli.EXIT_FAILED;
      case WARN, UNKNOWN -> RedLockCli.EXIT_ATTENTION;
    };
  }
}
