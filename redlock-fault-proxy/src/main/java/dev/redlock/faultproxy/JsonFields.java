package dev.redlock.faultproxy;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;

/**
 * Typed reads of request bodies. A field that is absent or JSON {@code null} reads as {@code null}
 * (the caller keeps its default, as Go's decoder does); a field of the wrong type is a 400 {@code
 * bad request body} error.
 */
final class JsonFields {
  private JsonFields() {}

  /** Parses a body that must hold a JSON object; an empty body counts as {@code {}}. */
  static JsonObject object(byte[] body) throws ApiException {
    String text = new String(body, StandardCharsets.UTF_8);
    if (text.isBlank()) {
      return new JsonObject();
    }
    JsonElement element = parse(text);
    if (!element.isJsonObject()) {
      throw ApiException.badRequestBody("expected a JSON object");
    }
    return element.getAsJsonObject();
  }

  /** Parses any JSON body; an empty body is an error here, like Go's {@code EOF}. */
  static JsonElement element(byte[] body) throws ApiException {
    String text = new String(body, StandardCharsets.UTF_8);
    if (text.isBlank()) {
      throw ApiException.badRequestBody("EOF");
    }
    return parse(text);
  }

  private static JsonElement parse(String text) throws ApiException {
    try {
      return JsonParser.parseString(text);
    } catch (JsonParseException e) {
      throw ApiException.badRequestBody(String.valueOf(e.getMessage()));
    }
  }

  /** Returns the string field, or {@code null} when absent. */
  static String string(JsonObject object, String field) throws ApiException {
    JsonElement value = present(object, field);
    if (value == null) {
      return null;
    }
    if (value.isJsonPrimitive() && value.getAsJsonPrimitive().isString()) {
      return value.getAsString();
    }
    throw wrongType(field, "string");
  }

  /** Returns the boolean field, or {@code null} when absent. */
  static Boolean bool(JsonObject object, String field) throws ApiException {
    JsonElement value = present(object, field);
    if (value == null) {
      return null;
    }
    if (value.isJsonPrimitive() && value.getAsJsonPrimitive().isBoolean()) {
      return value.getAsBoolean();
    }
    throw wrongType(field, "bool");
  }

  /** Returns the number field as a float, or {@code null} when absent. */
  static Float decimal(JsonObject object, String field) throws ApiException {
    JsonPrimitive number = number(object, field, "float32");
    return number == null ? null : number.getAsFloat();
  }

  /** Returns the integral number field, or {@code null} when absent. */
  static Long integer(JsonObject object, String field) throws ApiException {
    JsonPrimitive number = number(object, field, "int64");
    if (number == null) {
      return null;
    }
    try {
      return number.getAsBigDecimal().longValueExact();
    } catch (ArithmeticException | NumberFormatException e) {
      throw wrongType(field, "int64");
    }
  }

  /** Returns the object field, or {@code null} when absent. */
  static JsonObject child(JsonObject object, String field) throws ApiException {
    JsonElement value = present(object, field);
    if (value == null) {
      return null;
    }
    if (value.isJsonObject()) {
      return value.getAsJsonObject();
    }
    throw wrongType(field, "object");
  }

  private static JsonPrimitive number(JsonObject object, String field, String goType)
      throws ApiException {
    JsonElement value = present(object, field);
    if (value == null) {
      return null;
    }
    if (value.isJsonPrimitive() && value.getAsJsonPrimitive().isNumber()) {
      JsonPrimitive number = value.getAsJsonPrimitive();
      try {
        new BigDecimal(number.getAsString());
      } catch (NumberFormatException e) {
        throw wrongType(field, goType);
      }
      return number;
    }
    throw wrongType(field, goType);
  }

  private static JsonElement present(JsonObject object, String field) {
    JsonElement value = object.get(field);
    return value == null || value.isJsonNull() ? null : value;
  }

  private static ApiException wrongType(String field, String goType) {
    return ApiException.badRequestBody(
        "json: cannot unmarshal value into field " + field + " of type " + goType);
  }
}
