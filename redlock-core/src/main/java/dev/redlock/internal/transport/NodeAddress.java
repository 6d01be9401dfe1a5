package dev.redlock.internal.transport;

import static java.util.Objects.requireNonNull;

import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * One Redis master, parsed from {@code redis://[user:password@]host[:port][/db]} or {@code
 * rediss://...} (TLS). {@link #toString()} and every error message show the address without
 * credentials.
 *
 * <p>Parsed by hand, not by {@link URI}: a password may hold any character ({@code @ / : % # ?},
 * spaces, non-ASCII), which {@code URI} cannot split, and its errors echo the input. The
 * credentials are everything between {@code ://} and the <em>last</em> {@code @}, since host, port
 * and database never hold one; so a {@code /}, {@code ?} or {@code #} before that {@code @} belongs
 * to the password, not to a path, query or fragment. Nothing between {@code ://} and that {@code @}
 * ever reaches a message.
 */
public final class NodeAddress {

  static final int DEFAULT_PORT = 6379;

  /** Dot-separated labels of letters, digits, {@code -} and {@code _}; a trailing dot allowed. */
  private static final Pattern HOST_NAME =
      Pattern.compile(
          "(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?\\.)*"
              + "[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?\\.?");

  /** The longest DNS name, 253 characters, and its trailing dot. */
  private static final int MAX_HOST_NAME = 254;

  private static final Pattern IPV6_CHARS = Pattern.compile("[0-9A-Fa-f:.]+");
  private static final Pattern ZONE = Pattern.compile("[A-Za-z0-9._~-]+");

  private final String host;
  private final int port;
  private final boolean tls;
  private final String user;
  private final String password;
  private final int database;

  private NodeAddress(
      String host, int port, boolean tls, String user, String password, int database) {
    this.host = host;
    this.port = port;
    this.tls = tls;
    this.user = user;
    this.password = password;
    this.database = database;
  }

  /**
   * Parses a node URI. The user and password may be percent-encoded ({@code %40} for {@code @}); a
   * {@code %} not followed by two hex digits is taken as it is.
   *
   * @param uri the master's URI
   * @return the address
   * @throws NullPointerException if {@code uri} is null
   * @throws IllegalArgumentException if it is not a {@code redis://} or {@code rediss://} URI with
   *     a host, a port in 1..65535, an optional non-negative database number and no query or
   *     fragment; the message never shows the user or password
   */
  public static NodeAddress parse(String uri) {
    requireNonNull(uri, "node");
    String text = uri.strip();
    int start = schemeEnd(text);
    if (start < 0) {
      throw invalid("must start with redis:// or rediss:// (TLS)", text);
    }
    boolean tls = start == "rediss://".length();
    int at = text.lastIndexOf('@');
    String userInfo = at < start ? "" : text.substring(start, at);
    int locationStart = Math.max(at + 1, start);
    String location = text.substring(locationStart); // host[:port][/db]: nothing secret
    int extra = firstOf(location, "?#");
    if (extra >= 0) {
      // Show no query either: it may carry credentials too (?password=...).
      throw invalid(
          "takes no query or fragment",
          text.substring(0, locationStart + extra) + location.charAt(extra) + "...");
    }
    int slash = location.indexOf('/');
    String hostPort = slash < 0 ? location : location.substring(0, slash);
    String path = slash < 0 ? "" : location.substring(slash + 1);

    String host;
    String portText;
    if (hostPort.startsWith("[")) {
      int close = hostPort.indexOf(']');
      String after = close < 0 ? "" : hostPort.substring(close + 1);
      if (close < 0 || !(after.isEmpty() || after.startsWith(":"))) {
        throw invalid(badHost(hostPort), text);
      }
      host = ipv6(hostPort.substring(1, close));
      if (host == null) {
        throw invalid(badHost(hostPort.substring(0, close + 1)), text);
      }
      portText = after.isEmpty() ? null : after.substring(1);
    } else {
      if (IPV6_CHARS.matcher(hostPort).matches()
          && hostPort.indexOf(':') != hostPort.lastIndexOf(':')) {
        throw invalid(badHost(hostPort), text); // an IPv6 address without its brackets
      }
      int colon = hostPort.indexOf(':');
      host = colon < 0 ? hostPort : hostPort.substring(0, colon);
      portText = colon < 0 ? null : hostPort.substring(colon + 1);
      if (host.isEmpty()) {
        throw invalid("has no host", text);
      }
      if (host.length() > MAX_HOST_NAME || !HOST_NAME.matcher(host).matches()) {
        throw invalid(badHost(host), text);
      }
    }
    int port = portText == null ? DEFAULT_PORT : number(portText);
    if (port < 1 || port > 65535) {
      throw invalid("has a bad port \"" + portText + "\" (a number in 1..65535)", text);
    }
    int database = path.isEmpty() ? 0 : number(path);
    if (database < 0) {
      throw invalid("has a bad database \"" + path + "\" (a non-negative number)", text);
    }

    String user = null;
    String password = null;
    if (!userInfo.isEmpty()) {
      int colon = userInfo.indexOf(':'); // the first: a password may hold ':', a user may not
      if (colon < 0) {
        password = decode(userInfo); // redis://secret@host, as redis-cli accepts
      } else {
        user = colon == 0 ? null : decode(userInfo.substring(0, colon));
        password = decode(userInfo.substring(colon + 1));
      }
    }
    return new NodeAddress(host, port, tls, user, password, database);
  }

  /**
   * The URI with everything between {@code redis://} (or {@code rediss://}) and the last {@code @}
   * replaced by {@code ***}, safe to log or put in an exception whatever the password holds.
   * Without that start, where credentials would begin is unknown, so everything up to the last
   * {@code @} is replaced.
   */
  static String redact(String uri) {
    int at = uri.lastIndexOf('@');
    if (at < 0) {
      return uri;
    }
    int start = Math.max(0, schemeEnd(uri));
    return uri.substring(0, Math.min(start, at)) + "***" + uri.substring(at);
  }

  /** Where the authority begins after a redis:// or rediss:// start (any case), or -1. */
  private static int schemeEnd(String text) {
    for (String scheme : new String[] {"redis://", "rediss://"}) {
      if (text.regionMatches(true, 0, scheme, 0, scheme.length())) {
        return scheme.length();
      }
    }
    return -1;
  }

  private static IllegalArgumentException invalid(String problem, String text) {
    return new IllegalArgumentException("node " + problem + ": " + redact(text));
  }

  private static String badHost(String host) {
    return "has a bad host \""
        + host
        + "\" (a DNS name, an IPv4 address, or an IPv6 address in brackets as [::1]:6379)";
  }

  private static int firstOf(String text, String chars) {
    for (int i = 0; i < text.length(); i++) {
      if (chars.indexOf(text.charAt(i)) >= 0) {
        return i;
      }
    }
    return -1;
  }

  /**
   * The value of one or more ASCII digits, or -1 if there are none, or others, or it exceeds an
   * int. Not {@link Integer#parseInt}: it takes signs and non-ASCII digits.
   */
  private static int number(String text) {
    if (text.isEmpty()) {
      return -1;
    }
    long value = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      value = value * 10 + (c - '0');
      if (value > Integer.MAX_VALUE) {
        return -1;
      }
    }
    return (int) value;
  }

  /**
   * The host for a bracketed IPv6 literal, its zone (RFC 6874 {@code %25eth0}, or the bare {@code
   * %eth0} that {@code URI} used to accept) kept as {@code fe80::1%eth0}; null if malformed.
   */
  private static String ipv6(String literal) {
    int percent = literal.indexOf('%');
    String address = percent < 0 ? literal : literal.substring(0, percent);
    String zone = percent < 0 ? null : literal.substring(percent + 1);
    if (zone != null && zone.startsWith("25") && zone.length() > 2) {
      zone = zone.substring(2);
    }
    if (!IPV6_CHARS.matcher(address).matches()
        || address.indexOf(':') < 0
        || (zone != null && !ZONE.matcher(zone).matches())) {
      return null;
    }
    try {
      // URI checks the literal strictly (groups, "::", an IPv4 tail); it sees no credentials.
      if (URI.create("redis://[" + address + "]").getHost() == null) {
        return null;
      }
    } catch (IllegalArgumentException e) {
      return null;
    }
    return zone == null ? address : address + "%" + zone;
  }

  /**
   * Decodes {@code %XX} escapes as UTF-8. A {@code %} not followed by two hex digits is kept as it
   * is, and so is a run of escapes that is not valid UTF-8: a password typed without encoding must
   * still work, and nothing here may throw with the text in its message.
   */
  private static String decode(String text) {
    if (text.indexOf('%') < 0) {
      return text;
    }
    StringBuilder out = new StringBuilder(text.length());
    byte[] bytes = new byte[text.length() / 3];
    int i = 0;
    while (i < text.length()) {
      if (!isEscape(text, i)) {
        out.append(text.charAt(i++));
        continue;
      }
      int run = i;
      int n = 0;
      while (isEscape(text, i)) {
        bytes[n++] = (byte) (hex(text.charAt(i + 1)) << 4 | hex(text.charAt(i + 2)));
        i += 3;
      }
      try {
        out.append(StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes, 0, n)));
      } catch (CharacterCodingException e) {
        out.append(text, run, i);
      }
    }
    return out.toString();
  }

  private static boolean isEscape(String text, int i) {
    return i + 2 < text.length()
        && text.charAt(i) == '%'
        && hex(text.charAt(i + 1)) >= 0
        && hex(text.charAt(i + 2)) >= 0;
  }

  /** An ASCII hex digit's value, or -1 ({@link Character#digit} takes non-ASCII digits too). */
  private static int hex(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  }

  String host() {
    return host;
  }

  int port() {
    return port;
  }

  /**
   * Returns whether the master is reached over TLS ({@code rediss://}).
   *
   * @return true for {@code rediss://}
   */
  public boolean tls() {
    return tls;
  }

  /** The ACL user, or null for the default user. */
  String user() {
    return user;
  }

  /** The password, or null when none is configured. Never log it. */
  String password() {
    return password;
  }

  int database() {
    return database;
  }

  /**
   * The identity of the server this address reaches, for detecting the same master configured
   * twice. Host names are compared without case and {@code localhost} as its loopback address; no
   * DNS lookup is made, so two different names of one server are not caught.
   *
   * @return {@code host:port}, normalized
   */
  public String serverKey() {
    String h = host.toLowerCase(Locale.ROOT);
    if (h.equals("localhost")) {
      h = "127.0.0.1";
    } else if (h.equals("::1") || h.equals("0:0:0:0:0:0:0:1")) {
      h = "::1";
    }
    return h + ":" + port;
  }

  @Override
  public String toString() {
    return host.indexOf(':') >= 0 ? "[" + host + "]:" + port : host + ":" + port;
  }
}
