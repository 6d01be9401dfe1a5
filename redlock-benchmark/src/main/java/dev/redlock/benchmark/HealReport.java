package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.RedLock;
import dev.redlock.benchmark.HealRun.BreakerChange;
import dev.redlock.benchmark.HealRun.Heal;
import dev.redlock.benchmark.HealRun.Repeat;
import dev.redlock.drill.Masters;
import dev.redlock.drill.Rows;
import dev.redlock.testkit.RedisProcess;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * What the benchmark's heal section ({@link HealRun}) prints: what it does, each repetition's
 * figures and breaker transitions, and the figures against the goal. Not thread-safe.
 */
final class HealReport {

  private final PrintStream out;
  private final Rows rows;

  HealReport(PrintStream out) {
    this.out = requireNonNull(out, "out");
    this.rows = new Rows(out, 16);
  }

  /** Prints what the section does, on which masters. */
  void start(
      Masters masters,
      List<RedisProcess> hung,
      int repeats,
      Duration nodeTimeout,
      String admission) {
    out.println();
    out.printf(
        Locale.ROOT,
        "5. Heal: default RedLock (circuit breakers on, open wait %d ms), node timeout %d ms;%n",
        RedLock.DEFAULT_CIRCUIT_BREAKER_WAIT.toMillis(),
        nodeTimeout.toMillis());
    out.printf(
        Locale.ROOT,
        "%d of %d masters hung with SIGSTOP for %d tryAcquire rounds, then resumed with SIGCONT;"
            + " %d times, a new RedLock each.%n",
        HealRun.HUNG,
        masters.uris().size(),
        HealRun.HANG_ROUNDS,
        repeats);
    rows.row(
        "hung masters",
        String.join(", ", hung.stream().map(p -> p.host() + ":" + p.port()).toList()));
    rows.row("masters", admission);
    rows.row(
        "after the heal",
        String.format(
            Locale.ROOT,
            "tryAcquire on a new key every %d ms until granted (at most %d s), on the same RedLock,",
            HealRun.PAUSE_MILLIS,
            HealRun.LIMIT.toSeconds()));
    rows.row("", "releasing nothing else; timed from the moment the last master runs again");
  }

  /** Prints one repetition's figures. */
  void repeat(int index, int repeats, Repeat r) {
    String round = (index + 1) + "/" + repeats;
    out.printf(
        Locale.ROOT,
        "  %-5s hung: %d of %d tryAcquire threw QuorumUnavailableException; %d breakers opened%n",
        round,
        r.hangUnavailable(),
        r.hangRounds(),
        r.breakersOpened());
    out.printf(
        Locale.ROOT,
        "  %-5s first lease %s (%,d tryAcquire calls)%n",
        "",
        r.firstLease().isPresent()
            ? millis(r.firstLease().get()) + " after the last master resumed"
            : noLease(),
        r.calls());
    out.printf(
        Locale.ROOT,
        "  %-5s tryAcquire %s after the heal: %s (called at +%,d ms)%n",
        "",
        laterLabel(),
        r.later(),
        r.laterMadeAt().toMillis());
    Map<String, List<String>> byNode = new LinkedHashMap<>();
    for (BreakerChange change : r.afterHeal()) {
      byNode
          .computeIfAbsent(change.node(), n -> new ArrayList<>())
          .add(
              String.format(
                  Locale.ROOT, "%s +%,d ms", change.state(), change.sinceHeal().toMillis()));
    }
    if (byNode.isEmpty()) {
      out.printf("  %-5s breakers after the heal: no transitions%n", "");
    }
    byNode.forEach(
        (node, changes) ->
            out.printf(
                "  %-5s breaker %s after the heal: %s%n", "", node, String.join(", ", changes)));
  }

  /** Prints every repetition's first-lease figure, their median and max against the goal. */
  void summary(Heal heal) {
    List<Optional<Duration>> figures = heal.firstLeases();
    out.println(
        "  first lease after every master resumed: "
            + String.join(" / ", figures.stream().map(HealReport::figure).toList()));
    out.printf(
        Locale.ROOT,
        "  median %s, max %s; goal: every first lease within %d ms: %s (%d of %d)%n",
        figure(BenchmarkChecks.median(figures)),
        figure(BenchmarkChecks.max(figures)),
        HealRun.GOAL.toMillis(),
        BenchmarkChecks.withinHealGoal(figures) == figures.size() ? "met" : "NOT met",
        BenchmarkChecks.withinHealGoal(figures),
        figures.size());
    long granted = heal.repeats().stream().filter(Repeat::laterGranted).count();
    out.printf(
        Locale.ROOT,
        "  tryAcquire %s after the heal: granted in %d of %d%n",
        laterLabel(),
        granted,
        figures.size());
  }

  /** Why the section did not run: it pauses local masters. */
  void skipped() {
    out.println();
    out.println(
        "5. Heal: skipped: it hangs masters with SIGSTOP, so it runs only on the local masters"
            + " this program starts (without --nodes).");
  }

  private static String figure(Optional<Duration> figure) {
    return figure.map(HealReport::millis).orElse(noLease());
  }

  private static String millis(Duration d) {
    return String.format(Locale.ROOT, "%,.1f ms", d.toNanos() / 1e6);
  }

  private static String noLease() {
    return "none within " + HealRun.LIMIT.toSeconds() + " s";
  }

  private static String laterLabel() {
    return String.format(Locale.ROOT, "%.1f s", HealRun.LATER.toMillis() / 1e3);
  }
}
