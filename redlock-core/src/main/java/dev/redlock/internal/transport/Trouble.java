package dev.redlock.internal.transport;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The kinds of misconfiguration a master's answers reveal, each with its own message and remedy:
 * what the exceptions and the log lines say instead of one headline for everything. {@link #of}
 * reads an outcome's vote and detail (the server's own error text, or the restart guard's reason),
 * so the exceptions, the log and the tests classify alike.
 */
public enum Trouble {
  /** The master cannot be reached: refused, timed out, unknown host, connection lost. */
  UNREACHABLE("unreachable"),
  /** The master refused the user or password ({@code WRONGPASS}, {@code NOAUTH}). */
  AUTHENTICATION("authentication refused"),
  /** The user's ACL denies a command (or a key) the library sends ({@code NOPERM}). */
  PERMISSION("permission denied"),
  /** The URI's database number is not below the server's {@code databases} setting. */
  DATABASE("database index out of range"),
  /** The restart guard does not count the master's vote yet: restarted, new or flushed. */
  RESTART_GUARD("restart guard"),
  /**
   * Not the master's trouble: this client's own queue to it was full (too many of its commands
   * awaited the master's replies), so the command was not sent.
   */
  CLIENT_LIMIT("client's own limit");

  /** How the restart guard's remedy names the operator's act: the API call and the CLI. */
  public static final String ADMISSION =
      "RedLock.admitFreshNodes() or the CLI's `redlock admit --nodes ...`";

  /**
   * The restart guard's remedy, in the exceptions' and the inspection's words: admission, on a
   * brand-new cluster only.
   */
  public static final String ADMISSION_REMEDY =
      "On a brand-new cluster, admit them once, from one place: " + ADMISSION;

  /**
   * How {@link #deniedCommand} names a command that a script calls and the ACL denies: Redis names
   * no command then.
   */
  public static final String INSIDE_SCRIPT = "a command a script calls";

  /**
   * What a failure of this client's own queue means and what to do, in the exceptions' words: it
   * was not the master's doing, and a wait retries.
   */
  public static final String CLIENT_LIMIT_REMEDY =
      "this client's limit, not the master's: at most "
          + QueueLimit.COMMANDS
          + " of its commands await one master's replies, of which acquires may be "
          + QueueLimit.ACQUIRE_SHARE_PERCENT
          + "% (the rest is kept for the leases held; docs/how-it-works.md); a waiting acquire"
          + " retries, and fewer concurrent acquisitions on one RedLock avoid it";

  /** The key of each master's dataset-birth marker, for the preflight's read of it. */
  public static final String DATASET_MARKER_KEY = "redlock:dataset-born";

  /** The key of the server run an operator admitted on each master, for the preflight. */
  public static final String ADMITTED_KEY = "redlock:admitted";

  /** Where a {@code NOPERM} error names the command: {@code ... to run the 'evalsha' command}. */
  private static final Pattern DENIED = Pattern.compile("'([^' ]+)' command");

  private final String label;

  Trouble(String label) {
    this.label = label;
  }

  /**
   * Returns how the messages name this kind.
   *
   * @return e.g. {@code permission denied}
   */
  public String label() {
    return label;
  }

  /**
   * Classifies one master's answer.
   *
   * @param vote what the master answered, or why not
   * @param detail the outcome's detail: the error, or why the guard refused the vote
   * @return the kind of trouble, or null if the answer shows none (a vote, a timeout, an unfit
   *     master, a circuit breaker's skip)
   */
  public static Trouble of(Vote vote, String detail) {
    if (vote == Vote.RESTARTED) {
      return detail.contains("NOPERM") ? PERMISSION : RESTART_GUARD;
    }
    if (vote != Vote.FAILED) {
      return null;
    }
    return ofError(detail);
  }

  /**
   * Classifies a failure's message: a command's error or a connection attempt's.
   *
   * @param error the message
   * @return the kind, or null if it is none of them (an unfit master, a skip, a protocol error)
   */
  public static Trouble ofError(String error) {
    if (error.startsWith(QueueLimit.QUEUE_FULL)) {
      return CLIENT_LIMIT;
    }
    if (error.contains("WRONGPASS")
        || error.contains("NOAUTH")
        || error.contains("invalid password")
        || error.contains("invalid username-password")) {
      return AUTHENTICATION;
    }
    if (error.contains("NOPERM") || error.contains("can't run this command")) {
      return PERMISSION; // the second: a command a script calls, as Redis 7 words it
    }
    if (error.contains("DB index is out of range") || error.contains("invalid DB index")) {
      return DATABASE;
    }
    String lower = error.toLowerCase(Locale.ROOT);
    if (lower.contains("connection refused")
        || lower.contains("failed to connect")
        || lower.contains("timed out")
        || lower.contains("unknownhost")
        || lower.contains("unknown host")
        || lower.contains("no route to host")
        || lower.contains("network is unreachable")
        || lower.contains("connection reset")
        || lower.contains("connection closed")
        || lower.contains("broken pipe")
        || lower.contains("lookup of ")
        || lower.startsWith("connection dropped")
        || lower.equals("not connected")) {
      return UNREACHABLE;
    }
    return null;
  }

  /**
   * Returns the command a {@code NOPERM} error names, lower case, or {@code keys} when it refuses a
   * key, or {@code a command} when it names none.
   *
   * @param error the server's error, e.g. {@code NOPERM this user has no permissions to run the
   *     'evalsha' command}
   * @return e.g. {@code evalsha}
   */
  public static String deniedCommand(String error) {
    if (error.contains("can't run this command")) {
      return INSIDE_SCRIPT;
    }
    Matcher named = DENIED.matcher(error);
    if (named.find()) {
      return named.group(1).toLowerCase(Locale.ROOT);
    }
    return error.contains("key") ? "keys" : "a command";
  }

  /**
   * Returns what to do about this kind of trouble, for the log and the inspection.
   *
   * @return a sentence fragment
   */
  public String remedy() {
    return switch (this) {
      case UNREACHABLE -> "it counts as a failed vote until it answers";
      case AUTHENTICATION ->
          "check the user and password in its URI (redis://user:password@host:port)";
      case PERMISSION -> "docs/acl.md lists the permissions the library needs";
      case DATABASE ->
          "the URI's path (redis://host:port/N) must be below the server's 'databases' setting"
              + " (16 by default)";
      case RESTART_GUARD -> "on a brand-new cluster, admit it once, from one place: " + ADMISSION;
      case CLIENT_LIMIT -> CLIENT_LIMIT_REMEDY;
    };
  }

  /**
   * Returns what the library loses without {@code command}, for messages: see docs/acl.md.
   *
   * @param command a command {@link #deniedCommand} named
   * @return a sentence fragment
   */
  public static String costOf(String command) {
    return switch (command) {
      case "set", "time", "mget" -> "no lease can be acquired";
      case "evalsha", "eval" ->
          "leases cannot be released, extended, renewed or fenced, and masters cannot be admitted";
      case "get", "pexpire", "pttl", "del", INSIDE_SCRIPT ->
          "the scripts (release, extend, renewal, fencing, admission) fail: they call GET, SET,"
              + " DEL, PEXPIRE, PTTL and TIME";
      case "info" ->
          "the restart guard cannot see the master's restarts, so it never counts its vote";
      case "config|get", "config" ->
          "the restart guard cannot see that persistence loses nothing (appendfsync always)";
      case "keys" ->
          "the user's key patterns exclude the lock keys or the library's redlock:* keys";
      default -> "the library cannot run it";
    };
  }
}
