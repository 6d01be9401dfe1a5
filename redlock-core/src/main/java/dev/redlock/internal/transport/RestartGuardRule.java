package dev.redlock.internal.transport;

import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The restart guard's rule, in one place for the acquire's vote ({@link #judge}, which the quorum
 * layer applies to each master's answer) and the preflight, so that the two never tell one master's
 * story two ways.
 *
 * <p>A master's vote counts, with the guard on, when this client can see its server run ({@code
 * INFO}), its dataset has a birth marker, and
 *
 * <ol>
 *   <li>the dataset: its marker is the one the admission record ({@code redlock:admitted}, {@code
 *       <run_id> <marker>}) names ({@link #admitsDataset}), or at least the guard's time old by the
 *       master's clock; and
 *   <li>the server run: the record names it ({@link #admitsRun}), or names the run whose dataset it
 *       holds whole (restarts this client saw, each of a run configured to lose nothing), or its
 *       dataset has been kept the guard's time by this client's clock: since the run started, or
 *       since the first of such a chain of restarts did ({@link Incarnation}).
 * </ol>
 *
 * Why an admitted run with its admitted dataset needs no age: the guard's times exist because a
 * young run or dataset may have lost a key of a lease still valid. An admission says no lease can
 * have been lost on that run with that dataset; every key the run granted since is in the dataset,
 * whatever its TTL. So the admission names no lease time, and holds for every client whatever its
 * {@code maxLeaseTime}. What ends it changes one of the two it names: a restart has a new {@code
 * run_id}, even when a snapshot brings the record back (the run is then judged by its uptime); a
 * {@code FLUSHALL} removes the record and the marker; a failover to another server answers with
 * another {@code run_id}; a marker stored after the admitted one was lost (an eviction, a {@code
 * DEL}) is not the one the record names, so it counts only after each client's own guard time, as
 * any marker an acquire stores. docs/safety.md ("Restart guard") argues the cases.
 */
public final class RestartGuardRule {

  /** Where a refusal says when the master votes: {@code votes in 57 s}. */
  private static final Pattern VOTES_IN = Pattern.compile("votes in (\\d+) s");

  private RestartGuardRule() {}

  /**
   * When a refusal of the guard says the master votes on its own: {@code 57} for {@code ... votes
   * in 57 s, or once admitted}; -1 for a refusal that names no time (the server run is unseen).
   *
   * @param refusal a refusal's words, as {@link #judge} puts them in the reply's detail
   * @return seconds, rounded up; or -1
   */
  public static long votesInSeconds(String refusal) {
    Matcher in = VOTES_IN.matcher(refusal);
    return in.find() ? Long.parseLong(in.group(1)) : -1;
  }

  /**
   * Whether the admission record {@code record} admits both the server run {@code runId} and the
   * dataset whose birth marker is {@code marker}: then the master votes at once for every client.
   *
   * @param record the record's bytes as the master sent them, or null
   * @param runId the server run now answering, or null if unknown
   * @param marker the marker's bytes as the master sent them, or null
   * @return true only if the record names both
   */
  public static boolean admits(byte[] record, String runId, byte[] marker) {
    return admitsRun(record, runId) && admitsDataset(record, marker);
  }

  /**
   * Whether the admission record {@code record} admits the server run {@code runId}: the record is
   * {@code <run_id> <marker>}, as the admit script writes it. A record without the marker (written
   * before admissions named it) admits nothing.
   *
   * @param record the record's bytes as the master sent them, or null
   * @param runId the server run now answering, or null if unknown
   * @return true only if both are present and the record names that run
   */
  public static boolean admitsRun(byte[] record, String runId) {
    if (record == null || runId == null) {
      return false;
    }
    int run = runId.length();
    if (record.length < run + 2 || record[run] != ' ') {
      return false;
    }
    for (int i = 0; i < run; i++) {
      if (record[i] != (byte) runId.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether the admission record {@code record} admits the dataset whose birth marker is {@code
   * marker}: the record ends with a space and that marker.
   *
   * @param record the record's bytes as the master sent them, or null
   * @param marker the marker's bytes as the master sent them, or null
   * @return true only if both are present and the record names that marker
   */
  public static boolean admitsDataset(byte[] record, byte[] marker) {
    if (record == null || marker == null || marker.length == 0) {
      return false;
    }
    int at = record.length - marker.length;
    if (at < 2 || record[at - 1] != ' ') {
      return false;
    }
    for (int i = 0; i < marker.length; i++) {
      if (record[at + i] != marker[i]) {
        return false;
      }
    }
    return true;
  }

  /**
   * Why a dataset whose marker is {@code ageMillis} old does not count for a guard of {@code
   * guardMillis}, or null if it does.
   *
   * @param ageMillis the master's clock less the marker (negative after a clock step back)
   * @param guardMillis the guard's time
   * @return e.g. {@code dataset 12 s old: votes in 50 s, or once admitted}, or null
   */
  public static String youngDataset(long ageMillis, long guardMillis) {
    if (ageMillis >= guardMillis) {
      return null;
    }
    return "dataset "
        + Math.max(0, ageMillis) / 1000
        + " s old: votes in "
        + (guardMillis - ageMillis + 999) / 1000
        + " s, or once admitted";
  }

  /**
   * Why a server run up {@code upNanos} does not count for a guard of {@code guardNanos}, or null
   * if it does.
   *
   * @param upNanos how long the run has been up (or, if {@code replaced}, seen at this address)
   * @param guardNanos the guard's time
   * @param replaced whether a different server now answers at the address (a failover)
   * @return e.g. {@code restarted 3 s ago: votes in 59 s, or once admitted}, or null
   */
  public static String youngRun(long upNanos, long guardNanos, boolean replaced) {
    if (upNanos - guardNanos >= 0) {
      return null;
    }
    long inSeconds = TimeUnit.NANOSECONDS.toSeconds(guardNanos - upNanos + 999_999_999L);
    return (replaced
            ? "a different server answers at this address since "
                + TimeUnit.NANOSECONDS.toSeconds(upNanos)
                + " s ago"
            : "restarted " + TimeUnit.NANOSECONDS.toSeconds(upNanos) + " s ago")
        + ": votes in "
        + inSeconds
        + " s, or once admitted";
  }

  /**
   * Why a master whose server run this client cannot read never votes with the guard on.
   *
   * @param why what the handshake met, e.g. {@code INFO refused: NOPERM ...}
   * @return the refusal
   */
  public static String unseenRestarts(String why) {
    return "the restart guard cannot see this master's restarts (" + why + ")";
  }

  /**
   * The restart guard's decision on one master's answer to an acquire: RESTARTED, with why in its
   * detail, if the guard does not count the vote ({@link #refusal}); else the answer as it is (also
   * an answer that read nothing for the guard: a plain {@code SET}, or a scripted fake's). Made by
   * the quorum layer, never by the codec, which only reads what is judged here.
   *
   * @param reply the master's answer
   * @param guardMillis the guard's time; 0 without the guard
   * @return the vote as the guard counts it
   */
  public static NodeReply judge(NodeReply reply, long guardMillis) {
    NodeReply.GuardReading read = reply.reading();
    if (read == null || guardMillis <= 0 || reply.status() == Vote.RESTARTED) {
      return reply;
    }
    String young =
        refusal(
            read.incarnation(),
            read.born(),
            read.marker(),
            reply.timeMicros() / 1000,
            read.admitted(),
            guardMillis,
            read.writtenAtNanos());
    return young == null
        ? reply
        : new NodeReply(Vote.RESTARTED, reply.fence(), reply.timeMicros(), young, read);
  }

  /**
   * Why the restart guard does not count a master's vote in an acquire, or null if it does: this
   * client must see the server run; the dataset must have a birth marker (a {@code FLUSHALL}, or a
   * failover to an empty replica, removes it), the one its admission record names or one at least
   * {@code guardMillis} old by the master's clock; and the run must be the admitted one (or hold
   * the admitted run's dataset whole: restarts that lost nothing since), or its dataset be that old
   * too by this client's clock ({@link Incarnation#refusal}). The run's age is taken when the
   * command was written, before the master ran it: never more than its age then.
   *
   * @param incarnation the server run of the connection the acquire was written on, or null
   * @param born the dataset-birth marker's time (ms by the master's clock), or null if absent
   * @param marker the marker's bytes, or null
   * @param masterMillis the master's clock when the acquire ran
   * @param admitted the admission record's bytes, or null
   * @param guardMillis the guard's time
   * @param writtenAtNanos when the acquire was written, on the client's ticker
   * @return the refusal, or null if the vote counts
   */
  private static String refusal(
      Incarnation incarnation,
      Long born,
      byte[] marker,
      long masterMillis,
      byte[] admitted,
      long guardMillis,
      long writtenAtNanos) {
    if (incarnation == null) {
      return "the server run is unknown";
    }
    if (incarnation.unknown() != null) {
      return unseenRestarts(incarnation.unknown());
    }
    if (born == null) {
      return "no dataset-birth marker (a new, flushed or emptied dataset; one is stored now): votes in "
          + (guardMillis + 999) / 1000
          + " s, or once admitted";
    }
    if (!admitsDataset(admitted, marker)) {
      String young = youngDataset(masterMillis - born, guardMillis);
      if (young != null) {
        return young;
      }
    }
    if (admitsRun(admitted, incarnation.runId()) || admitsRun(admitted, incarnation.keptFrom())) {
      return null; // an operator vouched for this very run, or one whose dataset it holds whole
    }
    return incarnation.refusal(writtenAtNanos, TimeUnit.MILLISECONDS.toNanos(guardMillis));
  }
}
