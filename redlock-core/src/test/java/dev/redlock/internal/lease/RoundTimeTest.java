package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.preflight.Preflight;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Vote;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The average round time, which sizes the gate wait, the hand-off pause and the spread of a woken
 * waiter's retries, learns from rounds the masters' answers decided, not from one that waited out a
 * silent master's node timeout: after such a round (a split vote with the fifth master paused), a
 * waiter's next retry would otherwise come tens of rounds later.
 */
class RoundTimeTest {

  private static final List<String> NAMES = List.of("a:1", "b:2", "c:3", "d:4", "e:5");

  @Test
  void aRoundThatWaitedOutANodeTimeoutLeavesTheAverageRoundTimeAlone() {
    List<FakeNode> fakes = new ArrayList<>();
    for (int i = 0; i < NAMES.size(); i++) {
      fakes.add(new FakeNode(new FakeTicker()));
    }
    Masters masters = FakeMasters.of(fakes, NAMES, Ticker.system()); // node timeouts of 50 ms
    Coordinator.Settings settings =
        new Coordinator.Settings(
            0.01,
            0,
            TimeUnit.MILLISECONDS.toNanos(50),
            false,
            false,
            60_000,
            0,
            TimeUnit.SECONDS.toNanos(1));
    Contention wakeups = Contention.polling();
    Coordinator coordinator =
        new Coordinator(
            masters, new Events(Events.none()), new Preflight(false, 0), settings, wakeups);
    try {
      byte[] key = "r".getBytes(StandardCharsets.UTF_8);
      long before = wakeups.rounds().nanos();

      fakes.get(2).onSet = FakeNode.Answer.TAKEN;
      fakes.get(3).onSet = FakeNode.Answer.TAKEN;
      fakes.get(4).onSet = FakeNode.Answer.HANG; // two for, two against: the fifth decides
      Attempt split = coordinator.attemptOnce("r", LockKey.of(key), 10_000);
      assertNull(split.grant());
      assertEquals(Vote.TIMED_OUT, split.outcomes().get(4).vote());
      assertEquals(before, wakeups.rounds().nanos(), "a 50 ms timeout is not a round time");

      for (FakeNode fake : fakes) {
        fake.onSet = FakeNode.Answer.GRANT;
      }
      Attempt granted = coordinator.attemptOnce("r", LockKey.of(key), 10_000);
      assertNotNull(granted.grant());
      // The answers decided this round, so it is learned: the average moves (an eighth of the way
      // to the round's time). Not "falls": on the system ticker a loaded machine can make even
      // fakes take longer than the initial 500 us (seen once in a PIT run at load 20). Yet it
      // learned less than a node timeout, which is what a round timed by its timeout would teach.
      long learned = wakeups.rounds().nanos();
      assertNotEquals(before, learned, "a round the answers decided is learned");
      assertTrue(
          learned < before + (TimeUnit.MILLISECONDS.toNanos(50) - before) / 8,
          "learned less than a node timeout: the average went from "
              + before
              + " ns to "
              + learned
              + " ns");
    } finally {
      coordinator.close();
    }
  }
}
