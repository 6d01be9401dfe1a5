package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Bad input fails at once with an exception that names the argument, and sends nothing. */
class ArgumentsTest {

  private static final Duration TTL = Duration.ofSeconds(1);

  private final FakeCluster cluster = new FakeCluster();
  private final FakeTicker ticker = cluster.ticker;
  private final List<FakeNode> nodes = cluster.nodes;
  private RedLock redlock;

  @BeforeEach
  void build() {
    redlock = cluster.builder(3).nodeTimeout(Duration.ofMillis(50)).build();
  }

  @AfterEach
  void close() {
    redlock.close();
    nodes.forEach(node -> assertTrue(node.received().isEmpty(), "nothing was sent"));
  }

  static Stream<Arguments> badCalls() {
    Duration second = Duration.ofSeconds(1);
    return Stream.of(
        bad(
            "null resource",
            NullPointerException.class,
            "resource",
            r -> r.tryAcquire(null, second)),
        bad(
            "empty resource",
            IllegalArgumentException.class,
            "resource",
            r -> r.tryAcquire("", second)),
        bad(
            "unpaired surrogate",
            IllegalArgumentException.class,
            "resource",
            r -> r.tryAcquire("a\uD800", second)),
        bad(
            "resource over 16 KiB",
            IllegalArgumentException.class,
            "resource",
            r -> r.tryAcquire("x".repeat(1 << 20), second)),
        bad(
            "multi-byte resource over 16 KiB",
            IllegalArgumentException.class,
            "resource",
            r -> r.tryAcquire("é".repeat(9000), second)),
        bad("null ttl", NullPointerException.class, "ttl", r -> r.tryAcquire("r", null)),
        bad(
            "zero ttl",
            IllegalArgumentException.class,
            "ttl",
            r -> r.tryAcquire("r", Duration.ZERO)),
        bad(
            "negative ttl",
            IllegalArgumentException.class,
            "ttl",
            r -> r.tryAcquire("r", Duration.ofMillis(-1))),
        bad(
            "sub-millisecond ttl",
            IllegalArgumentException.class,
            "ttl",
            r -> r.tryAcquire("r", Duration.ofNanos(999_999))),
        bad(
            "ttl equal to the node timeout",
            IllegalArgumentException.class,
            "node timeout",
            r -> r.tryAcquire("r", Duration.ofMillis(50))),
        bad(
            "ttl over a day",
            IllegalArgumentException.class,
            "ttl",
            r -> r.tryAcquire("r", Duration.ofDays(2))),
        bad("null wait", NullPointerException.class, "maxWait", r -> r.acquire("r", second, null)),
        bad(
            "zero wait",
            IllegalArgumentException.class,
            "maxWait",
            r -> r.acquire("r", second, Duration.ZERO)),
        bad(
            "negative wait",
            IllegalArgumentException.class,
            "maxWait",
            r -> r.acquire("r", second, Duration.ofSeconds(-1))));
  }

  interface Call {
    void on(RedLock redlock) throws Exception;
  }

  private static Arguments bad(
      String name, Class<? extends Exception> type, String mentions, Call call) {
    return Arguments.of(name, type, mentions, call);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badCalls")
  void badArgumentFailsAtOnceNamingIt(
      String name, Class<? extends Exception> type, String mentions, Call call) {
    Exception e = assertThrows(type, () -> call.on(redlock));
    assertTrue(e.getMessage() != null && e.getMessage().contains(mentions), e::getMessage);
  }

  @Test
  void extendWithABadTtlFailsEvenOnAValidLease() {
    Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
    assertThrows(NullPointerException.class, () -> lease.extend(null));
    assertThrows(IllegalArgumentException.class, () -> lease.extend(Duration.ZERO));
    assertTrue(lease.isValid());
    lease.close();
    nodes.forEach(FakeNode::forget);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"orders:42", "with spaces", "ünïcödé ключ 鍵 🔒", "a\u0000b", "\uD83D\uDD12"})
  void anyUnicodeResourceIsItsOwnUtf8Key(String resource) {
    assertArrayEquals(
        resource.getBytes(StandardCharsets.UTF_8),
        dev.redlock.internal.lease.Arguments.resourceKey(resource));
  }

