package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.Vote;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Each master's admission result in words, with the remedy for its cause and no vote names. */
class AdmissionReportTest {

  private static Outcome outcome(String node, Vote vote, String detail) {
    return new Outcome(node, vote, 1_000_000, detail);
  }

  @Test
  void theSummarySaysEachMastersResultInWords() {
    List<Outcome> outcomes =
        AdmissionReport.explained(
            List.of(
                outcome("a:1", Vote.GRANTED, ""),
                outcome("b:2", Vote.TAKEN, ""),
                outcome("c:3", Vote.FAILED, "Connection refused")));
    String summary = AdmissionReport.summary(outcomes);
    assertEquals(
        "2 of 3 masters admitted: a:1 admitted; b:2 already admitted; c:3 not admitted:"
            + " unreachable (Connection refused): admit it once it answers, if it is new",
        summary);
    assertEquals("", outcomes.get(0).detail(), "an admitted master's detail stays empty");
  }

  @Test
  void aMasterThatWillNeverVoteIsToldWhyWithoutTheRestartGuardsAdvice() {
    String replica =
        AdmissionReport.why(Vote.FAILED, "READONLY You can't write against a read only replica.");
    String password =
        AdmissionReport.why(
            Vote.FAILED,
            "AUTH refused: WRONGPASS invalid username-password pair or user is disabled.");
    String info =
        AdmissionReport.why(
            Vote.FAILED,
            "cannot admit: the server run is unknown (INFO refused: NOPERM this user has no"
                + " permissions to run the 'info' command)");
    String replica62 =
        AdmissionReport.why(
            Vote.FAILED,
            "ERR Error running script (call to f_58c2fd99): @user_script:18: @user_script: 18:"
                + " -READONLY You can't write against a read only replica.");
    assertTrue(replica.startsWith("a replica, not a master"), replica);
    assertTrue(replica62.startsWith("a replica, not a master"), "Redis 6.2's words: " + replica62);
    assertTrue(password.startsWith("authentication refused"), password);
    assertTrue(password.contains("check the user and password"), password);
    assertTrue(info.startsWith("permission denied"), info);
    assertTrue(info.contains("lacks info"), info);
    for (String why : List.of(replica, password, info)) {
      assertFalse(why.contains("votes in"), why);
      assertFalse(why.contains("once admitted"), why);
      assertFalse(why.contains("admit it once it answers"), why);
    }
  }

  @Test
  void aMasterThatDidNotAnswerInTimeIsToldToBeAdmittedOnceItAnswers() {
    assertTrue(
        AdmissionReport.why(Vote.TIMED_OUT, "")
            .startsWith("no answer within the node timeout: admit it once it answers"));
  }
}
