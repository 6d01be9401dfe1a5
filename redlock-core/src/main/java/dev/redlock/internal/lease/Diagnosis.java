package dev.redlock.internal.lease;

import dev.redlock.internal.preflight.FitNodeClient;
import dev.redlock.internal.transport.RestartGuardRule;
import dev.redlock.internal.transport.Trouble;
import dev.redlock.internal.transport.Vote;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Why a round reached no quorum, in words that say what to do: one sentence per kind of trouble
 * ({@link Trouble}) the masters' answers show, naming the masters, and the remedy. Pure: the
 * exceptions' messages are built from it, and it is tested on its own.
 */
public final class Diagnosis {

  private Diagnosis() {}

  /**
   * Explains a round that reached no quorum.
   *
   * @param outcomes what each master answered
   * @param quorum how many masters must grant
   * @param guardMillis how long the restart guard keeps a young master from voting; 0 without it
   * @return e.g. {@code no quorum (3 of 5 masters must grant, 0 did): the restart guard does not
   *     count the votes of 5 masters (...) ...}
   */
  public static String explain(List<Outcome> outcomes, int quorum, long guardMillis) {
    int granted = 0;
    int timedOut = 0;
    int pending = 0;
    int notAsked = 0;
    int taken = 0;
    List<Outcome> unfit = new ArrayList<>();
    Map<String, List<Outcome>> otherFailures = new LinkedHashMap<>();
    Map<Trouble, List<Outcome>> troubles = new EnumMap<>(Trouble.class);
    for (Outcome outcome : outcomes) {
      Trouble trouble = Trouble.of(outcome.vote(), outcome.detail());
      switch (outcome.vote()) {
        case GRANTED -> granted++;
        case TIMED_OUT -> timedOut++;
        case PENDING -> {
          if (outcome.detail().equals(QuorumRound.NOT_ASKED.detail())) {
            notAsked++; // the round asked no one: too few could vote
          } else {
            pending++;
          }
        }
        case TAKEN, GONE -> taken++;
        case FAILED -> {
          if (outcome.detail().startsWith(FitNodeClient.UNFIT)) {
            unfit.add(outcome);
          } else if (trouble == null) {
            otherFailures.computeIfAbsent(outcome.detail(), d -> new ArrayList<>()).add(outcome);
          }
        }
        default -> {}
      }
      if (trouble != null) {
        troubles.computeIfAbsent(trouble, t -> new ArrayList<>()).add(outcome);
      }
    }
    if (granted >= quorum) {
      return tooLittleValidity(outcomes, quorum, granted);
    }
    StringBuilder out =
        new StringBuilder("no quorum (")
            .append(quorum)
            .append(" of ")
            .append(outcomes.size())
            .append(" masters must grant, ")
            .append(granted)
            .append(" did)");
    if (troubles.isEmpty() && unfit.isEmpty() && otherFailures.isEmpty() && pending == 0) {
      return out.append(": too few masters answered in time").toString();
    }
    if (!unfit.isEmpty()) {
      out.append("; ").append(unfit(unfit, outcomes.size(), quorum));
    }
    for (Map.Entry<Trouble, List<Outcome>> entry : troubles.entrySet()) {
      out.append("; ").append(sentence(entry.getKey(), entry.getValue(), guardMillis));
    }
    for (Map.Entry<String, List<Outcome>> entry : otherFailures.entrySet()) {
      out.append("; ")
          .append(masters(entry.getValue().size()))
          .append(" failed (")
          .append(names(entry.getValue()))
          .append(entry.getKey().isEmpty() ? "" : ": " + entry.getKey())
          .append(")");
    }
    if (timedOut > 0) {
      out.append("; ").append(masters(timedOut)).append(" did not answer within the node timeout");
    }
    if (taken > 0) {
      out.append("; ").append(masters(taken)).append(" refused: the lock is held there");
    }
    if (notAsked > 0) {
      out.append("; ")
          .append(masters(notAsked))
          .append(" not asked: the others leave too few masters that may vote for this client");
    }
    if (pending > 0) {
      out.append("; ")
          .append(masters(pending))
          .append(" not heard from: the round was decided before")
          .append(pending == 1 ? " its answer" : " their answers");
    }
    return out.toString();
  }

  /**
   * A round a quorum granted that still gave no lease: what was left of the TTL after the round's
   * time and the clock-drift allowance was not above the least validity a lease must have. Saying
   * "no quorum" there (as before) sent the reader after masters that had all granted.
   */
  private static String tooLittleValidity(List<Outcome> outcomes, int quorum, int granted) {
    long slowest = 0;
    for (Outcome outcome : outcomes) {
      if (outcome.vote() == Vote.GRANTED) {
        slowest = Math.max(slowest, outcome.elapsedNanos());
      }
    }
    return "too little validity left ("
        + granted
        + " of "
        + outcomes.size()
        + " masters granted, "
        + quorum
        + " must): the TTL less the round's time (the slowest grant came after "
        + slowest / 1_000 / 1000.0
        + " ms) and the clock-drift allowance was not above the least validity a lease must have"
        + " (minValidity); give a longer TTL or a lower minValidity, or find why the masters"
        + " answered slowly";
  }

