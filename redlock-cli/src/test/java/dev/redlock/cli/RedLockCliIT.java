package dev.redlock.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.NodeOutcome.Status;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisClusterExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code inspect} and {@code admit} against five real redis-server masters, flushed before each
 * test, so brand new each time: their uptime check WARNs and the restart guard does not count them
 * until they are admitted.
 */
class RedLockCliIT {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);

  @Test
  void inspectPrintsThePreflightTableAndExitsThreeOnWarnings(RedisCluster cluster) {
    Cli cli = Cli.run("inspect", "--nodes", String.join(",", cluster.uris()));
    assertEquals(RedLockCli.EXIT_ATTENTION, cli.code(), cli.text());
    assertTrue(cli.out().startsWith("preflight: WARN\n"), cli.text());
    for (String uri : cluster.uris()) {
      String node = uri.substring("redis://".length());
      assertTrue(cli.out().contains("  " + node + ": WARN\n"), node + "\n" + cli.text());
    }
    assertEquals(5, count(cli.out(), "PASS    reachable   Redis "), cli.text());
    assertEquals(5, count(cli.out(), "WARN    uptime      up "), cli.text());
    assertEquals("", cli.err(), cli.text());
  }

  @Test
  void inspectExitsOneForAnUnfitMasterAndNeverPrintsThePassword(RedisCluster cluster) {
    List<String> nodes = new ArrayList<>(cluster.uris());
    nodes.set(0, nodes.get(0).replace("redis://", "redis://nobody:s3cret-pw@"));
    Cli cli = Cli.run("inspect", "--nodes", String.join(",", nodes));
    assertEquals(RedLockCli.EXIT_FAILED, cli.code(), cli.text());
    assertTrue(cli.out().startsWith("preflight: FAIL\n"), cli.text());
    assertTrue(cli.out().contains("FAIL    reachable"), cli.text());
    assertFalse(cli.text().contains("s3cret-pw"), cli.text());
  }

  @Test
  void admitShowsTheMastersAsksAndAdmitsOnYes(RedisCluster cluster) {
    String nodes = String.join(",", cluster.uris());
    assertFalse(granted(cluster), "brand-new masters must not vote before admission");

    Cli cli = Cli.answering("y\n", "admit", "--nodes", nodes);

    assertEquals(RedLockCli.EXIT_OK, cli.code(), cli.text());
    assertTrue(cli.out().startsWith("5 masters to admit (the restart guard's horizon"), cli.text());
    assertTrue(cli.out().contains("Admit these 5 masters? [y/N] \n"), cli.text());
    assertEquals(5, count(cli.out(), "WARN the restart guard does not count its vote"), cli.text());
    assertEquals(5, count(cli.out(), "       admitted\n"), cli.text());
    assertTrue(cli.out().endsWith("5 of 5 masters admitted; quorum 3.\n"), cli.text());
    assertTrue(granted(cluster), "admitted masters vote: " + cli.text());

    Cli again = Cli.run("admit", "--yes", "--nodes", nodes);
    assertEquals(RedLockCli.EXIT_OK, again.code(), again.text());
    assertFalse(again.out().contains("[y/N]"), again.text());
    assertEquals(5, count(again.out(), "already admitted\n"), again.text());
    assertEquals(5, count(again.out(), ") was admitted with its dataset: it votes"), again.text());
  }

  @Test
  void anAdmissionWithTheDefaultMaxLeaseTimeHoldsForATenMinuteInspection(RedisCluster cluster) {
    String nodes = String.join(",", cluster.uris());
    Cli admit = Cli.run("admit", "--yes", "--nodes", nodes);
    assertEquals(RedLockCli.EXIT_OK, admit.code(), admit.text());

    Cli cli = Cli.run("inspect", "--max-lease-time=10m", "--nodes", nodes);

    assertEquals(5, count(cli.out(), "PASS    uptime "), cli.text());
    assertEquals(5, count(cli.out(), "PASS    admission "), cli.text());
    assertFalse(cli.out().contains("does not count its vote"), cli.text());
    assertFalse(cli.out().contains("votes in"), cli.text());
  }

  @Test
  void admitAnsweredNoOrNotAtAllAdmitsNothing(RedisCluster cluster) {
    String nodes = String.join(",", cluster.uris());
    Cli no = Cli.answering("n\n", "admit", "--nodes", nodes);
    assertEquals(RedLockCli.EXIT_ATTENTION, no.code(), no.text());
    assertTrue(no.out().endsWith("Nothing admitted.\n"), no.text());
    Cli closed = Cli.answering("", "admit", "--nodes", nodes);
    assertEquals(RedLockCli.EXIT_ATTENTION, closed.code(), closed.text());
    assertTrue(closed.out().contains("no answer; --yes admits without asking"), closed.text());
    assertFalse(granted(cluster), "nothing may be admitted: " + no.text() + closed.text());
  }

  @Test
  void admitExitsOneWhenAMasterCannotBeAdmitted(RedisCluster cluster) {
    List<String> nodes = new ArrayList<>(cluster.uris());
    cluster.node(4).stop();
    Cli cli = Cli.run("admit", "--yes", "--nodes", String.join(",", nodes));
    assertEquals(RedLockCli.EXIT_FAILED, cli.code(), cli.text());
    String down = nodes.get(4).substring("redis://".length());
    assertTrue(cli.out().contains(down + "       UNREACHABLE"), cli.text());
    assertTrue(cli.out().contains(down + "       not admitted: unreachable ("), cli.text());
    assertFalse(cli.out().contains("FAILED"), cli.text());
    assertTrue(cli.out().endsWith("4 of 5 masters admitted; quorum 3.\n"), cli.text());
  }

  /**
   * Whether a RedLock that admits nothing itself is granted a lease on these masters. A refusal
   * counts only from masters that were reached and answered that the restart guard keeps their vote
   * out: a probe that cannot connect is refused too, and must not pass for "nothing admitted".
   */
  private static boolean granted(RedisCluster cluster) {
    try (RedLock redLock = RedLock.builder().nodes(cluster.uris()).build()) {
      Optional<Lease> lease = redLock.tryAcquire("cli-it", Duration.ofSeconds(2));
      lease.ifPresent(Lease::close);
      return lease.isPresent();
    } catch (QuorumUnavailableException e) {
      List<NodeOutcome> outcomes = e.outcomes();
      // The round ends once no quorum is left: those not yet in are PENDING, the rest RESTARTED.
      long refused = outcomes.stream().filter(o -> o.status() == Status.RESTARTED).count();
      assertTrue(
          refused >= cluster.uris().size() / 2 + 1
              && outcomes.stream()
                  .allMatch(o -> o.status() == Status.RESTARTED || o.status() == Status.PENDING),
          () -> "the probe reached the masters and the restart guard refused it: " + outcomes);
      return false;
    }
  }

  private static int count(String text, String part) {
    int count = 0;
    for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
      count++;
    }
    return count;
  }
}
