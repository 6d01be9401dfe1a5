package dev.redlock.faultproxy;

import java.util.Locale;
import java.util.Optional;

/** The two links of a proxied connection, named as Toxiproxy names a toxic's {@code stream}. */
enum Direction {
  /** Client to server. */
  UPSTREAM,
  /** Server to client. */
  DOWNSTREAM;

  /** The lowercase name used on the wire. */
  String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Parses a stream name case-insensitively, as Toxiproxy's {@code ParseDirection} does. */
  static Optional<Direction> parse(String value) {
    for (Direction direction : values()) {
      if (direction.wireName().equalsIgnoreCase(value)) {
        return Optional.of(direction);
      }
    }
    return Optional.empty();
  }
}
