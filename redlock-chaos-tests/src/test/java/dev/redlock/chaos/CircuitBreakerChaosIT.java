package dev.redlock.chaos;

import static dev.redlock.chaos.NetworkChaos.resource;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Per-master circuit breakers while one master flaps for half a minute under contention: its
 * breaker opens while it is down (by refused connections, then by a black hole), is probed, closes
 * when it is back, and mutual exclusion holds throughout.
 */
class CircuitBreakerChaosIT {

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  private static final Duration TTL = Duration.ofSeconds(1);
  private static final Duration BREAKER_WAIT = Duration.ofMillis(500);

  /** 10 down phases (half refused connections, half a black hole), and as many up. */
  private static final Duration RUN = Duration.ofSeconds(30);

  private static final Duration DOWN = Duration.ofMillis(1500);
  private static final Duration UP = Duration.ofMillis(1500);
  private static final int CLIENTS = 6;
  private static final int FLAPPING = 4;

  @Test
  void aFlappingMastersBreakerOpensAndClosesWhileLeasesStayExclusive(ChaosCluster cluster)
      throws Exception {
    String flappingNode = cluster.uris().get(FLAPPING).substring("redis://".length());
    Map<String, AtomicInteger> transitions = new ConcurrentHashMap<>();
    List<AtomicReference<RedLockListener.CircuitState>> lastStates = new ArrayList<>();
    List<RedLock> clients = new ArrayList<>();
    for (int c = 0; c < CLIENTS; c++) {
      AtomicReference<RedLockListener.CircuitState> last =
          new AtomicReference<>(RedLockListener.CircuitState.CLOSED);
      lastStates.add(last);
      RedLockListener listener =
          new RedLockListener() {
            @Override
            public void circuitChanged(String node, CircuitState state) {
              String who = node.equals(flappingNode) ? "flapping" : "healthy";
              transitions
                  .computeIfAbsent(who + " " + state, k -> new AtomicInteger())
                  .incrementAndGet();
              if (node.equals(flappingNode)) {
                last.set(state);
              }
            }
          };
      clients.add(
          NetworkChaos.admitted(
              RedLock.builder()
                  .nodes(cluster.uris())
                  .nodeTimeout(NODE_TIMEOUT)
                  .circuitBreakerWait(BREAKER_WAIT)
                  .retryDelay(Duration.ofMillis(10))
                  .listener(listener)
                  .build()));
    }
    String resource = resource("breaker");
    AtomicInteger downPhases = new AtomicInteger();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    long stopAt = System.nanoTime() + RUN.toNanos();

    Thread flapper =
        daemon(
            () -> {
              try {
                boolean blackHole = false;
                while (System.nanoTime() - stopAt < 0) {
                  // Down: refused connections, or (every other time) a black hole that accepts
                  // and never answers, which only the breaker turns into a fast failure.
                  if (blackHole) {
                    cluster.proxy(FLAPPING).toxics().timeout("hole", ToxicDirection.UPSTREAM, 0);
                  } else {
                    cluster.proxy(FLAPPING).disable();
                  }
                  downPhases.incrementAndGet();
                  LockSupport.parkNanos(DOWN.toNanos()); // the fault schedule
                  if (blackHole) {
                    cluster.proxy(FLAPPING).toxics().get("hole").remove();
                  } else {
                    cluster.proxy(FLAPPING).enable();
                  }
                  blackHole = !blackHole;
                  LockSupport.parkNanos(UP.toNanos());
                }
              } catch (IOException | RuntimeException e) {
                failure.compareAndSet(null, e);
              }
            },
            "breaker-flapper");
    Contention contention;
    try {
      flapper.start();
      contention = Contention.start(clients, resource, TTL, stopAt);
      contention.join(RUN.plusSeconds(30));
      flapper.join(RUN.plusSeconds(30).toMillis());
      cluster.heal();
      // After the heal the flapping master is probed and readmitted by every client.
      NetworkChaos.awaitTrue(
          Duration.ofSeconds(10),
          () -> {
            for (RedLock redlock : clients) {
              try {
                redlock.tryAcquire(resource("after-heal"), TTL).ifPresent(Lease::close);
              } catch (RuntimeException e) {
                // still probing
              }
            }
            return lastStates.stream()
                .allMatch(last -> last.get() == RedLockListener.CircuitState.CLOSED);
          },
          () -> "the flapping master's breakers did not all close again: " + lastStates);
    } finally {
      clients.forEach(RedLock::close);
    }
    if (failure.get() != null) {
      throw new AssertionError("a client or the flapper failed", failure.get());
    }

    MutualExclusionChecker.Report report =
        ProcessChaos.checkHolds(
            "circuit breakers: master "
                + FLAPPING
                + " of 5 down 1.5 s / up 1.5 s for "
                + RUN.toSeconds()
                + " s, "
                + CLIENTS
                + " clients",
            contention.leases(),
            Map.of("flap", (long) downPhases.get()),
            List.of(
                "breaker transitions " + new java.util.TreeMap<>(transitions),
                contention.summary()));
    report.print(System.out);

    assertAll(
        () -> assertEquals(0, report.violations(), "overlapping leases"),
        () -> assertEquals(contention.increments(), contention.counter(), "lost updates"),
        () -> assertTrue(downPhases.get() >= 8, "the master flapped: " + downPhases.get()),
        () ->
            assertTrue(
                count(transitions, "flapping OPEN") >= downPhases.get() * CLIENTS / 2,
                "the clients' breakers opened in most down phases: " + transitions),
        () ->
            assertTrue(
                count(transitions, "flapping HALF_OPEN") >= count(transitions, "flapping OPEN") / 2,
                "open breakers were probed: " + transitions),
        () ->
            assertTrue(
                count(transitions, "flapping CLOSED") >= downPhases.get() * CLIENTS / 2,
                "breakers closed when the master came back: " + transitions),
        () ->
            assertTrue(
                count(transitions, "healthy OPEN") * 20 <= count(transitions, "flapping OPEN"),
                "healthy masters' breakers opened often (a starved machine can miss a timeout"
                    + " now and then, but not often): "
                    + transitions),
        () ->
            assertTrue(
                contention.leases().size() > 500,
                "the lock kept being granted: " + contention.summary()));
  }

  private static int count(Map<String, AtomicInteger> transitions, String key) {
    AtomicInteger n = transitions.get(key);
    return n == null ? 0 : n.get();
  }

  private static Thread daemon(Runnable body, String name) {
    Thread thread = new Thread(body, name);
    thread.setDaemon(true);
    return thread;
  }
}
