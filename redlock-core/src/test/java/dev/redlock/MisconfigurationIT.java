package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Each kind of misconfiguration against a real master has its own message (in the exception and in
 * the log), is logged at WARN once per master however many rounds meet it, and at INFO when it
 * clears: unreachable, authentication refused, database index out of range, permission denied (with
 * the command), restart guard. The log is slf4j-simple's, on System.err.
 */
class MisconfigurationIT {

  private static final Duration TTL = Duration.ofSeconds(10);

  @RegisterExtension final CapturedLog captured = new CapturedLog();
  private RedisProcess master;

  @BeforeEach
  void captureTheLog() {
    master = RedisProcess.start();
  }

  @AfterEach
  void restoreTheLog() {
    master.close();
  }

  private String log() {
    return captured.text();
  }

  private static int count(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }

  /**
   * Without circuit breakers: with them, the breaker skipped the master after its first failures,
   * so the transport stopped meeting the trouble and "logged once" could not fail.
   */
  private static RedLock redlock(String uri) {
    return RedLock.builder()
        .node(uri)
        .nodeTimeout(Duration.ofMillis(200))
        .connectTimeout(Duration.ofMillis(500))
        .circuitBreakers(false)
        .build();
  }

  /** The master has received at least 3 more connections than now: 3 failed attempts. */
  private BooleanSupplier threeMoreConnections() {
    long before = master.admin().connectionsReceived();
    return () -> master.admin().connectionsReceived() >= before + 3;
  }

  /**
   * Rounds meet the trouble until {@code metAgain} says the transport met it at least 3 times (each
   * round throws with its kind); the log says it once.
   */
  private String failsRepeatedly(RedLock redlock, String kind, BooleanSupplier metAgain) {
    String[] message = new String[1];
    Poll.until(
        Duration.ofSeconds(10),
        () -> {
          message[0] =
              assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("r", TTL))
                  .getMessage();
          assertTrue(message[0].contains(kind), message[0]);
          return metAgain.getAsBoolean();
        },
        () -> "the transport met '" + kind + "' 3 times");
    String warned =
        "WARN .*master " + Pattern.quote(master.host() + ":" + master.port()) + ": " + kind;
    Poll.until("the WARN is logged", () -> count(log(), warned) >= 1);
    assertEquals(1, count(log(), warned), log());
    return message[0];
  }

  @Test
  void anUnreachableMasterIsWarnedOnceAndItsReturnLoggedAtInfo() throws Exception {
    try (RedLock redlock = RedLocks.admitted(redlock(master.uri()))) {
      master.kill();
      // Refused connections leave no count on a dead master: rounds go on for 4 of the
      // transport's 100 ms reconnect delays, so it tries to connect at least 3 times.
      long until = System.nanoTime() + Duration.ofMillis(400).toNanos();
      failsRepeatedly(redlock, "unreachable", () -> System.nanoTime() - until > 0);
      master.restart();
      Poll.until(
          "acquired again",
          () -> {
            try {
              redlock.admitFreshNodes(); // the restarted run is a new one
              return redlock.tryAcquire("back", TTL).isPresent();
            } catch (QuorumUnavailableException stillDown) {
              return false;
            }
          });
      Poll.until("the INFO is logged", () -> log().contains("unreachable is over"));
      assertTrue(log().contains("INFO"), log());
    }
  }

  @Test
  void aWrongPasswordSaysAuthenticationRefusedAndNeverShowsThePassword() {
    master.admin().command("ACL", "SETUSER", "app", "on", ">right", "~*", "+@all");
    try (RedLock redlock =
        redlock("redis://app:wr0ngpass@" + master.host() + ":" + master.port())) {
      String message = failsRepeatedly(redlock, "authentication refused", threeMoreConnections());
      assertTrue(message.contains("redis://user:password@host:port"), message);
      assertTrue(log().contains("check the user and password"), log());
    }
    assertFalse(log().contains("wr0ngpass"), log());
  }

  @Test
  void aDatabaseOutOfRangeSaysSo() {
    try (RedLock redlock = redlock(master.uri() + "/99")) {
      String message =
          failsRepeatedly(redlock, "database index out of range", threeMoreConnections());
      assertTrue(message.contains("'databases'"), message);
    }
  }

  @Test
  void aDeniedCommandIsNamedWithWhatItCostsAndItsGrantLoggedAtInfo() {
    master
        .admin()
        .command(
            "ACL",
            "SETUSER",
            "app",
            "on",
            ">pw",
            "~*",
            "-@all",
            "+set",
            "+time",
            "+mget",
            "+info",
            "+eval",
            "+script|load",
            "+get",
            "+del",
            "+pexpire",
            "+pttl");
    // Admitted by a user that may (the admit script needs EVALSHA too): the admission is the run's.
    try (RedLock admin = RedLocks.admitted(redlock(master.uri()))) {
      assertTrue(admin.tryAcquire("admin", TTL).isPresent());
    }
    try (RedLock redlock = redlock("redis://app:pw@" + master.host() + ":" + master.port())) {
      Lease lease = redlock.tryAcquire("r", TTL).orElseThrow();
      // The first extend answers NOSCRIPT-free: EVALSHA is denied, so nothing is extended.
      for (int i = 0; i < 3; i++) {
        assertFalse(lease.extend(TTL), "extended without EVALSHA");
      }
      String warned = "WARN .*permission denied for evalsha";
      Poll.until("the WARN is logged", () -> count(log(), warned) >= 1);
      assertEquals(1, count(log(), warned), log());
      assertTrue(log().contains("leases cannot be released, extended, renewed or fenced"), log());
      assertTrue(log().contains("docs/acl.md"), log());

      master.admin().command("ACL", "SETUSER", "app", "+evalsha");
      assertTrue(lease.extend(TTL), "extended once EVALSHA is granted");
      Poll.until(
          "the INFO is logged", () -> log().contains("permission denied for evalsha is over"));
      lease.close();
    }
  }

  @Test
  void theRestartGuardIsWarnedOnceAndItsEndLoggedAtInfo() {
    try (RedLock redlock = redlock(master.uri())) {
      int[] rounds = {0};
      failsRepeatedly(redlock, "restart guard", () -> ++rounds[0] >= 5); // each round asks it
      assertTrue(log().contains("admitFreshNodes()"), log());
      redlock.admitFreshNodes();
      assertTrue(redlock.tryAcquire("r", TTL).isPresent());
      Poll.until("the INFO is logged", () -> log().contains("restart guard is over"));
    }
  }
}
