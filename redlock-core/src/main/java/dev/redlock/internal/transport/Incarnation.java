package dev.redlock.internal.transport;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One run of a master's server process, as a connection's handshake saw it: what the restart guard
 * needs to tell a master that may have lost keys in a restart from one that has kept every key
 * since before the longest lease began.
 *
 * <p>Why the handshake and not the dataset. A master that restarts reloads whatever its persistence
 * kept: nothing without persistence, an older snapshot with RDB {@code save} rules, the last second
 * or so with AOF {@code everysec}. A reloaded snapshot brings back the dataset-birth marker but not
 * the lock keys written after it, so the marker alone cannot see such a restart. The server itself
 * can: every restart has a new {@code run_id} and starts {@code uptime_in_seconds} again, and every
 * restart breaks the connection, so each new connection asks ({@code INFO server}) before it
 * carries a single command. A run whose uptime is below the guard's age does not vote, unless an
 * operator admitted that very run with its dataset ({@link RestartGuardRule}), or the run before
 * it, as this client last saw it, lost nothing in the restart.
 *
 * <p>What "lost nothing" takes. A restart keeps every acknowledged write only if the run that
 * stopped had {@code appendonly yes}, {@code appendfsync always} and {@code
 * no-appendfsync-on-rewrite no} (with {@code yes}, writes during an AOF rewrite are not fsynced,
 * and a crash then loses them). The new run's configuration says nothing about that: set to {@code
 * always} at the restart, it has already lost what the old run did not fsync. So the dataset is
 * dated from the new run's start unless this client saw the run before it configured to lose
 * nothing; then it is dated as that run's was, and a chain of such restarts keeps the date of the
 * first run this client saw. A run seen for the first time is dated from its start whatever its
 * configuration (this client never saw the one before). Not seen: a change of configuration made at
 * run time after this client's handshake ({@code CONFIG SET}), and a run that came and went between
 * two of this client's connections.
 *
 * @param runId the server's {@code run_id}, or null when it could not be read
 * @param keptSinceNanos since when, on the pipeline's ticker, this address's dataset is known to
 *     hold every write acknowledged: when the run started (the uptime read at the handshake, less a
 *     second, taken back from the moment the handshake ended: Redis's uptime is the difference of
 *     two whole seconds, up to a second more than the run has been up, so the run is taken to be
 *     younger than it is, never older); or the moment a different server was found behind the
 *     address; or, after a restart of a run that lost nothing, the date that run's dataset had (see
 *     {@link #after})
 * @param keptFrom the run whose dataset this one holds whole: itself, or after restarts that lost
 *     nothing, the first run of them this client saw (an operator's admission of that run vouches
 *     for this one too), or null when the run is unknown
 * @param lossless whether this run's persistence, as its handshake read it, loses no acknowledged
 *     write on a restart (what the next run's dating asks of it)
 * @param replaced whether a different server (another {@code run_id}, up since before the last one
 *     was last heard) now answers at this address: a failover, not a restart
 * @param unknown why the run cannot be vouched for (its {@code INFO} was refused or unreadable), or
 *     null
 */
record Incarnation(
    String runId,
    long keptSinceNanos,
    String keptFrom,
    boolean lossless,
    boolean replaced,
    String unknown) {

  /** What a link learned in its handshake, before the pipeline dates it on its own ticker. */
  record Facts(String runId, long uptimeSeconds, boolean lossless, String unknown) {

    /** Facts for a link whose handshake could not read the server's run (INFO refused). */
    static Facts unknown(String why) {
      return new Facts(null, -1, false, why);
    }

    /**
     * Reads the answers to {@code INFO server} and {@code CONFIG GET *append*}; either may be a
     * {@link ServerError} (an ACL that forbids it) or anything unexpected.
     */
    static Facts of(Object info, Object config) {
      boolean lossless = lossless(config);
      if (info instanceof ServerError error) {
        return new Facts(null, -1, lossless, "INFO refused: " + error.firstLine());
      }
      if (!(info instanceof byte[] bytes)) {
        return new Facts(null, -1, lossless, "INFO server answered no text");
      }
      String runId = null;
      long uptime = -1;
      for (String line : new String(bytes, StandardCharsets.UTF_8).split("\r?\n")) {
        if (line.startsWith("run_id:")) {
          runId = line.substring("run_id:".length()).trim();
        } else if (line.startsWith("uptime_in_seconds:")) {
          try {
            uptime = Long.parseLong(line.substring("uptime_in_seconds:".length()).trim());
          } catch (NumberFormatException e) {
            uptime = -1;
          }
        }
      }
      if (runId == null || runId.isEmpty() || uptime < 0) {
        return new Facts(null, -1, lossless, "INFO server has no run_id or uptime_in_seconds");
      }
      return new Facts(runId, uptime, lossless, null);
    }

    /**
     * Whether {@code CONFIG GET *append*} says every acknowledged write is on disk: {@code
     * appendonly yes}, {@code appendfsync always} and {@code no-appendfsync-on-rewrite no}.
     * Anything else, a refusal or a missing parameter included, is not.
     */
    private static boolean lossless(Object config) {
      if (!(config instanceof List<?> pairs)) {
        return false;
      }
      String appendonly = null;
      String appendfsync = null;
      String noFsyncOnRewrite = null;
      for (int i = 0; i + 1 < pairs.size(); i += 2) {
        if (pairs.get(i) instanceof byte[] name && pairs.get(i + 1) instanceof byte[] value) {
          String key = new String(name, StandardCharsets.US_ASCII);
          String text = new String(value, StandardCharsets.US_ASCII);
          if (key.equals("appendonly")) {
            appendonly = text;
          } else if (key.equals("appendfsync")) {
            appendfsync = text;
          } else if (key.equals("no-appendfsync-on-rewrite")) {
            noFsyncOnRewrite = text;
          }
        }
      }
      return "yes".equals(appendonly)
          && "always".equals(appendfsync)
          && "no".equals(noFsyncOnRewrite);
    }
  }

  /**
   * Dates {@code facts} at {@code nowNanos}, the end of the handshake, and compares the run with
   * the one this address answered with before ({@code previous}, null for the first link), last
   * heard at {@code lastHeardNanos}: a run that was already up then is a different server, which is
   * dated from now; the same run keeps its date (a reconnection loses nothing); a restart of a run
   * that lost nothing keeps that run's date; any other run is dated from its start.
   */
  static Incarnation after(Incarnation previous, long lastHeardNanos, Facts facts, long nowNanos) {
    if (facts.unknown() != null) {
      return new Incarnation(null, nowNanos, null, facts.lossless(), false, facts.unknown());
    }
    // Redis reports uptime_in_seconds as the whole seconds of now minus those of its start, up to
    // a second more than the run has been up (started at 10.9 s, asked at 11.1 s: 1 s): a second
    // is taken off, so that the run is taken to be younger than it is, never older.
    long started = nowNanos - TimeUnit.SECONDS.toNanos(Math.max(0, facts.uptimeSeconds() - 1));
    boolean seen = previous != null && previous.runId() != null;
    if (seen && previous.runId().equals(facts.runId())) {
      return new Incarnation(
          facts.runId(),
          previous.keptSinceNanos(),
          previous.keptFrom(),
          facts.lossless(),
          previous.replaced(),
          null);
    }
    boolean replaced = seen && started - lastHeardNanos < 0;
    if (!replaced && seen && previous.lossless()) {
      return new Incarnation(
          facts.runId(),
          previous.keptSinceNanos(),
          previous.keptFrom(),
          facts.lossless(),
          false,
          null);
    }
    return new Incarnation(
        facts.runId(),
        replaced ? nowNanos : started,
        facts.runId(),
        facts.lossless(),
        replaced,
        null);
  }

  /**
   * Why this run may not vote for a lease at {@code nowNanos} with a guard of {@code guardNanos},
   * or null if it may. An admission is not asked here: {@link RestartGuardRule#admits} is, before
   * the dataset's age, since it vouches for both.
   */
  String refusal(long nowNanos, long guardNanos) {
    if (unknown != null) {
      return RestartGuardRule.unseenRestarts(unknown);
    }
    return RestartGuardRule.youngRun(nowNanos - keptSinceNanos, guardNanos, replaced);
  }
}
