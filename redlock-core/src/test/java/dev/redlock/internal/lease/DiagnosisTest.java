package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.Vote;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a round without a quorum is explained as, kind of trouble by kind. */
class DiagnosisTest {

  private static Outcome outcome(String node, Vote vote, String detail) {
    return new Outcome(node, vote, 1_000_000, detail);
  }

  @Test
  void aRoundWithoutTroubleKeepsTheOldHeadline() {
    String why =
        Diagnosis.explain(
            List.of(
                outcome("a:1", Vote.GRANTED, ""),
                outcome("b:2", Vote.TIMED_OUT, ""),
                outcome("c:3", Vote.TIMED_OUT, "")),
            2,
            0);
    assertEquals(
        "no quorum (2 of 3 masters must grant, 1 did): too few masters answered in time", why);
  }

  @Test
  void mastersARoundDidNotAskAreNamedAsNotAskedNotAsUnheard() {
    String why =
        Diagnosis.explain(
            List.of(
                outcome(
                    "a:1", Vote.RESTARTED, "restarted 3 s ago: votes in 57 s, or once admitted"),
                outcome(
                    "b:2", Vote.RESTARTED, "restarted 3 s ago: votes in 57 s, or once admitted"),
                outcome("c:3", Vote.PENDING, QuorumRound.NOT_ASKED.detail()),
                outcome("d:4", Vote.PENDING, "")),
            3,
            60_000);
    assertTrue(
        why.contains(
            "; 1 master not asked: the others leave too few masters that may vote for this client"),
        why);
    assertTrue(
        why.endsWith("; 1 master not heard from: the round was decided before its answer"), why);
  }

  @Test
  void aRoundAQuorumGrantedIsExplainedByTheValidityLeftNotByTheQuorum() {
    String why =
        Diagnosis.explain(
            List.of(
                new Outcome("a:1", Vote.GRANTED, 2_000_000, ""),
                new Outcome("b:2", Vote.GRANTED, 412_000_000, ""),
                outcome("c:3", Vote.TIMED_OUT, "")),
            2,
            0);
    assertEquals(
        "too little validity left (2 of 3 masters granted, 2 must): the TTL less the round's"
            + " time (the slowest grant came after 412.0 ms) and the clock-drift allowance was not"
            + " above the least validity a lease must have (minValidity); give a longer TTL or a"
            + " lower minValidity, or find why the masters answered slowly",
        why);
  }

  @Test
  void theRestartGuardNamesTheMastersTheLatestVoteAndAdmission() {
    String why =
        Diagnosis.explain(
            List.of(
                outcome(
                    "a:1", Vote.RESTARTED, "restarted 3 s ago: votes in 58 s, or once admitted"),
                outcome("b:2", Vote.RESTARTED, "dataset 1 s old: votes in 60 s, or once admitted"),
                outcome("c:3", Vote.TIMED_OUT, "")),
            2,
            61_000);
    assertTrue(
        why.startsWith(
            "no quorum (2 of 3 masters must grant, 0 did); the restart guard does not count the"
                + " votes of 2 masters (a:1: restarted 3 s ago"),
        why);
    assertTrue(why.contains("they vote on their own in 60 s at the latest"), why);
    assertTrue(
        why.contains(
            "On a brand-new cluster, admit them once, from one place: RedLock.admitFreshNodes() or"
                + " the CLI's `redlock admit --nodes ...`"),
        why);
    assertTrue(why.endsWith("; 1 master did not answer within the node timeout"), why);
  }

  @Test
  void aRefusalWithoutAWaitUsesTheGuardsTime() {
    String why =
        Diagnosis.explain(
            List.of(outcome("a:1", Vote.RESTARTED, "the server run is unknown")), 1, 61_500);
    assertTrue(why.contains("they vote on their own in 62 s at the latest"), why);
  }

  @Test
  void eachMisconfigurationHasItsSentenceAndRemedy() {
    String why =
        Diagnosis.explain(
            List.of(
                outcome("a:1", Vote.FAILED, "Connection refused"),
                outcome("b:2", Vote.FAILED, "AUTH refused: WRONGPASS invalid username-password"),
                outcome("c:3", Vote.FAILED, "SELECT refused: ERR DB index is out of range"),
                outcome(
                    "d:4",
                    Vote.FAILED,
                    "NOPERM this user has no permissions to run the 'evalsha' command"),
                outcome("e:5", Vote.GRANTED, "")),
            3,
            0);
    assertTrue(why.contains("1 master unreachable (a:1: Connection refused)"), why);
    assertTrue(
        why.contains("authentication refused by 1 master (b:2: AUTH refused: WRONGPASS"), why);
    assertTrue(why.contains("redis://user:password@host:port"), why);
    assertTrue(why.contains("database index out of range on 1 master (c:3)"), why);
    assertTrue(
        why.contains(
            "permission denied on 1 master (d:4: NOPERM this user has no permissions to run the"
                + " 'evalsha' command): the ACL user lacks evalsha (evalsha: leases cannot be"
                + " released"),
        why);
    assertTrue(why.contains("docs/acl.md"), why);
  }

