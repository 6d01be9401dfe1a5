package dev.redlock.benchmark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.benchmark.BenchmarkChecks.Goal;
import dev.redlock.benchmark.BenchmarkRun.AcquireAlone;
import dev.redlock.benchmark.BenchmarkRun.Lineup;
import dev.redlock.benchmark.IsolationRun.Block;
import dev.redlock.benchmark.IsolationRun.Cycles;
import dev.redlock.benchmark.IsolationRun.Isolation;
import dev.redlock.benchmark.ThroughputRun.Throughput;
import dev.redlock.drill.Samples;
import dev.redlock.testkit.HostileMaster.Mode;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The goals (the performance issue's and the isolation section's) and the heal section's figures,
 * without Redis.
 */
class BenchmarkChecksTest {

  @Test
  void everyGoalHoldsItsRatioAgainstItsBound() {
    Lineup lineup =
        lineup(
            row(Lineup.FLOOR, "floor", 100, 110, 100), // p50 100
            row(Lineup.PLAIN, "plain", 100, 90, 110), // 100, exactly at its bound: met
            row(Lineup.DEFAULTS, "dflt", 120, 130, 110), // 1.20 over the floor, bound 1.15
            row(Lineup.TOKEN, "token", 150, 160, 140), // 1.50, bound 1.6
            row("node-redlock 5", "node", 130, 130, 130)); // the default is faster: met
    List<Throughput> throughput =
        List.of(
            throughput(Lineup.FLOOR, 32, 1_000, 1_100),
            throughput(Lineup.DEFAULTS, 32, 2_500, 1_900), // 2.10 in all, one round below 2
            throughput(Lineup.DEFAULTS, 8, 100, 100));

    List<Goal> goals = BenchmarkChecks.goals(lineup, throughput);

    assertEquals(
        List.of(
            "default p50 <= 1.15 x floor",
            "default p50 <= node-redlock",
            "default 32 threads >= 2 x floor",
            "plain p50 <= floor",
            "token read p50 <= 1.6 x floor"),
        goals.stream().map(Goal::statement).toList());
    assertVerdict(goals.get(0), 1.20, "NOT met");
    assertVerdict(goals.get(1), 120.0 / 130, "met");
    assertVerdict(goals.get(2), 4_400.0 / 2_100, "met");
    assertVerdict(goals.get(3), 1.00, "met");
    assertVerdict(goals.get(4), 1.50, "met");
    assertEquals("120 / 100 us", goals.get(0).figures());
    // Round by round: 120/100, 130/110 and 110/100.
    assertEquals(1.1, goals.get(0).spread().get().min(), 1e-9);
    assertEquals(1.2, goals.get(0).spread().get().max(), 1e-9);
    assertEquals(130.0 / 110, goals.get(0).spread().get().median(), 1e-9);
    assertEquals(1.9 / 1.1, goals.get(2).spread().get().min(), 1e-9);
  }

  @Test
  void aGoalWithASkippedRowIsNotJudged() {
    Lineup lineup =
        lineup(
            row(Lineup.FLOOR, "floor", 100, 100),
            row(Lineup.PLAIN, "plain", 100, 100),
            row(Lineup.DEFAULTS, "dflt", 100, 100),
            row(Lineup.TOKEN, "token", 100, 100),
            Contender.skipped("node-redlock", "node", "skipped: npm ci failed (exit 1)"));

    List<Goal> goals = BenchmarkChecks.goals(lineup, List.of());

    Goal node = goals.get(1);
    assertFalse(node.judged());
    assertFalse(node.met());
    assertEquals("not judged", node.verdict());
    assertEquals("node-redlock skipped: npm ci failed (exit 1)", node.notJudged());
    assertEquals("no 32-thread figures", goals.get(2).notJudged());
    assertTrue(goals.get(0).met());
  }

  @Test
  void eachIsolationCaseIsHeldToAllGrantedAP99AllowanceAndAHeapAllowance() {
    long mib = 1024 * 1024;
    // Healthy p99 2 ms: a case may reach 1.5 x 2 + 1 = 4 ms.
    Block healthy = block(null, 100, 100, 2_000, 0);
    Block atTheBounds = block(Mode.FLOOD, 1_000, 1_000, 4_000, 16 * mib);
    Block justOver = block(Mode.GARBAGE, 999, 1_000, 4_001, 16 * mib + 1);
    Block failed = IsolationRun.Block.failed(Mode.RESET, "the hostile master did not start: x");
    Isolation isolation =
        new Isolation(5, healthy, List.of(atTheBounds, justOver, failed), Duration.ofSeconds(1));

    List<Goal> goals = BenchmarkChecks.isolationGoals(isolation);

    assertEquals(
        List.of(
            "flood: all granted",
            "flood: p99 <= 1.5x healthy+1ms",
            "flood: heap growth <= 16 MiB",
            "garbage: all granted",
            "garbage: p99 <= 1.5x healthy+1ms",
            "garbage: heap growth <= 16 MiB",
            "reset: isolation"),
        goals.stream().map(Goal::statement).toList());
    assertVerdict(goals.get(0), 1.0, "met");
    assertVerdict(goals.get(1), 1.0, "met");
    assertVerdict(goals.get(2), 1.0, "met");
    assertVerdict(goals.get(3), 0.999, "NOT met");
    assertVerdict(goals.get(4), 4_001.0 / 4_000, "NOT met");
    assertVerdict(goals.get(5), (16.0 * mib + 1) / (16 * mib), "NOT met");
    assertEquals("1,000 / 1,000 tryAcquire", goals.get(0).figures());
    assertEquals("4,000 / 4,000 us", goals.get(1).figures());
    assertEquals("+16.0 / 16 MiB", goals.get(2).figures());
    assertFalse(goals.get(6).judged());
    assertEquals("the hostile master did not start: x", goals.get(6).notJudged());
  }

