package dev.redlock.cli;

import static java.util.Objects.requireNonNull;

import dev.redlock.Inspection;
import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code redlock admit}: shows whether the restart guard counts each master's vote now, asks, and
 * admits them ({@link RedLock#admitFreshNodes()}).
 */
@Command(
    name = "admit",
    sortOptions = false,
    header = "Admit a brand-new cluster past the restart guard (asks first).",
    description = {
      "The restart guard does not count the vote of a master whose dataset or server run is younger"
          + " than the clients' maxLeaseTime, and a brand-new master looks exactly like one that"
          + " restarted and lost its locks: until admitted (or up that long) it answers RESTARTED,"
          + " and acquires fail with too few votes.",
      "",
      "Admit only a brand-new cluster, or masters none of which can have lost a lock that may"
          + " still be valid (every restart longer ago than the longest lease any client held)."
          + " The admission is of each master's server run with its dataset: it holds for every"
          + " client whatever its maxLeaseTime (raising maxLeaseTime later needs no new"
          + " admission), until the master restarts or is flushed. One operator admits, once per"
          + " server run; the applications need not call admitFreshNodes().",
      "",
      "Shows whether the restart guard counts each master's vote, and asks before admitting, unless --yes."
    },
    footerHeading = "%nExit codes:%n",
    footer = {
      "  0  every master is admitted (now, or already)",
      "  1  some master could not be admitted: unreachable, a replica, a refused",
      "     password, or an ACL that forbids INFO (or an error)",
      "  2  bad command line",
      "  3  the answer was not yes: nothing was admitted"
    })
final class AdmitCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Mixin private Masters masters;

  @Option(
      names = {"-y", "--yes"},
      description = "admit without asking (for scripts)")
  private boolean yes;

  @Option(
      names = {"-h", "--help"},
      usageHelp = true,
      description = "Show this help message and exit.")
  private boolean help;

  private final InputStream in;

  AdmitCommand(InputStream in) {
    this.in = requireNonNull(in, "in");
  }

  @Override
  public Integer call() throws IOException {
    PrintWriter out = spec.commandLine().getOut();
    try (RedLock redLock = masters.open()) {
      Inspection inspection = redLock.inspect();
      int n = inspection.masters().size();
      out.printf(
          Locale.ROOT,
          "%d masters to admit (the restart guard's horizon, maxLeaseTime: %s):%n",
          n,
          Durations.text(masters.maxLeaseTime()));
      for (Inspection.Master master : inspection.masters()) {
        out.printf(
            Locale.ROOT,
            "  %-21s %s%n",
            master.node() + (master.datacenter().isEmpty() ? "" : " (" + master.datacenter() + ")"),
            uptime(master));
      }
      if (!yes) {
        out.printf(
            Locale.ROOT,
            "Admit only a brand-new cluster, or masters none of which lost a lock it held within"
                + " the last %s.%nAdmit these %d masters? [y/N] ",
            Durations.text(masters.maxLeaseTime()),
            n);
        out.flush();
        String answer =
            new BufferedReader(new InputStreamReader(in, Charset.defaultCharset())).readLine();
        // A typed answer ends the prompt's line; a piped one does not.
        out.println();
        if (answer == null
            || !List.of("y", "yes").contains(answer.strip().toLowerCase(Locale.ROOT))) {
          out.println(
              "Nothing admitted"
                  + (answer == null ? " (no answer; --yes admits without asking)." : "."));
          return RedLockCli.EXIT_ATTENTION;
        }
      }
      List<NodeOutcome> outcomes = redLock.admitFreshNodes();
      int admitted = 0;
      for (NodeOutcome outcome : outcomes) {
        String what =
            switch (outcome.status()) {
              case GRANTED -> "admitted";
              case TAKEN -> "already admitted";
              default ->
                  "not admitted: "
                      + (outcome.detail().isEmpty()
                          ? outcome.status().toString()
                          : outcome.detail());
            };
        if (outcome.status() == NodeOutcome.Status.GRANTED
            || outcome.status() == NodeOutcome.Status.TAKEN) {
          admitted++;
        }
        out.printf(Locale.ROOT, "  %-21s %s%n", outcome.node(), what);
      }
      out.printf(
          Locale.ROOT,
          "%d of %d masters admitted; quorum %d.%n",
          admitted,
          outcomes.size(),
          outcomes.size() / 2 + 1);
      out.flush();
      return admitted == outcomes.size() ? RedLockCli.EXIT_OK : RedLockCli.EXIT_FAILED;
    }
  }

  /**
   * The master's admission check (else its uptime check) as the preflight words it, or why it could
   * not be read.
   */
  private static String uptime(Inspection.Master master) {
    for (Inspection.Check check : master.checks()) {
      if (check.name().equals("reachable") && check.verdict() == Inspection.Verdict.FAIL) {
        return "UNREACHABLE: " + check.detail();
      }
    }
    for (String name : List.of("admission", "uptime")) { // admission says whether it counts now
      for (Inspection.Check check : master.checks()) {
        if (check.name().equals(name)) {
          String detail = check.detail();
          int remedy = detail.indexOf(". On a brand-new cluster"); // admitting is what this does
          return check.verdict() + " " + (remedy < 0 ? detail : detail.substring(0, remedy));
        }
      }
    }
    return "uptime unknown";
  }
}