  /**
   * A clause naming this client's own limit, with its remedy, for a failed wait some of whose
   * rounds it kept from a master ({@link Attempt#heldBack}): {@code "; some rounds of the wait were
   * not sent to 1 master (...): this client's own queue ..."}. Empty if none was, or if {@code
   * explained} and the attempt's own round shows it (then {@link #explain} names it already).
   *
   * @param attempt the wait's last attempt
   * @param explained whether the caller's message explains the attempt's own outcomes
   * @return the clause, or empty
   */
  public static String heldBack(Attempt attempt, boolean explained) {
    Outcome outcome = attempt.heldBack();
    if (outcome == null || (explained && Attempt.heldBackIn(attempt.outcomes()) != null)) {
      return "";
    }
    return "; some rounds of the wait were " + sentence(Trouble.CLIENT_LIMIT, List.of(outcome), 0);
  }

  /**
   * The masters kept from voting as unfit, each with why, how many can vote beside the quorum, and
   * the remedy.
   */
  private static String unfit(List<Outcome> unfit, int masters, int quorum) {
    StringBuilder out =
        new StringBuilder()
            .append(masters(unfit.size()))
            .append(" excluded as unfit for Redlock (");
    for (int i = 0; i < unfit.size(); i++) {
      out.append(i == 0 ? "" : "; ")
          .append(unfit.get(i).node())
          .append(": ")
          .append(unfit.get(i).detail().substring(FitNodeClient.UNFIT.length()));
    }
    int voting = masters - unfit.size();
    out.append("), so ")
        .append(voting)
        .append(" of ")
        .append(masters)
        .append(" masters can vote, ")
        .append(quorum)
        .append(" needed");
    if (voting < quorum) {
      out.append(": no lease can be granted until enough of them are corrected");
    }
    return out.append(". Remedy: ").append(FitNodeClient.REMEDY).toString();
  }

  private static String masters(int count) {
    return count == 1 ? "1 master" : count + " masters";
  }

  /** One kind of trouble, its masters and its remedy. */
  static String sentence(Trouble trouble, List<Outcome> masters, long guardMillis) {
    String names = names(masters);
    String count = masters(masters.size());
    return switch (trouble) {
      case RESTART_GUARD -> restartGuard(masters, count, guardMillis);
      case AUTHENTICATION ->
          "authentication refused by "
              + count
              + " ("
              + names
              + ": "
              + masters.get(0).detail()
              + "): check the user and password in the URI (redis://user:password@host:port)";
      case DATABASE ->
          "database index out of range on "
              + count
              + " ("
              + names
              + "): the URI's path (redis://host:port/N) must be below the server's 'databases'"
              + " setting (16 by default)";
      case PERMISSION -> permission(masters, count, names);
      case UNREACHABLE ->
          count
              + " unreachable ("
              + names
              + ": "
              + masters.get(0).detail()
              + "): each counts as a failed vote until it answers";
      case CLIENT_LIMIT ->
          "not sent to "
              + count
              + " ("
              + names
              + "): "
              + masters.get(0).detail()
              + "; "
              + Trouble.CLIENT_LIMIT_REMEDY;
    };
  }

  private static String restartGuard(List<Outcome> masters, String count, long guardMillis) {
    long latest = -1;
    for (Outcome outcome : masters) {
      long in = RestartGuardRule.votesInSeconds(outcome.detail());
      if (in >= 0) {
        latest = Math.max(latest, in);
      } else if (guardMillis > 0) {
        latest = Math.max(latest, TimeUnit.MILLISECONDS.toSeconds(guardMillis + 999));
      }
    }
    StringBuilder out =
        new StringBuilder("the restart guard does not count the votes of ")
            .append(count)
            .append(" (");
    for (int i = 0; i < masters.size(); i++) {
      out.append(i == 0 ? "" : ", ")
          .append(masters.get(i).node())
          .append(": ")
          .append(masters.get(i).detail());
    }
    out.append(
        "): a master whose server run or dataset is younger than the maximum lease time may have"
            + " lost locks in a restart, and a brand-new one looks the same; ");
    out.append(
        latest >= 0
            ? "they vote on their own in " + latest + " s at the latest"
            : "they vote on their own once that old");
    return out.append(
            ". On a brand-new cluster, admit them once, from one place: "
                + Trouble.ADMISSION
                + " (see docs/troubleshooting.md)")
        .toString();
  }

  private static String permission(List<Outcome> masters, String count, String names) {
    Set<String> commands = new LinkedHashSet<>();
    for (Outcome outcome : masters) {
      commands.add(Trouble.deniedCommand(outcome.detail()));
    }
    StringBuilder costs = new StringBuilder();
    for (String command : commands) {
      costs.append(costs.length() == 0 ? "" : "; ").append(command).append(": ");
      costs.append(Trouble.costOf(command));
    }
    return "permission denied on "
        + count
        + " ("
        + names
        + ": "
        + masters.get(0).detail()
        + "): the ACL user lacks "
        + String.join(", ", commands)
        + " ("
        + costs
        + "); docs/acl.md lists the permissions the library needs";
  }

  private static String names(List<Outcome> masters) {
    StringBuilder names = new StringBuilder();
    for (Outcome outcome : masters) {
      names.append(names.length() == 0 ? "" : ", ").append(outcome.node());
    }
    return names.toString();
  }
}
