package dev.redlock.simulation;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The real RedLocks of {@link SimHarness} under each fault family, and under all at once: mutual
 * exclusion holds within the library's assumptions; and with an assumption broken on purpose (the
 * restart guard off while masters restart without their data), the checker shows it fail. Each case
 * is a simulation of its own, so they run side by side.
 */
class SimulationFaultsTest {

  @Test
  void mutualExclusionHoldsUnderEveryFaultFamily() throws Exception {
    Set<Fault> within = EnumSet.complementOf(SimulationCampaign.BROKEN);
    for (Fault fault : within) {
      check(EnumSet.of(fault));
    }
    check(within);
  }

  private static void check(Set<Fault> faults) throws Exception {
    int grants = 0;
    int injected = 0;
    for (long seed = 1; seed <= 10; seed++) {
      Run run = SimHarness.run(seed, 300, faults, 20, b -> b, source -> source);
      assertNull(run.violation(), faults + ": " + run.violation());
      assertNull(run.fencing(), faults + ": " + run.fencing());
      grants += run.grants();
      injected += run.faults();
    }
    System.out.printf(
        "faults %s: 10 seeds of 300 steps, %d grants, %d faults, 0 violations, fencing tokens"
            + " rising%n",
        faults, grants, injected);
  }

  /**
   * The drift factor is an assumption: masters whose clocks run twice as fast expire keys in half
   * their TTL, and a second client is granted while the first lease is still valid.
   */
  @Test
  void mastersWhoseClocksRunFarTooFastGrantASecondHolder() throws Exception {
    String found =
        Hunt.firstFailure(
            30,
            seed ->
                SimHarness.run(
                        seed, 300, EnumSet.of(Fault.CLOCK_TOO_FAST), 5, b -> b, source -> source)
                    .violation());
    System.out.println("master clocks twice as fast: " + found);
    assertNotNull(found, "no seed of 30 broke mutual exclusion");
    for (long seed = 1; seed <= 10; seed++) { // the tokens still rise: a fencing store holds
      String fencing =
          SimHarness.run(seed, 300, EnumSet.of(Fault.CLOCK_TOO_FAST), 5, b -> b, source -> source)
              .fencing();
      assertNull(fencing, fencing);
    }
  }

  /**
   * The fencing checker can fail: with the masters' fence.lua made to store nothing (a harness
   * switch), tokens come from the masters' clocks alone, and a clock stepped back brings a token
   * below an earlier grant's; the library's own script keeps them rising under the same steps.
   */
  @Test
  void aFenceCounterNeverStoredLetsATokenGoBackWhenAClockStepsBack() throws Exception {
    String found =
        Hunt.firstFailure(
            30,
            seed ->
                SimHarness.run(
                        seed,
                        300,
                        EnumSet.of(Fault.CLOCK_STEP_BACK),
                        5,
                        b -> b,
                        source ->
                            source.replace(
                                "redis.call('SET', KEYS[2], token)",
                                "redis.call('SET', KEYS[2], '1')"))
                    .fencing());
    System.out.println("fence counter never stored, clocks stepped back: " + found);
    assertNotNull(found, "no seed of 30 saw a token go back");
  }

  /**
   * The same assumption on the client's side: a client whose clock runs at half speed believes its
   * lease valid for twice as long as it is, and another client is granted meanwhile.
   */
  @Test
  void aClientWhoseClockRunsFarTooSlowOutlivesItsLease() throws Exception {
    String found =
        Hunt.firstFailure(
            30,
            seed ->
                SimHarness.run(
                        seed,
                        300,
                        EnumSet.of(Fault.CLIENT_CLOCK_TOO_SLOW),
                        5,
                        b -> b,
                        source -> source)
                    .violation());
    System.out.println("a client clock at half speed: " + found);
    assertNotNull(found, "no seed of 30 broke mutual exclusion");
  }

  /**
   * A failure's schedule shrinks until removing any one fault or step makes the run pass, and its
   * trace reads as a timeline: here, the restart guard off and masters restarted empty.
   */
  @Test
  void aFailingScheduleShrinksToTheFaultsThatMatter() throws Exception {
    java.util.function.UnaryOperator<dev.redlock.RedLockBuilder> guardOff =
        b -> b.restartGuard(false);
    long seed = 1;
    java.util.List<Workload.Step> schedule =
        Workload.schedule(seed, 300, EnumSet.of(Fault.RESTART_EMPTY), 1);
    java.util.function.Predicate<Run> fails = run -> run.violation() != null;
    java.util.List<Workload.Step> shrunk =
        Hunt.shrink(seed, schedule, guardOff, source -> source, fails, 400);
    Run run = SimHarness.run(seed, shrunk, guardOff, source -> source);
    long faults = shrunk.stream().filter(step -> step.fault() != null).count();
    System.out.printf(
        "shrunk from %d steps to %d, %d faults: %s%n  %s%n",
        schedule.size(), shrunk.size(), faults, run.violation(), String.join("\n  ", run.trace()));
    assertNotNull(run.violation(), "the shrunk schedule no longer fails");
    for (int i = 0; i < shrunk.size(); i++) {
      if (shrunk.get(i).fault() != null) {
        java.util.List<Workload.Step> without = new java.util.ArrayList<>(shrunk);
        without.set(i, shrunk.get(i).withoutFault());
        assertNull(
            SimHarness.run(seed, without, guardOff, source -> source).violation(),
            "still fails without the fault of step " + i);
      }
    }
  }

