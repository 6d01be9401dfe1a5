package dev.redlock.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The command line itself: help, version, usage errors and their exit codes; no Redis. */
class RedLockCliTest {

  @Test
  void helpListsTheCommandsAndTheExitCodes() {
    Cli cli = Cli.run("--help");
    assertEquals(0, cli.code(), cli.text());
    assertTrue(cli.out().startsWith("Usage: redlock [-hV] COMMAND"), cli.text());
    for (String command : new String[] {"inspect", "admit", "drill", "help"}) {
      assertTrue(cli.out().contains("\n  " + command + " "), command + "\n" + cli.text());
    }
    assertTrue(cli.out().contains("Exit codes:"), cli.text());
  }

  @Test
  void eachCommandHasItsOwnUsage() {
    Cli inspect = Cli.run("help", "inspect");
    assertEquals(0, inspect.code(), inspect.text());
    assertTrue(inspect.out().contains("Usage: redlock inspect "), inspect.text());
    assertTrue(inspect.out().contains("--nodes=URI[,URI...]"), inspect.text());
    Cli admit = Cli.run("admit", "--help");
    assertEquals(0, admit.code(), admit.text());
    assertTrue(admit.out().contains("-y, --yes"), admit.text());
    Cli drill = Cli.run("drill", "-h");
    assertEquals(0, drill.code(), drill.text());
    assertTrue(drill.out().contains("--plan=FILE"), drill.text());
    assertTrue(drill.out().contains("at 40s kill master 3 and restart it after 2s"), drill.text());
  }

  @Test
  void versionIsTheBuildsVersion() {
    Cli cli = Cli.run("--version");
    assertEquals(0, cli.code(), cli.text());
    assertTrue(cli.out().startsWith("redlock 0."), cli.text());
    assertFalse(cli.out().contains("unknown"), cli.text());
  }

  @Test
  void theDefaultsTheHelpNamesAreTheLibrarys() {
    String help = Cli.run("help", "inspect").out();
    assertTrue(
        help.replaceAll("\\s+", " ")
            .contains(
                "(default: the library's, " + RedLock.DEFAULT_NODE_TIMEOUT.toMillis() + "ms)"),
        help);
    assertTrue(
        help.replaceAll("\\s+", " ")
            .contains(
                "(default: the library's, " + RedLock.DEFAULT_MAX_LEASE_TIME.toSeconds() + "s)"),
        help);
  }

  @Test
  void noCommandIsABadCommandLine() {
    Cli cli = Cli.run();
    assertEquals(RedLockCli.EXIT_USAGE, cli.code(), cli.text());
    assertTrue(cli.err().startsWith("redlock: give a command."), cli.text());
  }

  @Test
  void anUnknownOptionExitsTwoWithOneLineSayingWhy() {
    Cli cli = Cli.run("inspect", "--nodes", "redis://127.0.0.1:1", "--bogus");
    assertEquals(RedLockCli.EXIT_USAGE, cli.code(), cli.text());
    assertEquals(
        "redlock inspect: Unknown option: '--bogus'\n"
            + "Run 'redlock inspect --help' to see the options.\n",
        cli.err().replace(System.lineSeparator(), "\n"),
        cli.text());
    assertEquals("", cli.out(), cli.text());
  }

  @Test
  void inspectWithoutMastersIsABadCommandLine() {
    Cli cli = Cli.run("inspect");
    assertEquals(RedLockCli.EXIT_USAGE, cli.code(), cli.text());
    assertTrue(cli.err().contains("give the masters: --nodes"), cli.text());
  }

  @Test
  void aMalformedUriIsABadCommandLineAndItsPasswordIsNotPrinted() {
    Cli cli = Cli.run("inspect", "--nodes", "redis://user:s3cret@db1:notaport");
    assertEquals(RedLockCli.EXIT_USAGE, cli.code(), cli.text());
    assertTrue(cli.err().startsWith("redlock inspect: "), cli.text());
    assertFalse(cli.text().contains("s3cret"), cli.text());
  }

  @Test
  void aDrillOptionOutOfRangeExitsTwo() {
    Cli cli = Cli.run("drill", "--workers", "0");
    assertEquals(RedLockCli.EXIT_USAGE, cli.code(), cli.text());
    assertTrue(cli.err().contains("--workers must be between 1 and 1024, was 0"), cli.text());
  }

  @Test
  void durationsTakeAUnit() {
    Masters.DurationConverter converter = new Masters.DurationConverter();
    assertEquals(Duration.ofMillis(500), converter.convert("500ms"));
    assertEquals(Duration.ofMillis(1500), converter.convert("1.5s"));
    assertEquals(Duration.ofMinutes(10), converter.convert("10m"));
    assertEquals(Duration.ofMinutes(1), converter.convert("PT1M"));
    Cli cli = Cli.run("inspect", "--nodes", "redis://127.0.0.1:1", "--node-timeout", "500");
    assertEquals(RedLockCli.EXIT_USAGE, cli.code(), cli.text());
    assertTrue(cli.err().contains("give a number and a unit"), cli.text());
  }

  @Test
  void withoutMastersTheErrorNamesEveryWayToGiveThem() {
    Cli cli = Cli.withEnvironment(java.util.Map.of(), "inspect");
    assertEquals(RedLockCli.EXIT_USAGE, cli.code(), cli.text());
    assertTrue(cli.err().contains("--nodes"), cli.text());
    assertTrue(cli.err().contains("REDLOCK_NODES"), cli.text());
    assertTrue(cli.err().contains("@FILE"), cli.text());
  }

  @Test
  void theHelpSaysHowToKeepThePasswordOffTheCommandLine() {
    String help = Cli.run("help", "admit").out().replaceAll("\\s+", " ");
    assertTrue(help.contains("REDLOCK_NODES"), help);
    assertTrue(help.contains("@FILE"), help);
  }
}
