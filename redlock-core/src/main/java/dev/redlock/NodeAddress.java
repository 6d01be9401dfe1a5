package dev.redlock;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * One Redis master, parsed from {@code redis://[user:password@]host[:port][/db]} or {@code
 * rediss://...} (TLS). {@link #toString()} and every error message show the address without
 * credentials.
 */
final class NodeAddress {

  static final int DEFAULT_PORT = 6379;
  private static final Pattern USER_INFO = Pattern.compile("//[^/@]*@");

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
   * Parses a node URI.
   *
   * @throws NullPointerException if {@code uri} is null
   * @throws IllegalArgumentException if it is not a {@code redis://} or {@code rediss://} URI with
   *     a host, a port in 1..65535 and an optional non-negative database number
   */
  static NodeAddress parse(String uri) {
    if (uri == null) {
      throw new NullPointerException("node");
    }
    String shown = redact(uri);
    URI parsed;
    try {
      parsed = new URI(uri.strip());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("node is not a valid URI: " + shown);
    }
    String scheme = parsed.getScheme() == null ? "" : parsed.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("redis") && !scheme.equals("rediss")) {
      throw new IllegalArgumentException(
          "node must start with redis:// or rediss:// (TLS): " + shown);
    }
    String host = parsed.getHost();
    if (host == null || host.isEmpty()) {
      throw new IllegalArgumentException("node has no host: " + shown);
    }
    int port = parsed.getPort() == -1 ? DEFAULT_PORT : parsed.getPort();
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("node port must be in 1..65535: " + shown);
    }
    if (parsed.getRawQuery() != null || parsed.getRawFragment() != null) {
      throw new IllegalArgumentException("node URI takes no query or fragment: " + shown);
    }
    String user = null;
    String password = null;
    String userInfo = parsed.getUserInfo();
    if (userInfo != null && !userInfo.isEmpty()) {
      int colon = userInfo.indexOf(':');
      if (colon < 0) {
        password = userInfo; // redis://secret@host, as redis-cli accepts
      } else {
        user = colon == 0 ? null : userInfo.substring(0, colon);
        password = userInfo.substring(colon + 1);
      }
    }
    int database = 0;
    String path = parsed.getPath();
    if (path != null && !path.isEmpty() && !path.equals("/")) {
      try {
        database = Integer.parseInt(path.substring(1));
      } catch (NumberFormatException e) {
        database = -1;
      }
      if (database < 0) {
        throw new IllegalArgumentException("node database must be a non-negative number: " + shown);
      }
    }
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    return new NodeAddress(host, port, scheme.equals("rediss"), user, password, database);
  }

  /** The URI with any user information replaced, safe to log or put in an exception. */
  static String redact(String uri) {
    return USER_INFO.matcher(uri).replaceFirst("//***@");
  }

  String host() {
    return host;
  }

  int port() {
    return port;
  }

  boolean tls() {
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
   */
  String serverKey() {
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
