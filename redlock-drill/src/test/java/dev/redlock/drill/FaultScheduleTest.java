package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.drill.FaultPlan.Fault;
import dev.redlock.drill.FaultPlan.Kind;
import dev.redlock.drill.FaultSchedule.FaultWindow;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The fault schedule against a recording injector: order, timing, healing and failures. */
class FaultScheduleTest {

  @Test
  void faultsBeginAndEndOnTimeInOrderAndStopEndsWhatIsStillActive() throws Exception {
    FaultPlan plan =
        FaultPlanParser.parse(
            """
            at 50ms pause master 1 for 100ms
            at 100ms partition master 2
            at 150ms latency 20ms on master 3 for 50ms
            """,
            "plan.txt");
    Recording injector = new Recording(5);
    Heard heard = new Heard(5);
    FaultSchedule schedule = new FaultSchedule(plan, injector, Duration.ofSeconds(10), heard);
    long start = System.nanoTime();
    schedule.start(start);

    // Five events: three begins, the pause's and the latency's end; the partition is open.
    assertTrue(heard.heard.await(5, TimeUnit.SECONDS), heard.events.toString());
    assertEquals(List.of(plan.faults().get(1)), schedule.active());
    schedule.stop();

    assertEquals(
        List.of(
            "apply PAUSE 1",
            "apply PARTITION 2",
            // At 150 ms the pause ends before the latency begins: ends first at equal times.
            "undo PAUSE 1",
            "apply LATENCY 3 20ms",
            "undo LATENCY 3",
            "undo PARTITION 2"),
        injector.log);
    List<FaultWindow> windows = schedule.windows();
    assertEquals(3, windows.size());
    FaultWindow pause = windows.get(0);
    assertEquals(Kind.PAUSE, pause.fault().kind());
    assertTrue(pause.began() >= TimeUnit.MILLISECONDS.toNanos(50), pause.toString());
    assertTrue(pause.began() <= pause.applied(), pause.toString());
    assertTrue(pause.applied() < pause.healing(), pause.toString());
    assertTrue(pause.healing() >= TimeUnit.MILLISECONDS.toNanos(150), pause.toString());
    assertTrue(pause.healing() <= pause.ended(), pause.toString());
    assertTrue(pause.errors().isEmpty());
    FaultWindow partition = windows.get(1);
    assertTrue(partition.ended() >= TimeUnit.MILLISECONDS.toNanos(200), partition.toString());
    assertEquals(List.of(), schedule.active());
    assertEquals(
        List.of("began 1", "began 2", "ended 1", "began 3", "ended 3", "ended 2"), heard.events);

    schedule.stop(); // idempotent
    assertEquals(6, injector.log.size());
  }

  @Test
  void stoppedBeforeItsTimeAFaultNeverBegins() throws Exception {
    FaultPlan plan = FaultPlanParser.parse("at 1m pause master 1 for 1s", "later.txt");
    Recording injector = new Recording(1);
    FaultSchedule schedule = new FaultSchedule(plan, injector, Duration.ofMinutes(2), new Heard(0));
    schedule.start(System.nanoTime());
    schedule.stop();

    assertEquals(List.of(), injector.log);
    assertEquals(List.of(), schedule.windows());
  }

  @Test
  void aFaultThatCannotBeMadeIsRecordedWithItsErrorAndStillUndone() throws Exception {
    FaultPlan plan = FaultPlanParser.parse("at 10ms partition masters 1 and 2 for 20ms", "p.txt");
    Recording injector = new Recording(4);
    injector.failOn = "apply PARTITION 2";
    Heard heard = new Heard(0);
    FaultSchedule schedule = new FaultSchedule(plan, injector, Duration.ofSeconds(5), heard);
    schedule.start(System.nanoTime());
    assertTrue(injector.calls.await(5, TimeUnit.SECONDS), injector.log.toString());
    schedule.stop();

    FaultWindow window = schedule.windows().get(0);
    assertEquals(
        List.of("master 2: java.io.IOException: refused: apply PARTITION 2"), window.errors());
    assertEquals(
        List.of("apply PARTITION 1", "apply PARTITION 2", "undo PARTITION 1", "undo PARTITION 2"),
        injector.log);
    assertEquals("began 1 with 1 errors", heard.events.get(0) + heard.errorSuffix.get(0));
  }

  @Test
  void anEmptyPlanStartsNoThread() {
    FaultSchedule schedule =
        new FaultSchedule(FaultPlan.NONE, new Recording(0), Duration.ofSeconds(1), new Heard(0));
    schedule.start(System.nanoTime());
    schedule.stop();
    assertEquals(List.of(), schedule.windows());
  }

  /** Records every call; counts down a latch for the first {@code expected}. */
  private static final class Recording implements FaultSchedule.Injector {
    final List<String> log = Collections.synchronizedList(new ArrayList<>());
    final CountDownLatch calls;
    volatile String failOn = "";

    Recording(int expected) {
      calls = new CountDownLatch(expected);
    }

    @Override
    public void apply(Kind kind, int master, Duration latency) throws IOException {
      record(
          "apply "
              + kind
              + " "
              + master
              + (kind == Kind.LATENCY ? " " + latency.toMillis() + "ms" : ""));
    }

    @Override
    public void undo(Kind kind, int master) throws IOException {
      record("undo " + kind + " " + master);
    }

    private void record(String call) throws IOException {
      log.add(call);
      calls.countDown();
      if (call.equals(failOn)) {
        throw new IOException("refused: " + call);
      }
    }
  }

  /** What the schedule told its listener. */
  private static final class Heard implements FaultSchedule.Events {
    final List<String> events = Collections.synchronizedList(new ArrayList<>());
    final List<String> errorSuffix = Collections.synchronizedList(new ArrayList<>());
    final CountDownLatch heard;

    Heard(int expected) {
      heard = new CountDownLatch(expected);
    }

    @Override
    public void began(Fault fault, long began, long applied, List<String> errors) {
      events.add("began " + fault.line());
      errorSuffix.add(" with " + errors.size() + " errors");
      heard.countDown();
    }

    @Override
    public void ended(Fault fault, long healing, long ended, List<String> errors) {
      events.add("ended " + fault.line());
      errorSuffix.add(" with " + errors.size() + " errors");
      heard.countDown();
    }
  }
}