  @Test
  void resourcesThatLenientEncodingWouldAliasAreRefused() {
    // "a\uD800" and "a\uDBFF" would both become "a?" with String.getBytes.
    assertThrows(
        IllegalArgumentException.class,
        () -> dev.redlock.internal.lease.Arguments.resourceKey("a\uDBFF"));
    assertThrows(
        IllegalArgumentException.class,
        () -> dev.redlock.internal.lease.Arguments.resourceKey("\uDC00a"));
    assertFalse(
        java.util.Arrays.equals(
            dev.redlock.internal.lease.Arguments.resourceKey("a?"),
            dev.redlock.internal.lease.Arguments.resourceKey("a?b")));
  }

  static Stream<Arguments> badBuilders() {
    return Stream.of(
        Arguments.of(
            "no nodes",
            IllegalArgumentException.class,
            "node",
            (Executable) () -> RedLock.builder().build()),
        Arguments.of(
            "null node",
            NullPointerException.class,
            "node",
            (Executable) () -> RedLock.builder().node(null)),
        Arguments.of(
            "null node list",
            NullPointerException.class,
            "nodes",
            (Executable) () -> RedLock.builder().nodes(null)),
        Arguments.of(
            "malformed URI",
            IllegalArgumentException.class,
            "node",
            (Executable) () -> RedLock.builder().node("redis://bad host:1")),
        Arguments.of(
            "wrong scheme",
            IllegalArgumentException.class,
            "redis://",
            (Executable) () -> RedLock.builder().node("http://h:1")),
        Arguments.of(
            "no host",
            IllegalArgumentException.class,
            "host",
            (Executable) () -> RedLock.builder().node("redis://:1")),
        Arguments.of(
            "bad port",
            IllegalArgumentException.class,
            "port",
            (Executable) () -> RedLock.builder().node("redis://h:70000")),
        Arguments.of(
            "bad database",
            IllegalArgumentException.class,
            "database",
            (Executable) () -> RedLock.builder().node("redis://h:1/x")),
        Arguments.of(
            "same master twice",
            IllegalArgumentException.class,
            "twice",
            (Executable) () -> RedLock.builder().node("redis://h:1").node("redis://H:1")),
        Arguments.of(
            "localhost and 127.0.0.1",
            IllegalArgumentException.class,
            "twice",
            (Executable)
                () -> RedLock.builder().node("redis://localhost:1").node("redis://127.0.0.1:1")),
        Arguments.of(
            "null node timeout",
            NullPointerException.class,
            "nodeTimeout",
            (Executable) () -> RedLock.builder().nodeTimeout(null)),
        Arguments.of(
            "zero node timeout",
            IllegalArgumentException.class,
            "nodeTimeout",
            (Executable) () -> RedLock.builder().nodeTimeout(Duration.ZERO)),
        Arguments.of(
            "negative drift",
            IllegalArgumentException.class,
            "driftFactor",
            (Executable) () -> RedLock.builder().driftFactor(-0.01)),
        Arguments.of(
            "drift 0.1",
            IllegalArgumentException.class,
            "driftFactor",
            (Executable) () -> RedLock.builder().driftFactor(0.1)),
        Arguments.of(
            "drift NaN",
            IllegalArgumentException.class,
            "driftFactor",
            (Executable) () -> RedLock.builder().driftFactor(Double.NaN)),
        Arguments.of(
            "negative min validity",
            IllegalArgumentException.class,
            "minValidity",
            (Executable) () -> RedLock.builder().minValidity(Duration.ofMillis(-1))),
        Arguments.of(
            "zero retry delay",
            IllegalArgumentException.class,
            "retryDelay",
            (Executable) () -> RedLock.builder().retryDelay(Duration.ZERO)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badBuilders")
  void badConfigurationFailsAtOnceNamingIt(
      String name, Class<? extends Exception> type, String mentions, Executable call) {
    Exception e = assertThrows(type, call);
    assertTrue(e.getMessage() != null && e.getMessage().contains(mentions), e::getMessage);
  }

  static Stream<Arguments> settingsThatRefuseEveryTtl() {
    return Stream.of(
        Arguments.of(
            "node timeout above the longest lease",
            (UnaryOperator<RedLockBuilder>)
                b -> b.nodeTimeout(Duration.ofSeconds(2)).maxLeaseTime(Duration.ofSeconds(1)),
            List.of("nodeTimeout", "maxLeaseTime")),
        Arguments.of(
            "node timeout equal to the longest lease",
            (UnaryOperator<RedLockBuilder>)
                b -> b.nodeTimeout(Duration.ofSeconds(1)).maxLeaseTime(Duration.ofSeconds(1)),
            List.of("nodeTimeout", "maxLeaseTime")),
        Arguments.of(
            "min validity equal to the longest lease",
            (UnaryOperator<RedLockBuilder>)
                b -> b.minValidity(Duration.ofSeconds(1)).maxLeaseTime(Duration.ofSeconds(1)),
            List.of("minValidity", "maxLeaseTime")),
        Arguments.of(
            "min validity above what the drift allowance leaves of the longest lease",
            (UnaryOperator<RedLockBuilder>)
                b -> b.minValidity(Duration.ofMillis(989)).maxLeaseTime(Duration.ofSeconds(1)),
            List.of("minValidity", "maxLeaseTime", "driftFactor")));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("settingsThatRefuseEveryTtl")
  void settingsThatWouldRefuseEveryTtlAreRefusedAtBuildNamingEach(
      String name, UnaryOperator<RedLockBuilder> settings, List<String> mentions) {
    FakeCluster fakes = new FakeCluster();
    RedLockBuilder builder = settings.apply(fakes.builder(3));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, builder::build);
    mentions.forEach(m -> assertTrue(e.getMessage().contains(m), e::getMessage));
    assertTrue(fakes.nodes.isEmpty(), "no client was created");
  }

  @Test
  void everyTtlMustExceedTheLongestNodeTimeoutOfAnyDatacenter() {
    FakeCluster fakes = new FakeCluster();
    try (RedLock redlock =
        fakes
            .builder(0)
            .datacenter("near", Duration.ofMillis(20), List.of("redis://127.0.0.1:7000"))
            .datacenter("far", Duration.ofMillis(200), List.of("redis://127.0.0.1:7001"))
            .node("redis://127.0.0.1:7002")
            .build()) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> redlock.tryAcquire("r", Duration.ofMillis(150)));
      assertTrue(e.getMessage().contains("PT0.2S"), e.getMessage());
      assertTrue(redlock.tryAcquire("r", Duration.ofMillis(250)).isPresent());
    }
    RedLockBuilder slow =
        new FakeCluster()
            .builder(0)
            .datacenter("far", Duration.ofMinutes(2), List.of("redis://127.0.0.1:7000"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, slow::build);
    assertTrue(e.getMessage().contains("maxLeaseTime"), e.getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> RedLock.builder().datacenter(" ", Duration.ofMillis(5), List.of()));
  }

  @Test
  void withoutTheRestartGuardMaxLeaseTimeBoundsNothing() {
    FakeCluster fakes = new FakeCluster();
    try (RedLock redlock =
        fakes
            .builder(3)
            .restartGuard(false)
            .nodeTimeout(Duration.ofSeconds(2))
            .maxLeaseTime(Duration.ofSeconds(1))
            .build()) {
      assertTrue(redlock.tryAcquire("r", Duration.ofSeconds(3)).isPresent());
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"retryDelay", "circuitBreakerWait"})
  void hugeDelaysAreRefusedNamingTheSetting(String setting) {
    Duration huge = Duration.ofDays(365L * 500);
    RedLockBuilder builder = cluster.builder(3);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> {
              if (setting.equals("retryDelay")) {
                builder.retryDelay(huge).build().close();
              } else {
                builder.circuitBreakerWait(huge).build().close();
              }
            });
    assertTrue(e.getMessage().contains(setting), e::getMessage);
  }

  @Test
  void errorsNeverShowThePassword() {
    Exception e =
        assertThrows(
            IllegalArgumentException.class,
            () -> RedLock.builder().node("redis://user:s3cret@h:99999"));
    assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> RedLock.builder().node("redis://:s3cret@h:1").node("redis://:other@h:1"));
    assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
  }

  @Test
  void aTtlAboveMaxLeaseTimeNamesTheSettingForTheBuilderAndForSpringBoot() {
    // Spring Boot users meet this message too (a ShedLock lockAtMostFor, their own TTL): it names
    // the starter's property beside the builder's method.
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> redlock.tryAcquire("r", RedLock.DEFAULT_MAX_LEASE_TIME.plusSeconds(1)));
    assertTrue(e.getMessage().contains("raise maxLeaseTime"), e.getMessage());
    assertTrue(e.getMessage().contains("redlock.max-lease-time"), e.getMessage());
  }
}
