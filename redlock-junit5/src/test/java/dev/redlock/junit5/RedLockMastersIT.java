package dev.redlock.junit5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The extension as an application's test class uses it, on real masters. */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedLockMastersIT {

  @RegisterExtension static final RedLockMasters masters = RedLockMasters.of(5);

  private static final Duration TTL = Duration.ofSeconds(10);

  /** The first test's RedLock, for the second to look at. */
  private static RedLock firstTestsRedLock;

  private static List<String> firstTestsUris;

  @Test
  @Order(1)
  void everyMasterIsARunningRedisServerChildOfThisJvm(RedLock redlock) throws IOException {
    firstTestsRedLock = redlock;
    firstTestsUris = masters.uris();
    assertEquals(5, masters.masters().size());
    Set<Long> children =
        ProcessHandle.current().descendants().map(ProcessHandle::pid).collect(Collectors.toSet());
    for (Master master : masters.masters()) {
      assertEquals("PONG", Resp.command(master.port(), Duration.ofSeconds(2), "PING"), "" + master);
      assertTrue(children.contains(master.pid()), master + " is a child of this JVM");
      assertEquals("redis://127.0.0.1:" + master.port(), master.uri());
    }
    assertEquals(5, Set.copyOf(masters.uris()).size(), "five distinct masters");
  }

  @Test
  @Order(2)
  void eachTestHasANewRedLockAndTheLastOneIsClosed(RedLock redlock) {
    assertNotSame(firstTestsRedLock, redlock);
    assertThrows(IllegalStateException.class, () -> firstTestsRedLock.tryAcquire("a", TTL));
    assertEquals(firstTestsUris, masters.uris(), "the same masters for the whole class");
  }

  @Test
  @Order(3)
  void theInjectedRedLockIsAdmittedSoEveryMasterGrantsAtOnce(RedLock redlock) throws IOException {
    try (Lease lease = redlock.tryAcquire("orders:42", TTL).orElseThrow()) {
      assertTrue(lease.isValid());
      for (Master master : masters.masters()) {
        assertGrantedBy(master, "orders:42");
      }
    }
  }

  @Test
  @Order(4)
  void aTestThatLeavesMastersDownPausedAndDirty() throws IOException {
    Resp.command(masters.master(4).port(), Duration.ofSeconds(2), "SET", "leftover", "x");
    masters.master(0).stop();
    masters.master(1).pause();
    masters.master(2).restart();
    assertFalse(masters.master(0).isRunning());
    assertTrue(masters.master(1).isPaused());
  }

  @Test
  @Order(5)
  void findsEveryMasterBackRunningEmptyAndAdmitted(RedLock redlock) throws IOException {
    for (Master master : masters.masters()) {
      assertTrue(master.isRunning(), master + " runs");
      assertFalse(master.isPaused(), master + " is not paused");
    }
    assertEquals("0", exists(masters.master(4), "leftover"));
    try (Lease lease = redlock.tryAcquire("orders:42", TTL).orElseThrow()) {
      for (Master master : masters.masters()) {
        assertGrantedBy(master, "orders:42");
      }
    }
  }

  @Test
  @Order(6)
  void aRestartedMasterVotesOnlyOnceAdmitted(RedLock redlock) {
    String before = masters.master(0).uri();
    masters.master(0).restart();
    masters.master(1).restart();
    masters.master(2).restart();
    assertEquals(before, masters.master(0).uri(), "a master keeps its port");
    // Three young masters: the restart guard keeps them out, as it keeps out production masters
    // that restarted and may have lost keys, so no quorum.
    assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("orders:42", TTL));
    masters.admit();
    try (Lease lease = grantedWithin(redlock, Duration.ofSeconds(5))) {
      assertTrue(lease.isValid());
    }
  }

  @Test
  @Order(7)
  void aPausedMasterAnswersAgainOnceResumed() throws IOException {
    Master master = masters.master(3);
    master.pause();
    assertThrows(
        IOException.class, () -> Resp.command(master.port(), Duration.ofMillis(200), "PING"));
    master.resume();
    assertEquals("PONG", Resp.command(master.port(), Duration.ofSeconds(2), "PING"));
  }

  /**
   * Asserts that {@code master} holds {@code key}, polling for a while: a round returns once three
   * of the five masters granted, and the others' answers (their keys set) may still be on the way.
   * A master that refused the key (not admitted, say) never holds it.
   */
  private static void assertGrantedBy(Master master, String key) throws IOException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!"1".equals(exists(master, key))) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError(master + " did not grant " + key + " within 5 s");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // the poll's interval
    }
  }

  private static String exists(Master master, String key) throws IOException {
    return Resp.command(master.port(), Duration.ofSeconds(2), "EXISTS", key);
  }

  /** Tries until a lease is granted (a reconnection may take a round or two) or time runs out. */
  private static Lease grantedWithin(RedLock redlock, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      try {
        var lease = redlock.tryAcquire("orders:42", TTL);
        if (lease.isPresent()) {
          return lease.get();
        }
      } catch (QuorumUnavailableException e) {
        if (System.nanoTime() - deadline > 0) {
          throw e;
        }
      }
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("no lease within " + timeout);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // the poll's interval
    }
  }
}
