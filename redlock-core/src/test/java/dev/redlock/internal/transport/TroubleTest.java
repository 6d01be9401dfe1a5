package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** The servers' own error texts, as Redis 7 and Jedis word them, classified. */
class TroubleTest {

  @Test
  void eachServerErrorHasItsKind() {
    assertEquals(
        Trouble.AUTHENTICATION,
        Trouble.ofError(
            "AUTH refused: WRONGPASS invalid username-password pair or user is disabled."));
    assertEquals(Trouble.AUTHENTICATION, Trouble.ofError("NOAUTH Authentication required."));
    assertEquals(Trouble.DATABASE, Trouble.ofError("SELECT refused: ERR DB index is out of range"));
    assertEquals(
        Trouble.PERMISSION,
        Trouble.ofError("NOPERM this user has no permissions to run the 'evalsha' command"));
    assertEquals(
        Trouble.PERMISSION,
        Trouble.ofError(
            "ERR The user executing the script can't run this command or subcommand script:"
                + " d3c21d0c, on @user_script:1."));
    assertEquals(Trouble.UNREACHABLE, Trouble.ofError("Connection refused"));
    assertEquals(Trouble.UNREACHABLE, Trouble.ofError("Failed to connect to 127.0.0.1:1."));
    assertEquals(Trouble.UNREACHABLE, Trouble.ofError("connect timed out after 1000 ms"));
    assertNull(Trouble.ofError("unfit for Redlock: cluster mode"));
    assertNull(Trouble.ofError("skipped"));
  }

  @Test
  void theRestartGuardsRefusalIsItsOwnKindUnlessAnAclCausedIt() {
    assertEquals(
        Trouble.RESTART_GUARD,
        Trouble.of(Vote.RESTARTED, "restarted 3 s ago: votes in 58 s, or once admitted"));
    assertEquals(
        Trouble.PERMISSION,
        Trouble.of(
            Vote.RESTARTED,
            "the restart guard cannot see this master's restarts (INFO refused: NOPERM this user"
                + " has no permissions to run the 'info' command)"));
    assertNull(Trouble.of(Vote.TIMED_OUT, ""));
    assertNull(Trouble.of(Vote.GRANTED, ""));
  }

  @Test
  void theDeniedCommandIsNamedEvenAfterAnApostrophe() {
    assertEquals(
        "info",
        Trouble.deniedCommand(
            "the restart guard cannot see this master's restarts (INFO refused: NOPERM this user"
                + " has no permissions to run the 'info' command)"));
    assertEquals(
        "config|get",
        Trouble.deniedCommand(
            "NOPERM this user has no permissions to run the 'config|get' command"));
    assertEquals(
        "keys",
        Trouble.deniedCommand(
            "NOPERM this user has no permissions to access one of the keys used as arguments"));
    assertEquals(
        Trouble.INSIDE_SCRIPT,
        Trouble.deniedCommand(
            "ERR The user executing the script can't run this command or subcommand script: x"));
  }
}
