package dev.redlock.internal.lease;

import dev.redlock.internal.transport.Trouble;
import dev.redlock.internal.transport.Vote;
import java.util.ArrayList;
import java.util.List;

/**
 * What an admission did to each master, in words: admitted, already admitted, or not admitted and
 * why, with the remedy for that cause. A master that will never vote (a replica, a refused password
 * or permission) is told so, not given the restart guard's advice. Pure: the log and the outcomes
 * that {@code admitFreshNodes()} returns are built from it.
 */
final class AdmissionReport {

  private AdmissionReport() {}

  /** Whether the master is admitted after the call: by it, or already. */
  static boolean admitted(Outcome outcome) {
    return outcome.vote() == Vote.GRANTED || outcome.vote() == Vote.TAKEN;
  }

  /**
   * Returns the outcomes as the caller sees them: a master not admitted carries why, in words, in
   * its detail.
   */
  static List<Outcome> explained(List<Outcome> outcomes) {
    List<Outcome> explained = new ArrayList<>(outcomes.size());
    for (Outcome outcome : outcomes) {
      explained.add(
          admitted(outcome)
              ? outcome
              : new Outcome(
                  outcome.node(),
                  outcome.vote(),
                  outcome.elapsedNanos(),
                  why(outcome.vote(), outcome.detail())));
    }
    return explained;
  }

  /**
   * One master's result: {@code admitted}, {@code already admitted} or {@code not admitted: ...}.
   */
  static String words(Outcome outcome) {
    return switch (outcome.vote()) {
      case GRANTED -> "admitted";
      case TAKEN -> "already admitted";
      default -> "not admitted: " + outcome.detail();
    };
  }

  /** The line the log shows: how many were admitted, and each master's result. */
  static String summary(List<Outcome> outcomes) {
    int admitted = 0;
    StringBuilder each = new StringBuilder();
    for (Outcome outcome : outcomes) {
      admitted += admitted(outcome) ? 1 : 0;
      each.append(each.length() == 0 ? "" : "; ").append(outcome.node()).append(' ');
      each.append(words(outcome));
    }
    return admitted + " of " + outcomes.size() + " masters admitted: " + each;
  }

  /**
   * Why a master was not admitted, and what to do: {@code vote} is what the admit answered, {@code
   * detail} the transport's or the server's words.
   */
  static String why(Vote vote, String detail) {
    if (vote == Vote.TIMED_OUT || vote == Vote.PENDING) {
      return "no answer within the node timeout"
          + (detail.isEmpty() ? "" : " (" + detail + ")")
          + ": admit it once it answers, if it is new";
    }
    // Redis 7 answers a write in a script on a replica with READONLY; Redis 6.2 wraps it in the
    // script's error ("ERR Error running script ... -READONLY You can't write ...").
    if (detail.startsWith("READONLY") || detail.contains("-READONLY ")) {
      return "a replica, not a master ("
          + detail
          + "): it never votes, admitted or not; give the library masters only";
    }
    Trouble trouble = vote == Vote.FAILED ? Trouble.ofError(detail) : null;
    if (trouble == null) {
      return detail.isEmpty() ? vote.toString() : detail;
    }
    return switch (trouble) {
      case AUTHENTICATION ->
          detail.startsWith(Trouble.AUTHENTICATION.label())
              ? detail // the transport's words already name the cause and the remedy
              : trouble.label() + " (" + detail + "): " + trouble.remedy();
      case PERMISSION -> {
        String command = Trouble.deniedCommand(detail);
        yield trouble.label()
            + " ("
            + detail
            + "): the ACL user lacks "
            + command
            + " ("
            + Trouble.costOf(command)
            + "); "
            + trouble.remedy();
      }
      case UNREACHABLE ->
          trouble.label() + " (" + detail + "): admit it once it answers, if it is new";
      default -> trouble.label() + " (" + detail + "): " + trouble.remedy();
    };
  }
}
