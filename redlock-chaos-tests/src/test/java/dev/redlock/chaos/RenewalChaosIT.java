package dev.redlock.chaos;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.RedLockListener;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Automatic renewal at scale under faults: a thousand leases held at once by {@code withLock}, each
 * renewed by quorum every two seconds, while one master is hung (accepts, never answers) and
 * another flaps. Renewals must not queue behind one another, and a failed round must cost a retry,
 * not the lease: no lease may be lost.
 */
class RenewalChaosIT {

  @RegisterExtension static final ChaosClusterExtension chaos = ChaosClusterExtension.withNodes(5);

  private static final int LEASES = 1000;
  private static final Duration TTL = Duration.ofSeconds(3);
  private static final Duration HOLD = Duration.ofSeconds(30);
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(100);
  private static final int HUNG = 0;
  private static final int FLAPPING = 1;
  private static final Duration FLAP = Duration.ofMillis(700);

  @Test
  void aThousandRenewedLeasesSurviveAHungMasterAndAFlappingOne(ChaosCluster cluster)
      throws Exception {
    LongAdder renewals = new LongAdder();
    LongAdder renewalsWithoutEveryMaster = new LongAdder();
    AtomicInteger lostEvents = new AtomicInteger();
    RedLockListener listener =
        new RedLockListener() {
          @Override
          public void extended(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
            renewals.increment();
            if (outcomes.stream().anyMatch(o -> o.status() != NodeOutcome.Status.GRANTED)) {
              renewalsWithoutEveryMaster.increment();
            }
          }

          @Override
          public void lost(String resource, List<NodeOutcome> outcomes, Duration elapsed) {
            lostEvents.incrementAndGet();
          }
        };
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicInteger held = new AtomicInteger();
    AtomicInteger stillValidAtTheEnd = new AtomicInteger();
    AtomicInteger lostSignals = new AtomicInteger();
    CountDownLatch allHeld = new CountDownLatch(LEASES);
    CountDownLatch release = new CountDownLatch(1);
    int flaps;
    try (RedLock redlock =
        NetworkChaos.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(NODE_TIMEOUT)
                .maxLeaseTime(TTL)
                .listener(listener)
                .build())) {
      cluster.proxy(HUNG).toxics().timeout("hung", ToxicDirection.UPSTREAM, 0);
      List<Thread> holders = new ArrayList<>();
      for (int i = 0; i < LEASES; i++) {
        String resource = NetworkChaos.resource("renewed");
        Thread holder =
            new Thread(
                () -> {
                  try {
                    redlock.withLock(
                        resource,
                        TTL,
                        Duration.ofSeconds(20),
                        lease -> {
                          lease.onLost().thenRun(lostSignals::incrementAndGet);
                          held.incrementAndGet();
                          allHeld.countDown();
                          awaitQuietly(release);
                          if (lease.isValid()) {
                            stillValidAtTheEnd.incrementAndGet();
                          }
                        });
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  } catch (RuntimeException e) {
                    failure.compareAndSet(null, e);
                    allHeld.countDown();
                  }
                },
                "holder-" + i);
        holder.setDaemon(true);
        holders.add(holder);
        holder.start();
      }
      assertTrue(allHeld.await(60, TimeUnit.SECONDS), "every lease acquired: " + held.get());
      long start = System.nanoTime();
      flaps = flap(cluster, start + HOLD.toNanos());
      long heldFor = System.nanoTime() - start;
      release.countDown();
      for (Thread holder : holders) {
        holder.join(TimeUnit.SECONDS.toMillis(30));
      }
      cluster.heal();
      System.out.printf(
          "RENEWAL %d leases (TTL %d s) held %d s with master %d hung and master %d flapping"
              + " (%d down phases): %d renewals, %d without every master, %d lost%n",
          held.get(),
          TTL.toSeconds(),
          TimeUnit.NANOSECONDS.toSeconds(heldFor),
          HUNG,
          FLAPPING,
          flaps,
          renewals.sum(),
          renewalsWithoutEveryMaster.sum(),
          lostEvents.get());
    }
    if (failure.get() != null) {
      throw new AssertionError("a holder failed", failure.get());
    }
    int everyLeaseRenewed = LEASES * (int) (HOLD.toMillis() / (TTL.toMillis() * 2 / 3) - 1);
    assertAll(
        () -> assertEquals(LEASES, held.get(), "leases held"),
        () -> assertEquals(0, lostEvents.get(), "leases lost (listener)"),
        () -> assertEquals(0, lostSignals.get(), "leases lost (onLost)"),
        () -> assertEquals(LEASES, stillValidAtTheEnd.get(), "leases valid after 30 s"),
        () -> assertTrue(flaps >= 10, "the master flapped: " + flaps),
        () ->
            assertTrue(
                renewals.sum() >= everyLeaseRenewed,
                "every lease renewed every 2 s: " + renewals.sum() + " < " + everyLeaseRenewed));
  }

  /** Takes the flapping master down and up until {@code stopAt}; returns the down phases. */
  private static int flap(ChaosCluster cluster, long stopAt) throws IOException {
    int downs = 0;
    while (System.nanoTime() - stopAt < 0) {
      cluster.proxy(FLAPPING).disable();
      downs++;
      LockSupport.parkNanos(FLAP.toNanos()); // the fault schedule
      cluster.proxy(FLAPPING).enable();
      LockSupport.parkNanos(FLAP.toNanos());
    }
    return downs;
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
