package dev.redlock.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class LeadershipHistoryTest {

  private final AtomicLong now = new AtomicLong();
  private final LeadershipHistory history = new LeadershipHistory(now::get);

  private void at(long nanos) {
    now.set(nanos);
  }

  @Test
  void handoversThatRevokeBeforeTheNextGrantAreNoViolation() {
    at(0);
    history.granted("a");
    at(100);
    history.revoked("a");
    at(150);
    history.granted("b");
    at(300);
    history.revoked("b");
    at(300);
    history.granted("a");

    assertEquals(List.of(), history.violations());
    List<LeadershipHistory.Window> windows = history.windows();
    assertEquals(3, windows.size());
    assertEquals(new LeadershipHistory.Window("a", 0, 100), windows.get(0));
    assertEquals(new LeadershipHistory.Window("b", 150, 300), windows.get(1));
    assertTrue(windows.get(2).open());
    assertEquals(Optional.of("a"), history.leader());
  }

  @Test
  void aGrantBeforeTheLeaderRevokedIsAViolation() {
    at(0);
    history.granted("a");
    at(100);
    history.granted("b");
    at(120);
    history.revoked("a");

    List<LeadershipHistory.Violation> violations = history.violations();
    assertEquals(1, violations.size());
    assertEquals("a", violations.get(0).first().candidate());
    assertEquals("b", violations.get(0).second().candidate());
    assertEquals("b was granted while a led until 0.0 ms later", violations.get(0).toString());
  }

  @Test
  void aLeaderThatNeverRevokesOverlapsEveryLaterGrant() {
    at(0);
    history.granted("a");
    at(100);
    history.granted("b");
    at(200);
    history.revoked("b");
    at(300);
    history.granted("c");

    List<LeadershipHistory.Violation> violations = history.violations();
    assertEquals(2, violations.size());
    assertTrue(violations.stream().allMatch(v -> v.first().candidate().equals("a")));
    assertTrue(violations.get(0).toString().endsWith("and never revoked"));
  }

  @Test
  void aRevocationRecordedBeforeAGrantOnTheSameTickIsNoViolation() {
    at(42);
    history.granted("a");
    history.revoked("a");
    history.granted("b");

    assertEquals(List.of(), history.violations());
  }

  @Test
  void aRevocationWithoutAGrantOpensNoWindow() {
    at(0);
    history.revoked("a");
    history.granted("b");

    assertEquals(List.of(new LeadershipHistory.Window("b", 0, Long.MAX_VALUE)), history.windows());
  }

  @Test
  void aSecondGrantWithoutARevocationIsAMalformedHistory() {
    history.granted("a");
    history.granted("a");

    assertThrows(IllegalStateException.class, history::windows);
  }
}
