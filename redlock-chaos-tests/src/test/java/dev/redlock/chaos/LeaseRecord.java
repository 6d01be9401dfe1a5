package dev.redlock.chaos;

import static java.util.Objects.requireNonNull;

/**
 * One lease as its holder saw it, on the shared monotonic clock ({@link System#nanoTime()}, which
 * on Linux is {@code CLOCK_MONOTONIC} and so comparable between JVMs on one machine).
 *
 * @param client who held it
 * @param resource what it was on
 * @param acquiredAt when {@code acquire}/{@code tryAcquire} returned it
 * @param validUntil the earlier of the start of its release and the deadline the library promised
 *     ({@code acquiredAt + remainingValidity}, moved by successful extends); never before {@code
 *     acquiredAt}
 * @param releasedAt when its holder began to release it; later than {@code validUntil} if it was
 *     kept past its deadline (a next holder that got in before then got in only because the
 *     masters' keys expired), else equal to it
 */
record LeaseRecord(
    String client, String resource, long acquiredAt, long validUntil, long releasedAt) {

  private static final String PREFIX = "LEASE";

  LeaseRecord {
    requireNonNull(client, "client");
    requireNonNull(resource, "resource");
    if (client.isBlank() || client.chars().anyMatch(Character::isWhitespace)) {
      throw new IllegalArgumentException("client must be one word: '" + client + "'");
    }
    if (resource.isBlank() || resource.chars().anyMatch(Character::isWhitespace)) {
      throw new IllegalArgumentException("resource must be one word: '" + resource + "'");
    }
    if (validUntil - acquiredAt < 0) {
      validUntil = acquiredAt; // a lease already expired when it was returned was never valid
    }
    if (releasedAt - validUntil < 0) {
      releasedAt = validUntil;
    }
  }

  /** A lease whose window ended at its release, or where it does not matter which. */
  LeaseRecord(String client, String resource, long acquiredAt, long validUntil) {
    this(client, resource, acquiredAt, validUntil, validUntil);
  }

  /** Whether it was kept past its deadline: its window ended there, not at its release. */
  boolean atDeadline() {
    return releasedAt - validUntil > 0;
  }

  /** How long the lease was valid, in nanoseconds. */
  long lengthNanos() {
    return validUntil - acquiredAt;
  }

  /**
   * One line for a worker's output: {@code LEASE client resource acquiredAt validUntil}, then
   * {@code releasedAt} if {@link #atDeadline}.
   */
  String toLine() {
    return PREFIX
        + " "
        + client
        + " "
        + resource
        + " "
        + acquiredAt
        + " "
        + validUntil
        + (atDeadline() ? " " + releasedAt : "");
  }

  /** Whether {@code line} is a lease line written by {@link #toLine()}. */
  static boolean isLine(String line) {
    return line.startsWith(PREFIX + " ");
  }

  /**
   * Parses a line written by {@link #toLine()}.
   *
   * @throws IllegalArgumentException if it is not one
   */
  static LeaseRecord parse(String line) {
    String[] fields = line.strip().split(" ");
    if (fields.length < 5 || fields.length > 6 || !fields[0].equals(PREFIX)) {
      throw new IllegalArgumentException("not a lease line: '" + line + "'");
    }
    try {
      return new LeaseRecord(
          fields[1],
          fields[2],
          Long.parseLong(fields[3]),
          Long.parseLong(fields[4]),
          Long.parseLong(fields[fields.length - 1]));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not a lease line: '" + line + "'", e);
    }
  }
}
