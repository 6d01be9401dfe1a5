package dev.redlock.faultproxy;

import com.google.gson.JsonObject;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Predicate;

/**
 * One toxic's configuration, immutable: an update yields a new instance with the same name, type
 * and stream. The per-connection behaviour lives in {@link Stage}.
 */
final class Toxic {
  private final String name;
  private final ToxicType type;
  private final Direction stream;
  private final float toxicity;
  private final Map<String, Long> attributes;

  private Toxic(
      String name, ToxicType type, Direction stream, float toxicity, Map<String, Long> attributes) {
    this.name = name;
    this.type = type;
    this.stream = stream;
    this.toxicity = toxicity;
    this.attributes = Collections.unmodifiableMap(attributes);
  }

  /**
   * Builds a toxic from a create request, checking in the order Toxiproxy's {@code AddToxicJson}
   * does: stream, default name, type, duplicate name, attributes.
   */
  static Toxic create(JsonObject body, Predicate<String> nameTaken) throws ApiException {
    String streamField = JsonFields.string(body, "stream");
    String typeField = JsonFields.string(body, "type");
    String nameField = JsonFields.string(body, "name");
    Float toxicityField = JsonFields.decimal(body, "toxicity");
    Direction stream =
        Direction.parse(streamField == null ? "downstream" : streamField)
            .orElseThrow(
                () ->
                    new ApiException(
                        400, "stream was invalid, can be either upstream or downstream"));
    String typeName = typeField == null ? "" : typeField;
    String name =
        nameField == null || nameField.isEmpty() ? typeName + "_" + stream.wireName() : nameField;
    ToxicType type =
        ToxicType.byWireName(typeName)
            .orElseThrow(() -> new ApiException(400, "invalid toxic type"));
    if (nameTaken.test(name)) {
      throw new ApiException(409, "toxic already exists");
    }
    Map<String, Long> attributes = new LinkedHashMap<>();
    type.attributeNames().forEach(key -> attributes.put(key, 0L));
    mergeAttributes(attributes, JsonFields.child(body, "attributes"));
    return new Toxic(name, type, stream, toxicityField == null ? 1.0f : toxicityField, attributes);
  }

  /**
   * Applies an update request: attributes are merged into the current ones and a missing toxicity
   * keeps its value; name, type and stream never change.
   */
  Toxic update(JsonObject body) throws ApiException {
    Map<String, Long> merged = new LinkedHashMap<>(attributes);
    mergeAttributes(merged, JsonFields.child(body, "attributes"));
    Float toxicityField = JsonFields.decimal(body, "toxicity");
    return new Toxic(name, type, stream, toxicityField == null ? toxicity : toxicityField, merged);
  }

  private static void mergeAttributes(Map<String, Long> into, JsonObject given)
      throws ApiException {
    if (given == null) {
      return;
    }
    for (String key : into.keySet()) {
      Long value = JsonFields.integer(given, key);
      if (value != null) {
        into.put(key, value);
      }
    }
  }

  String name() {
    return name;
  }

  ToxicType type() {
    return type;
  }

  Direction stream() {
    return stream;
  }

  /** The fraction of connections this toxic affects, drawn per connection per start. */
  float toxicity() {
    return toxicity;
  }

  /** One attribute's value; every attribute of the type is always present. */
  long attribute(String key) {
    Long value = attributes.get(key);
    if (value == null) {
      throw new IllegalArgumentException(type.wireName() + " has no attribute " + key);
    }
    return value;
  }

  /** The toxic as Toxiproxy renders it, every attribute key included. */
  JsonObject toJson() {
    JsonObject attributesJson = new JsonObject();
    attributes.forEach(attributesJson::addProperty);
    JsonObject json = new JsonObject();
    json.add("attributes", attributesJson);
    json.addProperty("name", name);
    json.addProperty("type", type.wireName());
    json.addProperty("stream", stream.wireName());
    json.addProperty("toxicity", toxicity);
    return json;
  }

  @Override
  public String toString() {
    return toJson().toString();
  }
}
