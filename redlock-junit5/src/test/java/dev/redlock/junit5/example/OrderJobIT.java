package dev.redlock.junit5.example;

// README: JUnit5
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.junit5.RedLockMasters;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class OrderJobIT {

  @RegisterExtension static final RedLockMasters masters = RedLockMasters.of(5);

  private static final Duration TTL = Duration.ofSeconds(10);

  @Test
  void aSecondWorkerIsRefusedWhileTheFirstHoldsTheLease(RedLock redlock) {
    try (Lease first = redlock.tryAcquire("orders:42", TTL).orElseThrow()) {
      assertTrue(redlock.tryAcquire("orders:42", TTL).isEmpty());
    }
    assertTrue(redlock.tryAcquire("orders:42", TTL).isPresent());
  }

  @Test
  void twoMastersDownStillLeaveAQuorum(RedLock redlock) {
    masters.master(0).stop();
    masters.master(1).pause(); // SIGSTOP: connects, never answers
    try (Lease lease = redlock.tryAcquire("orders:42", TTL).orElseThrow()) {
      assertTrue(lease.isValid());
    }
  }

  @Test
  void threeMastersDownLeaveNone(RedLock redlock) {
    masters.master(0).stop();
    masters.master(1).stop();
    masters.master(2).pause();
    assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("orders:42", TTL));
  }
}
// end README: JUnit5
