package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Node URIs parse into their parts, and nothing shown for one ever holds part of its password. */
class NodeAddressTest {

  /** A password as typed in a URI, and as sent to the server. */
  record Secret(String typed, String decoded) {
    @Override
    public String toString() {
      return typed;
    }
  }

  /**
   * Passwords holding each character a URI gives a meaning to, encoded or not. Every one starts
   * with {@code Qz} and holds {@code Xj} or {@code Hx}, so none of their 3-character windows occurs
   * in the rest of the URIs or in the messages (checked by {@link #theSecretsDoNotOccurElsewhere}).
   */
  static final List<Secret> SECRETS =
      List.of(
          secret("Qz@Xj9"),
          secret("Qz@@Xj@"),
          secret("Qz/Xj/9"),
          secret("Qz:Xj:9"),
          secret("Qz%Xj9"), // a lone %: literal
          secret("Qz%4Xj"), // % and one hex digit: literal
          secret("Qz%"),
          new Secret("Qz%40Xj", "Qz@Xj"),
          new Secret("Qz%2FXj%3A9", "Qz/Xj:9"),
          new Secret("Qz%25Xj", "Qz%Xj"),
          new Secret("Qz%c3%a9Xj", "Qz\u00e9Xj"), // é, lower-case hex
          secret("Qz%FFXj"), // not UTF-8 once decoded: literal
          secret("Qz#Xj9"),
          secret("Qz?Xj=9"),
          secret("Qz Xj 9"),
          secret("Qz\u00e9\u2211Xj\uD83D\uDD11"), // é, ∑ and a surrogate pair, not encoded
          secret("Qz@Hx:Yv"), // looks like host:port
          secret("Qz:/Xj@"), // ends with @
          secret("Qz[Xj]9"),
          secret("@Qz?#/%Xj:"));

  /** Malformed URIs, {@code {pw}} standing for the password, and what their message must say. */
  static final List<String[]> MALFORMED =
      List.of(
          new String[] {"redis://user:{pw}@h:abc", "bad port \"abc\""},
          new String[] {"redis://{pw}@h:abc", "bad port \"abc\""},
          new String[] {"redis://:{pw}@h:abc/0", "bad port \"abc\""},
          new String[] {"redis://user:{pw}@h:", "bad port \"\""},
          new String[] {"redis://user:{pw}@h:/0", "bad port \"\""},
          new String[] {"redis://user:{pw}@h:0", "bad port \"0\""},
          new String[] {"redis://user:{pw}@h:65536", "bad port \"65536\""},
          new String[] {"redis://user:{pw}@h:99999999999", "bad port \"99999999999\""},
          new String[] {"redis://user:{pw}@h:-1", "bad port \"-1\""},
          new String[] {"redis://user:{pw}@h:+1", "bad port \"+1\""},
          new String[] {"redis://user:{pw}@h:1:2", "bad port \"1:2\""},
          new String[] {"redis://user:{pw}@h:\u0661", "bad port"}, // an Arabic-Indic digit
          new String[] {"rediss://user:{pw}@[::1]:abc", "bad port \"abc\""},
          new String[] {"redis://user:{pw}@", "no host"},
          new String[] {"redis://user:{pw}@:6379", "no host"},
          new String[] {"redis://user:{pw}@/0", "no host"},
          new String[] {"redis://user:{pw}@bad host:1", "bad host \"bad host\""},
          new String[] {"redis://user:{pw}@-h:1", "bad host \"-h\""},
          new String[] {"redis://user:{pw}@h\u00e4:1", "bad host"},
          new String[] {"redis://user:{pw}@::1", "bad host \"::1\""},
          new String[] {"redis://user:{pw}@[::g]:1", "bad host \"[::g]\""},
          new String[] {"redis://user:{pw}@[1:2:3]", "bad host"},
          new String[] {"redis://user:{pw}@[::1", "bad host \"[::1\""},
          new String[] {"redis://user:{pw}@[::1]6379", "bad host"},
          new String[] {"redis://user:{pw}@[h]:1", "bad host"},
          new String[] {"redis://user:{pw}@h:1/x", "bad database \"x\""},
          new String[] {"redis://user:{pw}@h:1/-1", "bad database \"-1\""},
          new String[] {"redis://user:{pw}@h:1/0/", "bad database \"0/\""},
          new String[] {"redis://user:{pw}@h:1/99999999999", "bad database"},
          new String[] {"redis://user:{pw}@h:1/0?timeout=1", "no query or fragment"},
          new String[] {"redis://user:{pw}@h:1#top", "no query or fragment"},
          new String[] {"http://user:{pw}@h:1", "must start with redis://"},
          new String[] {"user:{pw}@h:1", "must start with redis://"},
          new String[] {"{pw}@h:1", "must start with redis://"},
          new String[] {"redis:/user:{pw}@h:1", "must start with redis://"},
          new String[] {"redis:user:{pw}@h:1", "must start with redis://"});

