package dev.redlock.benchmark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.benchmark.Benchmark.Config;
import dev.redlock.benchmark.Flags.UsageException;
import dev.redlock.drill.Harness;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The benchmark's command line, parsed without running anything. */
class BenchmarkOptionsTest {

  @Test
  void theIsolationSectionRunsByDefaultWithAThousandCyclesABlock() throws Exception {
    Config config = parse();
    assertTrue(config.isolation());
    assertFalse(config.onlyIsolation());
    assertFalse(config.onlyHeal());
    assertEquals(1_000, config.isolationIterations());
  }

  @Test
  void onlyIsolationRunsItAloneEvenOnMastersGivenByNodes() throws Exception {
    Config config =
        parse("--only", "isolation", "--isolation-iterations", "50", "--nodes", "redis://h:1");
    assertTrue(config.onlyIsolation());
    assertTrue(config.isolation());
    assertFalse(config.onlyHeal());
    assertEquals(50, config.isolationIterations());
  }

  @Test
  void skipIsolationLeavesItOutAndOnlyHealRunsWithoutIt() throws Exception {
    assertFalse(parse("--skip", "tls,isolation").isolation());
    Config heal = parse("--only", "heal");
    assertTrue(heal.onlyHeal());
    assertFalse(heal.isolation());
  }

  @Test
  void sectionsThatCannotRunAreUsageErrors() {
    assertThrows(UsageException.class, () -> parse("--only", "isolation", "--skip", "isolation"));
    assertThrows(UsageException.class, () -> parse("--only", "heal,isolation"));
    assertThrows(UsageException.class, () -> parse("--only", "latency"));
    assertThrows(UsageException.class, () -> parse("--skip", "heal"));
    assertThrows(UsageException.class, () -> parse("--isolation-iterations", "0"));
  }

  @Test
  void aBadCommandLineExitsWithTwoBeforeStartingAnything() {
    BenchmarkOutput output = BenchmarkOutput.run("--only", "isolation", "--skip", "isolation");
    String text = output.text();
    assertEquals(2, output.code(), text);
    assertTrue(text.contains("leave nothing to run"), text);
    assertFalse(text.contains("Starting"), text);
  }

  @Test
  void theHelpNamesTheIsolationOptions() {
    BenchmarkOutput output = BenchmarkOutput.run("--help");
    String text = output.text();
    assertEquals(0, output.code(), text);
    assertTrue(text.contains("--isolation-iterations N"), text);
    assertTrue(text.contains("heal (needs the local masters),"), text);
    assertTrue(text.contains("and the sections isolation, handoff and async-load"), text);
    assertTrue(text.contains("--handoff-seconds S"), text);
  }

  @Test
  void theHandOffSectionRunsAloneOrIsLeftOut() throws UsageException {
    Config alone = parse("--only", "handoff", "--handoff-seconds", "2");
    assertTrue(alone.onlyHandOff());
    assertTrue(alone.handOff());
    assertFalse(alone.isolation());
    assertEquals(java.time.Duration.ofSeconds(2), alone.handOffTime());
    assertFalse(parse("--skip", "handoff").handOff());
    assertTrue(parse().handOff());
    assertThrows(UsageException.class, () -> parse("--only", "handoff", "--skip", "handoff"));
    Config asyncLoad = parse("--only", "async-load");
    assertTrue(asyncLoad.asyncLoad() && !asyncLoad.handOff() && !asyncLoad.isolation());
    assertFalse(parse("--skip", "async-load").asyncLoad());
    assertThrows(UsageException.class, () -> parse("--only", "async-load", "--skip", "async-load"));
  }

  private static Config parse(String... args) throws UsageException {
    return Config.from(Flags.parse(args, Benchmark.FLAGS, Set.of(Harness.ADMIT_FRESH_NODES)));
  }
}
