package dev.redlock.junit5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/**
 * What the extension does around an application's test class, whatever its tests do: fixture
 * classes run through the JUnit Platform's test kit, and what they leave behind is looked at.
 */
class LifecycleIT {

  @AfterEach
  void noRedisServerChildRemains() {
    awaitNoRedisChildren();
  }

  @Test
  void failingTestsStillHaveTheirRedLocksClosedAndEveryMasterStopped() {
    Failing.redlocks.clear();
    Failing.pids.clear();
    Failing.dirs.clear();

    Events tests = run(Failing.class).testEvents();

    assertEquals(2, tests.failed().count(), "both fixture tests failed, as they should");
    assertEquals(2, Failing.redlocks.size());
    for (RedLock redlock : Failing.redlocks) {
      assertThrows(
          IllegalStateException.class, () -> redlock.tryAcquire("a", Duration.ofSeconds(1)));
    }
    assertEquals(3, Failing.pids.size());
    for (long pid : Failing.pids) {
      assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "pid " + pid);
    }
    for (Path dir : Failing.dirs) {
      assertFalse(Files.exists(dir), dir + " deleted");
    }
  }

  @Test
  void aMasterThatDoesNotAnswerInTimeFailsTheClassAndLeavesNoProcess() {
    EngineExecutionResults results = run(NeverReady.class);

    Throwable failure =
        results.containerEvents().failed().stream()
            .findFirst()
            .orElseThrow(() -> new AssertionError("the fixture class did not fail"))
            .getRequiredPayload(org.junit.platform.engine.TestExecutionResult.class)
            .getThrowable()
            .orElseThrow();
    assertTrue(failure.getMessage().contains("did not answer within"), "the reason: " + failure);
    assertEquals(0, results.testEvents().started().count(), "no test ran");
  }

  @Test
  void nestedClassesShareTheEnclosingClassesMasters() {
    Outer.pids.clear();

    Events tests = run(Outer.class).testEvents();

    assertEquals(2, tests.succeeded().count(), "" + tests.failed().list());
    assertEquals(2, Outer.pids.size());
    assertEquals(Outer.pids.get(0), Outer.pids.get(1), "the nested test saw the same masters");
  }

  @Test
  void aClassWhoseTestsPassLogsNothingAtWarnOrAboveButTheStoppedMaster() {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.err; // where slf4j-simple writes
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    Events tests;
    try {
      tests = run(Quiet.class).testEvents();
    } finally {
      System.setErr(original);
    }
    assertEquals(2, tests.succeeded().count(), "" + tests.failed().list());
    String log = captured.toString(StandardCharsets.UTF_8);
    assertTrue(log.contains("masters admitted: "), "the capture works: " + log);
    // The one WARN a test's own fault may cause: the library saying the master it stopped is
    // unreachable (logged once per master when it starts). Nothing the extension does warns.
    String others =
        log.lines()
            .filter(line -> !line.contains("unreachable: Connection refused"))
            .collect(java.util.stream.Collectors.joining("\n"));
    assertFalse(others.contains("WARN") || others.contains("ERROR"), log);
  }

  @Test
  void theExtensionIsNoUseOutsideATestClass() {
    RedLockMasters masters = RedLockMasters.of(3);
    IllegalStateException e = assertThrows(IllegalStateException.class, masters::masters);
    assertTrue(e.getMessage().contains("@RegisterExtension on a static field"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> RedLockMasters.of(0));
    assertThrows(IllegalArgumentException.class, () -> RedLockMasters.of(16));
  }

  @Test
  void theClassReportsWhichRedisServerItStartedAndItsVersion() {
    EngineExecutionResults results = run(Quiet.class);

    List<String> reported =
        results.containerEvents().reportingEntryPublished().stream()
            .map(e -> e.getRequiredPayload(org.junit.platform.engine.reporting.ReportEntry.class))
            .flatMap(entry -> entry.getKeyValuePairs().entrySet().stream())
            .filter(pair -> pair.getKey().equals("redlock-junit5"))
            .map(java.util.Map.Entry::getValue)
            .toList();
    assertEquals(1, reported.size(), "one entry for the class: " + reported);
    String entry = reported.get(0);
    assertTrue(entry.startsWith("started 3 masters (127.0.0.1:"), entry);
    assertTrue(entry.contains(" with " + ServerBinary.select().path() + " ("), entry);
    assertTrue(entry.matches("(?s).*, Redis \\d+\\.\\d+\\.\\d+$"), entry);
  }

  @Test
  void onTheEmbeddedRedisBinaryTheClassRunsAndSaysWhichVersion() {
    String before = System.getProperty(ServerBinary.PROPERTY);
    System.setProperty(ServerBinary.PROPERTY, ServerBinary.EMBEDDED);
    EngineExecutionResults results;
    try {
      results = run(Tolerant.class);
    } finally {
      if (before == null) {
        System.clearProperty(ServerBinary.PROPERTY);
      } else {
        System.setProperty(ServerBinary.PROPERTY, before);
      }
    }
    assertEquals(1, results.testEvents().succeeded().count(), "the fixture's test passed");
    String entry =
        results.containerEvents().reportingEntryPublished().stream()
            .map(e -> e.getRequiredPayload(org.junit.platform.engine.reporting.ReportEntry.class))
            .map(e -> e.getKeyValuePairs().get("redlock-junit5"))
            .filter(java.util.Objects::nonNull)
            .findFirst()
            .orElseThrow();
    // embedded-redis 1.4.4 (the build's version): Redis 6.2 (6.2.11 in its Linux x86-64 binary)
    assertTrue(entry.contains("(the binary bundled in embedded-redis"), entry);
    assertTrue(entry.contains(", Redis 6.2."), entry);
  }

  private static EngineExecutionResults run(Class<?> fixture) {
    return EngineTestKit.engine("junit-jupiter").selectors(selectClass(fixture)).execute();
  }

  static void awaitNoRedisChildren() {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    List<String> left = redisChildren();
    while (!left.isEmpty()) {
      if (System.nanoTime() - deadline > 0) {
        fail("redis-server children of this JVM remain: " + left);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // the poll's interval
      left = redisChildren();
    }
  }

  private static List<String> redisChildren() {
    List<String> found = new ArrayList<>();
    ProcessHandle.current()
        .descendants()
        .filter(ProcessHandle::isAlive)
        .forEach(
            p -> {
              String command = p.info().command().orElse("");
              if (command.contains("redis-server")) {
                found.add(p.pid() + " " + command);
              }
            });
    return found;
  }

  /** Fixture: both tests fail; the extension must clean up all the same. */
  static class Failing {
    static final List<RedLock> redlocks = new CopyOnWriteArrayList<>();
    static final List<Long> pids = new CopyOnWriteArrayList<>();
    static final List<Path> dirs = new CopyOnWriteArrayList<>();

    @RegisterExtension static final RedLockMasters masters = RedLockMasters.of(3);

    @Test
    void failsAnAssertion(RedLock redlock) {
      redlocks.add(redlock);
      for (Master master : masters.masters()) {
        pids.add(master.pid());
        dirs.add(master.directory());
      }
      fail("on purpose");
    }

    @Test
    void throwsWithAMasterPaused(RedLock redlock) {
      redlocks.add(redlock);
      masters.master(0).pause();
      throw new IllegalStateException("on purpose");
    }
  }

  /** Fixture: no master can answer within a nanosecond. */
  static class NeverReady {
    @RegisterExtension
    static final RedLockMasters masters = RedLockMasters.of(3).startTimeout(Duration.ofNanos(1));

    @Test
    void neverRuns() {
      fail("the class should have failed before its tests");
    }
  }

  /** Two masters and a lease, with a node timeout a loaded machine cannot miss. */
  static class Tolerant {
    @RegisterExtension
    static final RedLockMasters masters =
        RedLockMasters.of(2).configure(builder -> builder.nodeTimeout(Duration.ofSeconds(2)));

    @Test
    void acquires(RedLock redlock) {
      try (Lease lease = redlock.tryAcquire("a", Duration.ofSeconds(10)).orElseThrow()) {
        assertTrue(lease.isValid());
      }
    }
  }

  /**
   * Fixture: the happy path, on a master stopped by the first test and brought back by the reset
   * before the second. The order is fixed, or the second could run first and prove nothing; and the
   * second asks the stopped master itself, since two of three masters grant without it.
   */
  @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
  static class Quiet {
    @RegisterExtension static final RedLockMasters masters = RedLockMasters.of(3);

    @Test
    @Order(1)
    void acquiresWithAMasterStopped(RedLock redlock) {
      masters.master(0).stop();
      try (Lease lease = redlock.tryAcquire("a", Duration.ofSeconds(5)).orElseThrow()) {
        assertTrue(lease.isValid());
      }
    }

    @Test
    @Order(2)
    void acquiresAgainOnceTheResetBroughtItBack(RedLock redlock) throws Exception {
      Master stopped = masters.master(0);
      assertTrue(stopped.isRunning(), "the reset started master 0 again");
      for (int i = 0; i < 10; i++) {
        try (Lease lease = redlock.tryAcquire("a", Duration.ofSeconds(5)).orElseThrow()) {
          assertTrue(lease.isValid());
          // Master 0 voted: its key is there (the round may have been decided by the other two
          // before its reply, hence the wait). Not running, or running but not admitted by the
          // reset, it never has the key.
          awaitKey(stopped, "a");
        }
      }
    }

    /** Waits up to the lease's validity for {@code key} to exist on {@code master}. */
    private static void awaitKey(Master master, String key) throws Exception {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
      while (!"1".equals(Resp.command(master.port(), Duration.ofSeconds(1), "EXISTS", key))) {
        if (System.nanoTime() - deadline > 0) {
          fail("no key '" + key + "' on " + master + " while the lease is held");
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5)); // the poll's interval
      }
    }
  }

  /** Fixture: a nested class under a class with masters. */
  static class Outer {
    static final List<Long> pids = new CopyOnWriteArrayList<>();

    @RegisterExtension static final RedLockMasters masters = RedLockMasters.of(1);

    @Test
    void outer(RedLock redlock) {
      pids.add(masters.master(0).pid());
      assertTrue(redlock.tryAcquire("a", Duration.ofSeconds(5)).isPresent());
    }

    @Nested
    class Inner {
      @Test
      void inner(RedLock redlock) {
        pids.add(masters.master(0).pid());
        assertTrue(redlock.tryAcquire("a", Duration.ofSeconds(5)).isPresent());
      }
    }
  }
}
