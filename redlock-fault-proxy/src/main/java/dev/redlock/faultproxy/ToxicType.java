package dev.redlock.faultproxy;

import java.util.List;
import java.util.Optional;

/** The toxic types Toxiproxy 2.x ships, with their attribute names in Toxiproxy's JSON order. */
enum ToxicType {
  LATENCY("latency", "latency", "jitter"),
  BANDWIDTH("bandwidth", "rate"),
  SLOW_CLOSE("slow_close", "delay"),
  TIMEOUT("timeout", "timeout"),
  RESET_PEER("reset_peer", "timeout"),
  SLICER("slicer", "average_size", "size_variation", "delay"),
  LIMIT_DATA("limit_data", "bytes");

  private final String wireName;
  private final List<String> attributeNames;

  ToxicType(String wireName, String... attributeNames) {
    this.wireName = wireName;
    this.attributeNames = List.of(attributeNames);
  }

  /** The type as written in JSON, for example {@code slow_close}. */
  String wireName() {
    return wireName;
  }

  /** Every attribute this type has; all of them always appear in its JSON. */
  List<String> attributeNames() {
    return attributeNames;
  }

  /** Looks a type up by its exact wire name (Toxiproxy's registry is case-sensitive). */
  static Optional<ToxicType> byWireName(String wireName) {
    for (ToxicType type : values()) {
      if (type.wireName.equals(wireName)) {
        return Optional.of(type);
      }
    }
    return Optional.empty();
  }
}