  @Test
  void theHeapGoalJudgesTheLargestCheckpointNotTheLast() {
    Block healthy = block(null, 10, 10, 1_000, 0);
    Cycles cycles = new Cycles(100);
    cycles.samples.add(1_000_000);
    cycles.attempts = 1;
    cycles.granted = 1;
    cycles.checkpoint(100 + 68L * 1024 * 1024); // a buffer held while the burst lasted
    cycles.checkpoint(100 + 1024); // dropped with its connection by the end
    Block flood =
        new Block(
            Mode.FLOOD, "", cycles, new IsolationRun.Watch("x"), Optional.empty(), null, null);

    Goal heap =
        BenchmarkChecks.isolationGoals(
                new Isolation(5, healthy, List.of(flood), Duration.ofSeconds(1)))
            .get(2);

    assertEquals(1024, cycles.heapGrowthAtEnd());
    assertVerdict(heap, 68.0 / 16, "NOT met");
  }

  /** A measured block whose tryAcquire p99 is {@code p99Micros} and heap grew {@code heap}. */
  private static Block block(Mode mode, int granted, int attempts, long p99Micros, long heap) {
    Cycles cycles = new Cycles(1_000);
    for (int i = 0; i < 100; i++) {
      cycles.samples.add(p99Micros * 1_000); // every sample the same: p99 is that
    }
    cycles.attempts = attempts;
    cycles.granted = granted;
    cycles.checkpoint(1_000 + heap);
    return new Block(mode, "", cycles, new IsolationRun.Watch("x"), Optional.empty(), null, null);
  }

  private static void assertVerdict(Goal goal, double ratio, String verdict) {
    assertEquals(ratio, goal.ratio(), 1e-9, goal.statement());
    assertEquals(verdict, goal.verdict(), goal.statement());
  }

  /** A measured row whose latency blocks have these p50s (in microseconds), one sample each. */
  private static Contender row(String name, String column, long... blockP50Micros) {
    Operation op = new Operation(name, self -> 0);
    for (long micros : blockP50Micros) {
      Samples block = new Samples();
      block.add(micros * 1_000);
      op.blocks.add(block.summary());
      op.samples.addAll(block);
    }
    return Contender.measured(name, column, op, (threads, time, prefix) -> null);
  }

  private static Lineup lineup(
      Contender floor, Contender plain, Contender defaults, Contender token, Contender node) {
    Operation none = new Operation("none", self -> 0);
    return new Lineup(
        floor,
        plain,
        defaults,
        token,
        Contender.skipped(Lineup.TLS, "tls", "skipped: --skip tls"),
        Contender.skipped("Redisson RedLock", "redisson", "skipped: --skip redisson"),
        node,
        new AcquireAlone(none, none, none),
        3);
  }

  /** Rounds of one second each, with these ops. */
  private static Throughput throughput(String client, int threads, long... opsPerRound) {
    List<Throughput> rounds =
        java.util.Arrays.stream(opsPerRound)
            .mapToObj(ops -> new Throughput(client, threads, ops, 0, 1_000_000_000L, new Samples()))
            .toList();
    return Throughput.sum(client, threads, rounds);
  }

  private static Optional<Duration> ms(long millis) {
    return Optional.of(Duration.ofMillis(millis));
  }

  @Test
  void aMissingFirstLeaseCountsAsLongerThanAnyInTheMedian() {
    List<Optional<Duration>> figures = List.of(ms(900), Optional.empty(), ms(50));
    assertEquals(ms(900), BenchmarkChecks.median(figures));
    assertEquals(Optional.empty(), BenchmarkChecks.max(figures));
  }

  @Test
  void anEvenCountAveragesTheMiddleTwoUnlessOneIsMissing() {
    assertEquals(ms(75), BenchmarkChecks.median(List.of(ms(100), ms(50), ms(10), ms(990))));
    assertEquals(
        Optional.empty(),
        BenchmarkChecks.median(List.of(ms(10), Optional.empty(), Optional.empty(), ms(20))));
  }

  @Test
  void theMaxIsTheLargestFigureAndNoFiguresHaveNone() {
    assertEquals(ms(990), BenchmarkChecks.max(List.of(ms(100), ms(990), ms(10))));
    assertEquals(Optional.empty(), BenchmarkChecks.max(List.of()));
    assertEquals(Optional.empty(), BenchmarkChecks.median(List.of()));
  }

  @Test
  void onlyFiguresUpToTheGoalCountAsWithinIt() {
    assertEquals(
        2,
        BenchmarkChecks.withinHealGoal(
            List.of(ms(99), ms(100), ms(101), Optional.empty(), ms(990))));
  }
}
