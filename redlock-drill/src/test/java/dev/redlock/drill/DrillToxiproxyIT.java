package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import dev.redlock.drill.RoundLog.Rounds;
import dev.redlock.faultproxy.FaultProxyServer;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.ToxiproxyClient;
import eu.rekawek.toxiproxy.model.Toxic;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The drill against "the user's own masters" behind "the user's Toxiproxy": three redis-server
 * processes and the Toxiproxy-compatible fault proxy, set up here as a user would have them, with
 * proxies named as the user likes and a toxic of the user's own.
 */
class DrillToxiproxyIT {

  private static final String[] NAMES = {"orders-a", "orders-b", "orders-c"};

  private static RedisCluster masters;
  private static FaultProxyServer toxiproxyServer;
  private static ToxiproxyClient toxiproxy;
  private static final List<String> proxied = new ArrayList<>();

  @BeforeAll
  static void startTheUsersSetup() throws Exception {
    masters = RedisCluster.start(3);
    toxiproxyServer = FaultProxyServer.start();
    toxiproxy = new ToxiproxyClient(toxiproxyServer.host(), toxiproxyServer.apiPort());
    for (int i = 0; i < NAMES.length; i++) {
      RedisProcess master = masters.node(i);
      Proxy proxy =
          toxiproxy.createProxy(NAMES[i], "127.0.0.1:0", master.host() + ":" + master.port());
      proxied.add("redis://" + proxy.getListen());
    }
    toxiproxy.getProxy(NAMES[0]).toxics().latency("users-own", ToxicDirection.DOWNSTREAM, 1);
  }

  @AfterAll
  static void stopTheUsersSetup() {
    if (toxiproxyServer != null) {
      toxiproxyServer.close();
    }
    if (masters != null) {
      masters.close();
    }
  }

  @Test
  void networkFaultsGoThroughTheUsersProxiesFoundByPortAndOnlyTheDrillsOwnAreUndone(
      @TempDir Path dir) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DrillResult outcome =
        Drill.runRecorded(
            Drill.plan(
                "--nodes",
                String.join(",", proxied),
                "--admit-fresh-nodes",
                "--toxiproxy",
                toxiproxyServer.host() + ":" + toxiproxyServer.apiPort(),
                "--workers",
                "2",
                "--duration",
                "3.5",
                "--report",
                dir.resolve("r.html").toString(),
                "--faults",
                "at 0.4s partition master 2 for 0.6s; at 2s latency 120ms on master 3 for 0.6s"),
            new PrintStream(bytes, true, StandardCharsets.UTF_8));
    String text = bytes.toString(StandardCharsets.UTF_8);

    assertTrue(outcome.checks().passed(), text);
    assertTrue(
        text.contains(
            "at "
                + toxiproxyServer.host()
                + ":"
                + toxiproxyServer.apiPort()
                + ", proxies 1=orders-a 2=orders-b 3=orders-c (network faults only)"),
        text);
    assertTrue(
        text.contains(
            "proxy orders-a (master 1) already has toxics: users-own; the drill leaves them"),
        text);
    List<FaultWindow> windows = outcome.timeline().faults();
    assertEquals(2, windows.size(), windows.toString());
    windows.forEach(w -> assertEquals(List.of(), w.errors(), w.toString()));
    long margin = TimeUnit.MILLISECONDS.toNanos(100);
    assertFalse(
        voted(
            outcome.timeline(),
            1,
            windows.get(0).applied() + margin,
            windows.get(0).healing() - margin),
        "master 2 voted while partitioned\n" + text);
    assertFalse(
        voted(
            outcome.timeline(),
            2,
            windows.get(1).applied() + margin,
            windows.get(1).healing() - margin),
        "master 3 voted while 120 ms slow with a 50 ms node timeout\n" + text);
    assertTrue(voted(outcome.timeline(), 1, windows.get(0).ended() + margin, Long.MAX_VALUE), text);

    // Afterwards the user's proxies are as the user left them.
    for (String name : NAMES) {
      Proxy proxy = toxiproxy.getProxy(name);
      assertTrue(proxy.isEnabled(), name);
      List<String> toxics = proxy.toxics().getAll().stream().map(Toxic::getName).toList();
      assertEquals(name.equals(NAMES[0]) ? List.of("users-own") : List.of(), toxics, name);
    }
  }

  @Test
  void namedProxiesAreUsedAsGivenAndAMasterWithoutAProxyStopsTheDrillBeforeItRuns(
      @TempDir Path dir) {
    String api = toxiproxyServer.host() + ":" + toxiproxyServer.apiPort();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    int code =
        Drill.run(
            new String[] {
              "--nodes",
              String.join(",", proxied),
              "--toxiproxy",
              api,
              "--proxies",
              "orders-a,orders-x,orders-c",
              "--faults",
              "at 1s partition master 2 for 1s",
              "--report",
              dir.resolve("r.html").toString()
            },
            new PrintStream(bytes, true, StandardCharsets.UTF_8));
    String text = bytes.toString(StandardCharsets.UTF_8);
    assertEquals(1, code, text);
    assertTrue(
        text.contains(
            "DRILL FAILED: cannot fault the masters: Toxiproxy has no proxy named 'orders-x'"
                + " (it has: "),
        text);
    assertFalse(text.contains("Running"), text);
  }

  /** Whether master {@code m} (from 0) voted in a round begun in [from, to]. */
  private static boolean voted(Timeline timeline, int m, long from, long to) {
    for (Rounds rounds : timeline.rounds()) {
      for (int i = 0; i < rounds.size(); i++) {
        long t = rounds.time(i);
        Status status = rounds.status(i, m);
        if (t >= from && t <= to && RoundLog.votes(status)) {
          return true;
        }
      }
    }
    return false;
  }
}
