package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** What the restart guard reads from a master's handshake, and the rules it applies. */
class IncarnationTest {

  private static final long SECOND = TimeUnit.SECONDS.toNanos(1);
  private static final long GUARD = 60 * SECOND;
  private static final String RUN_A = "a".repeat(40);
  private static final String RUN_B = "b".repeat(40);

  private static byte[] info(String runId, long uptime) {
    return ("# Server\r\nredis_version:7.0.15\r\nrun_id:"
            + runId
            + "\r\nuptime_in_seconds:"
            + uptime
            + "\r\n")
        .getBytes(StandardCharsets.US_ASCII);
  }

  private static List<Object> config(String appendonly, String appendfsync) {
    return config(appendonly, appendfsync, "no");
  }

  /** The answer to {@code CONFIG GET *append*}, as Redis 7.0 gives it. */
  private static List<Object> config(
      String appendonly, String appendfsync, String noFsyncOnRewrite) {
    return List.of(
        bytes("appendfilename"),
        bytes("appendonly.aof"),
        bytes("appendonly"),
        bytes(appendonly),
        bytes("no-appendfsync-on-rewrite"),
        bytes(noFsyncOnRewrite),
        bytes("appendfsync"),
        bytes(appendfsync),
        bytes("appenddirname"),
        bytes("appendonlydir"));
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  @Test
  void theHandshakeReadsTheRunItsUptimeAndWhetherPersistenceLosesNothing() {
    Incarnation.Facts facts = Incarnation.Facts.of(info(RUN_A, 86_400), config("yes", "always"));
    assertEquals(RUN_A, facts.runId());
    assertEquals(86_400, facts.uptimeSeconds());
    assertTrue(facts.lossless());
    assertNull(facts.unknown());
    assertFalse(Incarnation.Facts.of(info(RUN_A, 1), config("yes", "everysec")).lossless());
    assertFalse(Incarnation.Facts.of(info(RUN_A, 1), config("no", "always")).lossless());
    assertFalse(
        Incarnation.Facts.of(info(RUN_A, 1), config("yes", "always", "yes")).lossless(),
        "no fsync during an AOF rewrite: a crash then loses writes");
    assertFalse(
        Incarnation.Facts.of(
                info(RUN_A, 1),
                List.of(bytes("appendonly"), bytes("yes"), bytes("appendfsync"), bytes("always")))
            .lossless(),
        "no-appendfsync-on-rewrite not in the answer: not vouched for");
    assertFalse(
        Incarnation.Facts.of(info(RUN_A, 1), new ServerError("NOPERM config")).lossless(),
        "a refused CONFIG is never taken for lossless persistence");
  }

  @Test
  void aRefusedInfoLeavesTheRunUnknownAndTheMasterUnvouchedFor() {
    Incarnation.Facts facts =
        Incarnation.Facts.of(
            new ServerError("NOPERM this user has no permissions to run 'info'"),
            config("yes", "always"));
    assertNotNull(facts.unknown());
    Incarnation run = Incarnation.after(null, 0, facts, 100 * SECOND);
    String refusal = run.refusal(1000 * SECOND, GUARD);
    assertTrue(refusal.contains("INFO refused"), refusal);
  }

  @Test
  void aRunYoungerThanTheGuardDoesNotVoteUntilItIsOldEnough() {
    long now = 1000 * SECOND;
    Incarnation run =
        Incarnation.after(null, 0, Incarnation.Facts.of(info(RUN_A, 10), config("no", "")), now);
    // Up "10 s" by Redis's whole seconds is up more than 9 s: counted as 9.
    String refusal = run.refusal(now, GUARD);
    assertTrue(refusal.contains("restarted 9 s ago: votes in 51 s"), refusal);
    assertNotNull(run.refusal(now + 50 * SECOND, GUARD));
    assertNull(run.refusal(now + 51 * SECOND, GUARD));
  }

  @Test
  void anUptimeAsLongAsTheGuardStillWaitsTheSecondRedisMayHaveAdded() {
    long now = 1000 * SECOND;
    long guardSeconds = GUARD / SECOND;
    // Started at 0.9 s past a whole second, asked 0.2 s past the one guardSeconds later: Redis
    // says guardSeconds, the run has been up guardSeconds - 0.7 s.
    Incarnation run =
        Incarnation.after(
            null, 0, Incarnation.Facts.of(info(RUN_A, guardSeconds), config("no", "")), now);
    assertNotNull(run.refusal(now, GUARD), "up less than the guard: no vote");
    assertNull(run.refusal(now + SECOND, GUARD));
  }

  @Test
  void aRestartThatRedisCallsOneSecondOldIsARestartNotAFailover() {
    long lastHeard = 1000 * SECOND;
    Incarnation before =
        Incarnation.after(
            null, 0, Incarnation.Facts.of(info(RUN_A, 86_400), config("no", "")), 900 * SECOND);
    // Heard last at 1000.0 s, restarted at 1000.1 s, asked at 1000.4 s after a whole second went
    // by: Redis says up 1 s. Taken at its word, the run began before the old one was last heard,
    // and the restart looked like a failover to another server (RestartGuardIT saw it, rarely).
    long now = lastHeard + 400_000_000L;
    Incarnation after =
        Incarnation.after(
            before, lastHeard, Incarnation.Facts.of(info(RUN_B, 1), config("no", "")), now);
    assertFalse(after.replaced());
    assertTrue(after.refusal(now, GUARD).startsWith("restarted 0 s ago"));
  }

  @Test
  void aYoungRunSeenFirstIsDatedFromItsStartWhateverItsPersistence() {
    long now = 1000 * SECOND;
    Incarnation young =
        Incarnation.after(null, 0, Incarnation.Facts.of(info(RUN_A, 1), config("no", "")), now);
    assertNotNull(young.refusal(now, GUARD), "young, and a restart loses writes");
    // Lossless now, but the run before it, which this client never saw, may not have been.
    Incarnation lossless =
        Incarnation.after(
            null, 0, Incarnation.Facts.of(info(RUN_A, 1), config("yes", "always")), now);
    assertTrue(lossless.lossless());
    assertEquals(RUN_A, lossless.keptFrom());
    assertEquals(
        "restarted 0 s ago: votes in 60 s, or once admitted", lossless.refusal(now, GUARD));
  }

  @Test
  void aRestartOfARunSeenLosingNothingKeepsThatRunsDateAndOrigin() {
    long lastHeard = 1000 * SECOND;
    Incarnation before =
        Incarnation.after(
            null,
            0,
            Incarnation.Facts.of(info(RUN_A, 86_400), config("yes", "always")),
            900 * SECOND);
    long now = lastHeard + SECOND;
    Incarnation restarted =
        Incarnation.after(
            before, lastHeard, Incarnation.Facts.of(info(RUN_B, 0), config("yes", "always")), now);
    assertFalse(restarted.replaced());
    assertEquals(before.keptSinceNanos(), restarted.keptSinceNanos());
    assertEquals(RUN_A, restarted.keptFrom(), "an admission of A vouches for B");
    assertNull(restarted.refusal(now, GUARD), "it kept every key A had, up a day");
    // The same with no fsync during rewrites on the run that stopped: dated from the restart.
    Incarnation rewriting =
        Incarnation.after(
            null,
            0,
            Incarnation.Facts.of(info(RUN_A, 86_400), config("yes", "always", "yes")),
            900 * SECOND);
    Incarnation after =
        Incarnation.after(
            rewriting,
            lastHeard,
            Incarnation.Facts.of(info(RUN_B, 0), config("yes", "always")),
            now);
    assertEquals(RUN_B, after.keptFrom());
    assertNotNull(after.refusal(now, GUARD), "the old run may have lost writes in a rewrite");
  }

  @Test
  void aReconnectionToTheSameRunKeepsItsDateEvenAfterAFailover() {
    long lastHeard = 1000 * SECOND;
    Incarnation before =
        Incarnation.after(
            null, 0, Incarnation.Facts.of(info(RUN_A, 86_400), config("no", "")), 900 * SECOND);
    long now = lastHeard + SECOND;
    Incarnation promoted =
        Incarnation.after(
            before, lastHeard, Incarnation.Facts.of(info(RUN_B, 86_400), config("no", "")), now);
    assertTrue(promoted.replaced());
    // The link drops and comes back to the same server ten seconds later: up a day by its uptime,
    // but still the server that took the address ten seconds ago.
    long later = now + 10 * SECOND;
    Incarnation again =
        Incarnation.after(
            promoted, later, Incarnation.Facts.of(info(RUN_B, 86_410), config("no", "")), later);
    assertEquals(promoted.keptSinceNanos(), again.keptSinceNanos());
    assertTrue(again.replaced());
    assertTrue(
        again.refusal(later, GUARD).contains("a different server"), again.refusal(later, GUARD));
  }

  @Test
  void anAdmissionCountsOnlyForTheRunAndTheMarkerItNames() {
    byte[] marker = ascii("1700000000000");
    byte[] record = ascii(RUN_A + " 1700000000000");
    assertTrue(RestartGuardRule.admits(record, RUN_A, marker), "this very run and dataset");
    assertFalse(RestartGuardRule.admits(record, RUN_B, marker), "another run: a restart");
    assertFalse(
        RestartGuardRule.admits(record, RUN_A, ascii("1700000000001")),
        "another marker: stored after the admitted one was lost");
    assertFalse(RestartGuardRule.admits(ascii(RUN_A), RUN_A, marker), "a record without marker");
    assertFalse(
        RestartGuardRule.admits(ascii(RUN_A + "_1700000000000"), RUN_A, marker), "no separator");
    assertFalse(RestartGuardRule.admits(ascii(RUN_A + " 17000000000000"), RUN_A, marker));
    assertFalse(RestartGuardRule.admits(null, RUN_A, marker));
    assertFalse(RestartGuardRule.admits(record, null, marker), "the run is unknown");
    assertFalse(RestartGuardRule.admits(record, RUN_A, null), "no marker");
  }

  @Test
  void anotherServerThatWasAlreadyUpIsAFailoverAndWaitsAFullGuardFromNow() {
    long lastHeard = 1000 * SECOND;
    Incarnation before =
        Incarnation.after(
            null, 0, Incarnation.Facts.of(info(RUN_A, 86_400), config("no", "")), 900 * SECOND);
    long now = 1001 * SECOND;
    // A replica up for a day is promoted behind the same address, even with lossless persistence.
    Incarnation after =
        Incarnation.after(
            before,
            lastHeard,
            Incarnation.Facts.of(info(RUN_B, 86_400), config("yes", "always")),
            now);
    assertTrue(after.replaced());
    assertTrue(after.refusal(now, GUARD).contains("a different server"));
    assertNotNull(after.refusal(now + GUARD - 1, GUARD));
    assertNull(after.refusal(now + GUARD, GUARD));
    // A restart of the same address comes back with an uptime shorter than the gap: no failover.
    // Configured to lose nothing from this run on, but the run that stopped was not: what it had
    // not fsynced is gone, so the run is dated from its start.
    Incarnation restarted =
        Incarnation.after(
            before, lastHeard, Incarnation.Facts.of(info(RUN_B, 0), config("yes", "always")), now);
    assertFalse(restarted.replaced());
    assertEquals(
        "restarted 0 s ago: votes in 60 s, or once admitted",
        restarted.refusal(now, GUARD),
        "switched to appendfsync always at the restart");
  }

  private static byte[] ascii(String run) {
    return run.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  }

  @Test
  void aServerThatWasUpBeforeTheOldRunWasLastHeardIsAFailoverOnAnyTicker() {
    // The ticker is System.nanoTime's: any origin, here far from zero.
    long lastHeard = 5_000_000 * SECOND;
    Incarnation before =
        Incarnation.after(
            null,
            0,
            Incarnation.Facts.of(info(RUN_A, 86_400), config("no", "")),
            lastHeard - SECOND);
    long now = lastHeard + SECOND;
    Incarnation after =
        Incarnation.after(
            before, lastHeard, Incarnation.Facts.of(info(RUN_B, 3_600), config("no", "")), now);
    assertTrue(after.replaced(), "up an hour, the old run heard a second ago: another server");
    // Started (taken a second younger) exactly when the old run was last heard: a restart.
    Incarnation restarted =
        Incarnation.after(
            before, lastHeard, Incarnation.Facts.of(info(RUN_B, 2), config("no", "")), now);
    assertFalse(restarted.replaced());
    assertEquals(lastHeard, restarted.keptSinceNanos());
  }

  @Test
  void aHandshakeWithoutTheRunsFactsLeavesItUnknown() {
    assertEquals(
        "INFO server answered no text",
        Incarnation.Facts.of(42L, config("yes", "always")).unknown());
    assertEquals(
        "INFO server has no run_id or uptime_in_seconds",
        Incarnation.Facts.of(ascii("redis_version:7.0.15\r\nuptime_in_seconds:5\r\n"), null)
            .unknown());
    assertEquals(
        "INFO server has no run_id or uptime_in_seconds",
        Incarnation.Facts.of(ascii("run_id:" + RUN_A + "\r\nuptime_in_seconds:x\r\n"), null)
            .unknown());
    // A CONFIG reply with an odd word at its end still reads its pairs.
    List<Object> odd = new java.util.ArrayList<>(config("yes", "always"));
    odd.add(bytes("appendonly"));
    assertTrue(Incarnation.Facts.of(info(RUN_A, 1), odd).lossless());
  }

  @Test
  void anAdmissionRecordNamesARunOnlyAsTheRunAndASpaceBeforeItsMarker() {
    assertTrue(RestartGuardRule.admitsRun(ascii(RUN_A + " 1"), RUN_A));
    assertFalse(RestartGuardRule.admitsRun(ascii(RUN_A), RUN_A), "no marker after the run");
    assertFalse(RestartGuardRule.admitsRun(ascii(RUN_A + " "), RUN_A), "an empty marker");
    assertFalse(RestartGuardRule.admitsRun(ascii(RUN_A + "_1"), RUN_A), "no separator");
    assertFalse(RestartGuardRule.admitsRun(ascii(RUN_B + " 1"), RUN_A), "another run");
    assertFalse(RestartGuardRule.admitsRun(null, RUN_A));
    assertFalse(RestartGuardRule.admitsRun(ascii(RUN_A + " 1"), null));
    // The shortest record that names a dataset: one character of run, a space, the marker.
    assertTrue(RestartGuardRule.admitsDataset(ascii("r 17"), ascii("17")));
    assertFalse(RestartGuardRule.admitsDataset(ascii(" 17"), ascii("17")), "no run before it");
  }
}
