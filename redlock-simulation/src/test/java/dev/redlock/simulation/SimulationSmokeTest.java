package dev.redlock.simulation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/**
 * The library's real code, from the public API down to its codec, on virtual time against five
 * simulated masters, on this test's one thread ({@link SimHarness}): clients take and give back one
 * resource in turn, replies delayed by the seed, and no two leases of it are ever valid at once.
 */
class SimulationSmokeTest {

  @Test
  void clientsTakeTurnsAndNoTwoLeasesAreValidAtOnce() throws Exception {
    for (long seed = 1; seed <= 10; seed++) {
      Run run = SimHarness.run(seed, 300);
      System.out.printf(
          "simulation seed %d: %d steps, %d grants, %d events, trace hash %08x%n",
          seed, run.trace().size(), run.grants(), run.events(), run.trace().hashCode());
      assertNull(run.violation(), run.violation());
      assertNull(run.fencing(), run.fencing());
      assertTrue(run.grants() > 30, "grants " + run.grants());
    }
  }

  /**
   * The first violation of mutual exclusion in seeds 1 to 10 of 300 steps without faults, with
   * {@code from} replaced by {@code to} in the masters' scripts (it must occur).
   */
  private static String violationWith(String from, String to) throws Exception {
    java.util.function.UnaryOperator<String> bug = source -> source.replace(from, to);
    return Hunt.firstFailure(
        10,
        seed -> SimHarness.run(seed, 300, EnumSet.noneOf(Fault.class), 1, b -> b, bug).violation());
  }

  /**
   * The checker finds a bug put back on purpose: a release that deletes the key without comparing
   * its token (a client whose lease expired then deletes its successor's key on every master).
   */
  @Test
  void aReleaseThatDoesNotCompareItsTokenIsCaught() throws Exception {
    String found =
        violationWith(
            "if value == ARGV[1] then\n  redis.call('DEL', KEYS[1])",
            "if value then\n  redis.call('DEL', KEYS[1])");
    System.out.println("release without its compare: " + found);
    assertNotNull(found, "no seed of 10 found the bug");
  }

  /**
   * The checker judges each resource of a set: a {@code keyset.lua} that checks only the first key
   * of a set before setting them all takes a resource another client holds alone.
   */
  @Test
  void aSetTakenWhenOnlyItsFirstKeyWasFreeIsCaught() throws Exception {
    String found =
        violationWith(
            "  local free = true\n  for i = 1, n do\n", "  local free = true\n  for i = 1, 1 do\n");
    System.out.println("a set's first key checked alone: " + found);
    assertNotNull(found, "no seed of 10 found the bug");
  }

  @Test
  void aSeedReplaysTheSameTrace() throws Exception {
    assertEquals(SimHarness.run(7, 150).trace(), SimHarness.run(7, 150).trace());
  }
}
