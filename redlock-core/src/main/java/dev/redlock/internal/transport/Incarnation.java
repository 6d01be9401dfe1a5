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
 * carries a single command. A run whose uptime is below the guard's age does not vote, unless its
 * persistence loses nothing ({@code appendonly yes} with {@code appendfsync always}) or an operator
 * admitted that very run with its dataset ({@link RestartGuardRule}).
 *
 * @param runId the server's {@code run_id}, or null when it could not be read
 * @param startedAtNanos when the run started, on the pipeline's ticker: the uptime read at the
 *     handshake, less a second, taken back from the moment the handshake ended (Redis's uptime is
 *     the difference of two whole seconds, up to a second more than the run has been up, so the run
 *     is taken to be younger than it is, never older); or the moment a different server was found
 *     behind the address (see {@link #after})
 * @param lossless whether the server's persistence loses no acknowledged write on a restart
 * @param replaced whether a different server (another {@code run_id}, up since before the last one
 *     was last heard) now answers at this address: a failover, not a restart
 * @param unknown why the run cannot be vouched for (its {@code INFO} was refused or unreadable), or
 *     null
 */
record Incarnation(
    String runId, long startedAtNanos, boolean lossless, boolean replaced, String unknown) {

  /** What a link learned in its handshake, before the pipeline dates it on its own ticker. */
  record Facts(String runId, long uptimeSeconds, boolean lossless, String unknown) {

    /** Facts for a link whose handshake could not read the server's run (INFO refused). */
    static Facts unknown(String why) {
      return new Facts(null, -1, false, why);
    }

    /**
     * Reads the answers to {@code INFO server} and {@code CONFIG GET append*}; either may be a
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
     * Whether {@code CONFIG GET append*} says every acknowledged write is on disk: {@code
     * appendonly yes} and {@code appendfsync always}. Anything else, a refusal included, is not.
     */
    private static boolean lossless(Object config) {
      if (!(config instanceof List<?> pairs)) {
        return false;
      }
      String appendonly = null;
      String appendfsync = null;
      for (int i = 0; i + 1 < pairs.size(); i += 2) {
        if (pairs.get(i) instanceof byte[] name && pairs.get(i + 1) instanceof byte[] value) {
          String key = new String(name, StandardCharsets.US_ASCII);
          String text = new String(value, StandardCharsets.US_ASCII);
          if (key.equals("appendonly")) {
            appendonly = text;
          } else if (key.equals("appendfsync")) {
            appendfsync = text;
          }
        }
      }
      return "yes".equals(appendonly) && "always".equals(appendfsync);
    }
  }

  /**
   * Dates {@code facts} at {@code nowNanos}, the end of the handshake, and compares the run with
   * the one this address answered with before ({@code previous}, null for the first link), last
   * heard at {@code lastHeardNanos}: a run that was already up then is a different server, which is
   * dated from now.
   */
  static Incarnation after(Incarnation previous, long lastHeardNanos, Facts facts, long nowNanos) {
    if (facts.unknown() != null) {
      return new Incarnation(null, nowNanos, facts.lossless(), false, facts.unknown());
    }
    // Redis reports uptime_in_seconds as the whole seconds of now minus those of its start, up to
    // a second more than the run has been up (started at 10.9 s, asked at 11.1 s: 1 s): a second
    // is taken off, so that the run is taken to be younger than it is, never older.
    long started = nowNanos - TimeUnit.SECONDS.toNanos(Math.max(0, facts.uptimeSeconds() - 1));
    boolean replaced =
        previous != null
            && previous.runId() != null
            && !previous.runId().equals(facts.runId())
            && started - lastHeardNanos < 0;
    return new Incarnation(
        facts.runId(), replaced ? nowNanos : started, facts.lossless(), replaced, null);
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
    if (lossless && !replaced) {
      return null; // a restart of this server loses no acknowledged write
    }
    return RestartGuardRule.youngRun(nowNanos - startedAtNanos, guardNanos, replaced);
  }
}