  /**
   * The restart guard is what keeps a master that lost its keys from voting while a lease it
   * granted may still be valid: without it, masters restarted empty grant a second client.
   */
  @Test
  void withoutTheRestartGuardAMasterRestartedEmptyGrantsASecondHolder() throws Exception {
    String found =
        Hunt.firstFailure(
            30,
            seed ->
                SimHarness.run(
                        seed,
                        300,
                        EnumSet.of(Fault.RESTART_EMPTY),
                        1,
                        b -> b.restartGuard(false),
                        source -> source)
                    .violation());
    System.out.println("restart guard off, masters restarted empty: " + found);
    assertNotNull(found, "no seed of 30 broke mutual exclusion");
    for (long seed = 1; seed <= 10; seed++) { // the same restarts with the guard on: none
      String withGuard =
          SimHarness.run(seed, 300, EnumSet.of(Fault.RESTART_EMPTY), 1, b -> b, source -> source)
              .violation();
      assertNull(withGuard, "with the restart guard on: " + withGuard);
    }
  }

  /**
   * A master reloaded from an older snapshot has lost every write since (lock keys, the fence
   * counter): without the restart guard it votes at once and grants a second client; with it, it
   * waits as a master restarted empty does, and no seed breaks mutual exclusion.
   */
  @Test
  void withoutTheRestartGuardAMasterReloadedFromASnapshotGrantsASecondHolder() throws Exception {
    EnumSet<Fault> reloads = EnumSet.of(Fault.RESTART_FROM_SNAPSHOT);
    String found =
        Hunt.firstFailure(
            30,
            seed ->
                SimHarness.run(seed, 300, reloads, 1, b -> b.restartGuard(false), s -> s)
                    .violation());
    System.out.println("restart guard off, masters reloaded from snapshots: " + found);
    assertNotNull(found, "no seed of 30 broke mutual exclusion");
    for (long seed = 1; seed <= 10; seed++) {
      Run run = SimHarness.run(seed, 300, reloads, 1, b -> b, s -> s);
      assertNull(run.violation(), "with the restart guard on: " + run.violation());
      assertNull(run.fencing(), "with the restart guard on: " + run.fencing());
    }
  }

  /**
   * A regression seed: a fitness check whose answers came 630 ms after it read the master's policy
   * (fit, 210 ms before the master turned evicting) dated its verdict from its answers, so the next
   * check came an interval after them, and the evicting master voted for that client 10.5 s after
   * it turned, past the re-check's interval (before the fix in {@code FitNodeClient.check}: "seed
   * 20 step 726: master 2, unfit for 10578 ms, voted for client 0 260 ms after its re-check
   * began"). A verdict is now as old as the check that read it.
   */
  @Test
  void aSlowFitnessCheckDoesNotStretchAnUnfitMastersVotes() throws Exception {
    Set<Fault> faults = EnumSet.of(Fault.UNFIT_MASTER, Fault.PARTITION, Fault.STEADY_CONTENTION);
    Run run = SimHarness.run(20, 1_000, faults, 2, b -> b, s -> s);
    assertNull(run.failure(), run.failure());
  }

  /**
   * A regression seed: a fitness rollout excluded three masters, so every round of a waiter named
   * by a release failed at once (no master asked could vote), and the named waiter retried after a
   * random part of two average rounds; those instant rounds, timed, had dragged the average to
   * nothing, so it retried with no pause at all (before the fix in {@code Tally.timedByAnswers}:
   * "seed 30 step 92: a spin: 100000 waits in a row returned at 8610101533 ns with no event run and
   * the time standing still"; its queue to a fourth master filled meanwhile). A round no master
   * answered now times nothing.
   */
  @Test
  void roundsThatFailAtOnceDoNotMakeANamedWaiterSpin() throws Exception {
    Set<Fault> faults =
        EnumSet.of(Fault.UNFIT_ROLLOUT, Fault.STEADY_CONTENTION, Fault.CLIENT_CLOSE);
    Run run = SimHarness.run(30, 1_000, faults, 2, b -> b, s -> s);
    assertNull(run.failure(), run.failure());
  }
}
