package dev.redlock.spring.boot;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code redlock.*} property of each builder setting, for the messages a Boot user reads: the
 * library's messages name the builder's methods ({@code maxLeaseTime}), which a Boot application
 * never calls.
 */
final class PropertyNames {

  private static final Map<String, String> PROPERTIES =
      Map.of(
          "maxLeaseTime", "redlock.max-lease-time",
          "nodeTimeout", "redlock.node-timeout",
          "connectTimeout", "redlock.connect-timeout",
          "driftFactor", "redlock.drift-factor",
          "minValidity", "redlock.min-validity",
          "retryDelay", "redlock.retry-delay",
          "circuitBreakerWait", "redlock.circuit-breaker-wait");

  private static final Pattern SETTING =
      Pattern.compile("\\b(" + String.join("|", PROPERTIES.keySet()) + ")\\b");

  private PropertyNames() {}

  /**
   * Returns the message with every builder setting it names replaced by its property.
   *
   * @param message a message of the library's builder
   * @param datacenters whether masters are configured by datacenter, whose node timeouts are
   *     properties of their own
   */
  static String of(String message, boolean datacenters) {
    if (message == null) {
      return null;
    }
    Matcher setting = SETTING.matcher(message);
    StringBuilder out = new StringBuilder();
    while (setting.find()) {
      String property = PROPERTIES.get(setting.group(1));
      if (datacenters && property.equals("redlock.node-timeout")) {
        property = "redlock[.datacenters.<name>].node-timeout";
      }
      setting.appendReplacement(out, Matcher.quoteReplacement(property));
    }
    return setting.appendTail(out).toString();
  }

  /**
   * The library's exception again, with its message in the properties' words. Not chained to the
   * original (whose message a startup failure report would also print), but with its stack trace.
   */
  static IllegalArgumentException renamed(String message, IllegalArgumentException original) {
    IllegalArgumentException renamed = new IllegalArgumentException(message);
    renamed.setStackTrace(original.getStackTrace());
    return renamed;
  }
}