  @Test
  void everyMasterIsCountedWhenTheRoundIsDecidedBeforeSomeAnswered() {
    String why =
        Diagnosis.explain(
            List.of(
                outcome("a:1", Vote.FAILED, "Connection refused"),
                outcome("b:2", Vote.FAILED, "Connection refused"),
                outcome("c:3", Vote.FAILED, "Connection refused"),
                outcome("d:4", Vote.PENDING, ""),
                outcome("e:5", Vote.PENDING, "")),
            3,
            0);
    assertTrue(why.contains("3 masters unreachable (a:1, b:2, c:3: Connection refused)"), why);
    assertTrue(
        why.endsWith("; 2 masters not heard from: the round was decided before their answers"),
        why);
  }

  @Test
  void aFailureOfNoKnownKindIsCountedWithItsDetail() {
    String why =
        Diagnosis.explain(
            List.of(
                outcome("a:1", Vote.FAILED, "circuit breaker open"),
                outcome("b:2", Vote.FAILED, "circuit breaker open"),
                outcome("c:3", Vote.GRANTED, "")),
            2,
            0);
    assertEquals(
        "no quorum (2 of 3 masters must grant, 1 did); 2 masters failed (a:1, b:2: circuit"
            + " breaker open)",
        why);
  }

  @Test
  void unfitMastersAreNamedApartWithHowManyCanVoteAndTheRemedy() {
    String why =
        Diagnosis.explain(
            List.of(
                outcome("a:1", Vote.GRANTED, ""),
                outcome("b:2", Vote.FAILED, "unfit for Redlock: a replica of a:1, not a master"),
                outcome(
                    "c:3",
                    Vote.FAILED,
                    "unfit for Redlock: maxmemory 64mb with maxmemory-policy allkeys-lru")),
            2,
            0);
    assertTrue(
        why.startsWith(
            "no quorum (2 of 3 masters must grant, 1 did); 2 masters excluded as unfit for"
                + " Redlock (b:2: a replica of a:1, not a master; c:3: maxmemory 64mb with"
                + " maxmemory-policy allkeys-lru), so 1 of 3 masters can vote, 2 needed: no lease"
                + " can be granted until enough of them are corrected. Remedy: list only"
                + " standalone masters"),
        why);
    assertTrue(why.contains("noeviction"), why);
  }

  @Test
  void theClientsOwnFullQueueIsNamedAsTheClientsLimitNotTheMasters() {
    String full =
        "this client's own queue to the master is full (256 commands, 90 KiB await its replies;"
            + " an acquire may fill 50% of the limit, 512 commands, 512 KiB, the rest is kept for"
            + " held leases)";
    String why =
        Diagnosis.explain(
            List.of(
                outcome("a:1", Vote.FAILED, full),
                outcome("b:2", Vote.FAILED, full),
                outcome("c:3", Vote.TAKEN, "")),
            2,
            0);
    assertTrue(why.startsWith("no quorum (2 of 3 masters must grant, 0 did); not sent to 2"), why);
    assertTrue(why.contains("(a:1, b:2): " + full), why);
    assertTrue(why.contains("this client's limit, not the master's"), why);
    assertTrue(!why.contains("answered in time"), "does not blame the masters: " + why);
  }

  @Test
  void aWaitsHeldBackRoundIsNamedOnceWithItsRemedy() {
    Outcome full =
        outcome("m2", Vote.FAILED, "this client's own queue to the master is full (256 commands)");
    Outcome taken = outcome("m1", Vote.TAKEN, "");
    // Held back in an earlier round: the last round's outcomes do not show it, so both name it.
    Attempt earlier = new Attempt(null, List.of(taken), false).after(full);
    assertEquals(full, earlier.heldBack());
    String clause = Diagnosis.heldBack(earlier, true);
    assertTrue(
        clause.startsWith(
            "; some rounds of the wait were not sent to 1 master (m2): this client's"),
        clause);
    assertTrue(clause.contains("this client's limit, not the master's"), clause);
    assertEquals(clause, Diagnosis.heldBack(earlier, false));
    // Held back in the last round too: the explanation of its outcomes names it already.
    Attempt last = new Attempt(null, List.of(taken, full), true).after(null);
    assertEquals(full, last.heldBack());
    assertEquals("", Diagnosis.heldBack(last, true));
    assertEquals(clause, Diagnosis.heldBack(last, false));
    // Nothing held back, or granted: nothing to say.
    assertEquals(
        "", Diagnosis.heldBack(new Attempt(null, List.of(taken), false).after(null), false));
  }
}