  static Stream<Arguments> malformedUris() {
    List<Arguments> all = new ArrayList<>();
    for (String[] row : MALFORMED) {
      for (Secret secret : SECRETS) {
        all.add(Arguments.of(row[0].replace("{pw}", secret.typed()), secret, row[1]));
      }
    }
    return all.stream();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("malformedUris")
  void aMalformedUriSaysWhatIsWrongAndShowsNoPartOfThePassword(
      String uri, Secret secret, String problem) {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> NodeAddress.parse(uri));
    assertTrue(e.getMessage().contains(problem), () -> "wanted \"" + problem + "\" in the message");
    assertShowsNoPartOf(secret, e.getMessage());
    assertShowsNoPartOf(secret, NodeAddress.redact(uri));
  }

  @Test
  void theSecretsDoNotOccurElsewhere() {
    for (String[] row : MALFORMED) {
      for (Secret secret : SECRETS) {
        assertShowsNoPartOf(secret, row[0].replace("{pw}", "") + " " + row[1]);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("secrets")
  void aPasswordWithAnyCharacterParsesAfterAUser(Secret secret) {
    NodeAddress a = NodeAddress.parse("redis://alice:" + secret.typed() + "@h.example:7000/2");
    assertEquals("alice", a.user());
    assertEquals(secret.decoded(), a.password());
    assertEquals("h.example", a.host());
    assertEquals(7000, a.port());
    assertEquals(2, a.database());
    assertFalse(a.tls());
    assertShowsNoPartOf(secret, a.toString());
    assertShowsNoPartOf(secret, a.serverKey());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("secrets")
  void aPasswordWithAnyCharacterParsesAfterAnEmptyUser(Secret secret) {
    NodeAddress a = NodeAddress.parse("rediss://:" + secret.typed() + "@[::1]");
    assertNull(a.user());
    assertEquals(secret.decoded(), a.password());
    assertEquals("::1", a.host());
    assertEquals(6379, a.port());
    assertEquals(0, a.database());
    assertTrue(a.tls());
    assertShowsNoPartOf(secret, a.toString());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("secretsWithoutAColon") // a first ':' would end a user name
  void aPasswordWithoutAColonIsTheWholeUserInfo(Secret secret) {
    NodeAddress a = NodeAddress.parse("redis://" + secret.typed() + "@h");
    assertNull(a.user());
    assertEquals(secret.decoded(), a.password());
    assertEquals("h", a.host());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("secrets")
  void aDuplicateNodeIsReportedWithoutItsPassword(Secret secret) {
    String uri = "redis://alice:" + secret.typed() + "@h:1";
    RedLockBuilder builder = RedLock.builder().node(uri);
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> builder.node(uri));
    assertTrue(e.getMessage().contains("twice"), e::getMessage);
    assertShowsNoPartOf(secret, e.getMessage());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("secrets")
  void theBuilderRejectsABadPortWithoutThePassword(Secret secret) {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> RedLock.builder().node("redis://alice:" + secret.typed() + "@h:abc"));
    assertTrue(e.getMessage().contains("bad port"), e::getMessage);
    assertShowsNoPartOf(secret, e.getMessage());
  }

  static Stream<Secret> secrets() {
    return SECRETS.stream();
  }

  static Stream<Secret> secretsWithoutAColon() {
    return SECRETS.stream().filter(secret -> !secret.typed().contains(":"));
  }

  static Stream<Arguments> goodUris() {
    return Stream.of(
        // uri, user, password, host, port, database, tls
        Arguments.of("redis://h", null, null, "h", 6379, 0, false),
        Arguments.of("REDIS://H:1/2", null, null, "H", 1, 2, false),
        Arguments.of("RedisS://h:65535", null, null, "h", 65535, 0, true),
        Arguments.of("  redis://h:7000  ", null, null, "h", 7000, 0, false),
        Arguments.of("redis://h:06379", null, null, "h", 6379, 0, false),
        Arguments.of("redis://h:1/", null, null, "h", 1, 0, false),
        Arguments.of("redis://h/15", null, null, "h", 6379, 15, false),
        Arguments.of("redis://h:1/2147483647", null, null, "h", 1, Integer.MAX_VALUE, false),
        Arguments.of(
            "redis://my_redis-1.internal.:1", null, null, "my_redis-1.internal.", 1, 0, false),
        Arguments.of("redis://10.0.0.7:7001", null, null, "10.0.0.7", 7001, 0, false),
        Arguments.of("redis://[::1]:6380/2", null, null, "::1", 6380, 2, false),
        Arguments.of("redis://[::ffff:10.0.0.7]", null, null, "::ffff:10.0.0.7", 6379, 0, false),
        Arguments.of("redis://[fe80::1%25eth0]:1", null, null, "fe80::1%eth0", 1, 0, false),
        Arguments.of("redis://[fe80::1%eth0]:1", null, null, "fe80::1%eth0", 1, 0, false),
        Arguments.of(
            "rediss://alice:p%40ss@Example.com:6380/3",
            "alice", "p@ss", "Example.com", 6380, 3, true),
        Arguments.of("redis://user:p@ss@host", "user", "p@ss", "host", 6379, 0, false),
        Arguments.of("redis://pa@ss@h", null, "pa@ss", "h", 6379, 0, false),
        Arguments.of("redis://:secret@h", null, "secret", "h", 6379, 0, false),
        Arguments.of("redis://@h", null, null, "h", 6379, 0, false),
        Arguments.of("redis://alice:@h", "alice", "", "h", 6379, 0, false),
        Arguments.of("redis://:@h", null, "", "h", 6379, 0, false),
        Arguments.of("redis://u:a:b@h", "u", "a:b", "h", 6379, 0, false),
        Arguments.of("redis://al%3Aice:pw@h", "al:ice", "pw", "h", 6379, 0, false),
        Arguments.of("redis://al%40ice:pw@h", "al@ice", "pw", "h", 6379, 0, false),
        Arguments.of("redis://u:a%20b+c@h", "u", "a b+c", "h", 6379, 0, false),
        Arguments.of("redis://u:%41%42%@h", "u", "AB%", "h", 6379, 0, false),
        Arguments.of("redis://u:%%41@h", "u", "%A", "h", 6379, 0, false),
        Arguments.of("redis://u:%4@h", "u", "%4", "h", 6379, 0, false),
        Arguments.of("redis://u:%e2%88%91@h", "u", "\u2211", "h", 6379, 0, false),
        Arguments.of("redis://u:%e2%88@h", "u", "%e2%88", "h", 6379, 0, false), // cut short
        Arguments.of("redis://u:%\u0661\u0662@h", "u", "%\u0661\u0662", "h", 6379, 0, false),
        Arguments.of("redis://u:p/0?x=1#y@h:1/0", "u", "p/0?x=1#y", "h", 1, 0, false));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("goodUris")
  void aGoodUriParsesIntoItsParts(
      String uri, String user, String password, String host, int port, int database, boolean tls) {
    NodeAddress a = NodeAddress.parse(uri);
    assertEquals(user, a.user());
    assertEquals(password, a.password());
    assertEquals(host, a.host());
    assertEquals(port, a.port());
    assertEquals(database, a.database());
    assertEquals(tls, a.tls());
  }

  @Test
  void toStringIsHostAndPortWithIpv6InBrackets() {
    assertEquals("h:1", NodeAddress.parse("redis://u:Qz@Xj@h:1/2").toString());
    assertEquals("[::1]:6379", NodeAddress.parse("redis://u:Qz@Xj@[::1]").toString());
  }

  @Test
  void theServerKeyIgnoresCaseCredentialsAndDatabase() {
    assertEquals("127.0.0.1:1", NodeAddress.parse("redis://u:Qz@Xj@LocalHost:1/3").serverKey());
    assertEquals("::1:6379", NodeAddress.parse("redis://[0:0:0:0:0:0:0:1]").serverKey());
    assertEquals("example.com:1", NodeAddress.parse("rediss://Example.COM:1").serverKey());
  }

  @Test
  void redactHidesEverythingBeforeTheLastAt() {
    assertEquals("redis://***@h:1", NodeAddress.redact("redis://u:p@s/s@h:1"));
    assertEquals("REDISS://***@h", NodeAddress.redact("REDISS://u:p@h"));
    assertEquals("***@h:1", NodeAddress.redact("http://u:p@h:1"));
    assertEquals("redis://h:1", NodeAddress.redact("redis://h:1"));
  }

  @Test
  void aNullUriIsANullPointer() {
    NullPointerException e =
        assertThrows(NullPointerException.class, () -> NodeAddress.parse(null));
    assertEquals("node", e.getMessage());
  }

  /** Fails if {@code shown} holds any 3 characters in a row of the password, typed or decoded. */
  static void assertShowsNoPartOf(Secret secret, String shown) {
    for (String password : List.of(secret.typed(), secret.decoded())) {
      if (password.length() < 3) {
        assertFalse(shown.contains(password), () -> "shows the password: " + shown);
      }
      for (int i = 0; i + 3 <= password.length(); i++) {
        String window = password.substring(i, i + 3);
        assertFalse(
            shown.contains(window), () -> "shows \"" + window + "\" of the password: " + shown);
      }
    }
  }

  private static Secret secret(String typed) {
    return new Secret(typed, typed);
  }

  @Test
  void nodeUrisAreParsedWithTheirOptions() {
    NodeAddress a = NodeAddress.parse("rediss://alice:p%40ss@Example.com:6380/3");
    assertEquals("Example.com", a.host());
    assertEquals(6380, a.port());
    assertTrue(a.tls());
    assertEquals("alice", a.user());
    assertEquals("p@ss", a.password());
    assertEquals(3, a.database());
    assertEquals("Example.com:6380", a.toString());
    NodeAddress b = NodeAddress.parse("redis://[::1]");
    assertEquals(6379, b.port());
    assertEquals("[::1]:6379", b.toString());
    assertEquals(null, b.password());
    assertEquals("secret", NodeAddress.parse("redis://:secret@h").password());
  }
}
