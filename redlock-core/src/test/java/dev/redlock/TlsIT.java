package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.RedisProcess;
import dev.redlock.testkit.TestCertificates;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code rediss://} masters: redis-server with a TLS port and a certificate from a private CA (made
 * with openssl for the test), for the IP address 127.0.0.1 only.
 */
class TlsIT {

  private static final Duration TTL = Duration.ofSeconds(5);
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(500);

  private static TestCertificates certificates;
  private static final List<RedisProcess> masters = new ArrayList<>();
  private static final List<Integer> tlsPorts = new ArrayList<>();
  private static SSLContext privateCa;

  @BeforeAll
  static void startTlsMasters() throws Exception {
    // An openssl that is there but fails throws here, failing the class.
    certificates = TestCertificates.create().orElse(null);
    if (certificates == null) {
      return; // each test is skipped, with the reason, by needsOpenssl
    }
    for (int i = 0; i < 3; i++) {
      int tlsPort = freePort();
      tlsPorts.add(tlsPort);
      masters.add(RedisProcess.builder().arguments(certificates.serverArguments(tlsPort)).start());
    }
    privateCa = certificates.trustingCa();
  }

  /**
   * Skips each test rather than the class: an assumption in {@code @BeforeAll} leaves a report with
   * no test in it, counted neither as run nor as skipped.
   */
  @BeforeEach
  void needsOpenssl() {
    Assumptions.assumeTrue(
        certificates != null, "skipped: needs openssl on PATH to make test certificates");
  }

  @AfterAll
  static void stop() {
    masters.forEach(RedisProcess::close);
    if (certificates != null) {
      certificates.close();
    }
  }

  private static List<String> uris(String host) {
    return tlsPorts.stream().map(port -> "rediss://" + host + ":" + port).toList();
  }

  @Test
  void aReleaseWakesAWaiterOverTls() throws Exception {
    // Pauses of 2 to 6 s: no round of the waiter's timer comes before 2 s have passed since its
    // wait
    // began, so a waiter granted before then was woken by the release.
    Duration slowTimer = Duration.ofSeconds(4);
    try (RedLock holder = tlsRedLock(slowTimer);
        RedLock waiter = tlsRedLock(slowTimer)) {
      Lease held = holder.tryAcquire("tls-wake", TTL).orElseThrow();
      java.util.concurrent.ExecutorService thread =
          java.util.concurrent.Executors.newSingleThreadExecutor();
      try {
        long began = System.nanoTime();
        java.util.concurrent.Future<Lease> waiting =
            thread.submit(() -> waiter.acquire("tls-wake", TTL, Duration.ofSeconds(30)));
        // Heard on the resource's gate and the next master by name (Masters#heardFor): two.
        RedLocks.eventually(
            "the waiter subscribed on two masters over TLS",
            () ->
                masters.stream()
                        .filter(
                            m ->
                                ((Long)
                                        ((List<?>)
                                                m.admin()
                                                    .command(
                                                        "PUBSUB",
                                                        "NUMSUB",
                                                        "redlock:wake:tls-wake"))
                                            .get(1))
                                    == 1)
                        .count()
                    == 2);
        // Queued at the gate: released before the round that queues it (sent at once after its
        // first), the lock would go to that round without any wake-up.
        RedLocks.eventually(
            "the waiter queued at its gate",
            () ->
                masters.stream()
                        .mapToLong(m -> (Long) m.admin().command("ZCARD", "redlock:queue:tls-wake"))
                        .sum()
                    == 1);
        held.close();
        Lease got = waiting.get(30, TimeUnit.SECONDS);
        long took = System.nanoTime() - began;
        got.close();
        assertTrue(
            took < slowTimer.toNanos() / 2,
            "granted "
                + took / 1_000_000
                + " ms after its wait began: not before its timer's least pause");
      } finally {
        thread.shutdownNow();
      }
    }
  }

  private static RedLock tlsRedLock(Duration retryDelay) {
    return RedLocks.admitted(
        RedLock.builder()
            .nodes(uris("127.0.0.1"))
            .sslContext(privateCa)
            .nodeTimeout(NODE_TIMEOUT)
            .retryDelay(retryDelay)
            .build());
  }

  @Test
  void leasesWorkOverTlsWithAPrivateCa() {
    try (RedLock redlock =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(uris("127.0.0.1"))
                .nodeTimeout(NODE_TIMEOUT)
                .sslContext(privateCa)
                .build())) {
      Lease lease = redlock.tryAcquire("tls:job", TTL).orElseThrow();
      assertTrue(lease.fencingToken() > 0);
      assertTrue(lease.extend(Duration.ofSeconds(10)));
      for (RedisProcess master : masters) {
        RedisProcess m = master;
        RedLocks.eventually("the key on " + m.port(), () -> m.admin().exists("tls:job"));
      }
      lease.close();
      for (RedisProcess master : masters) {
        RedisProcess m = master;
        RedLocks.eventually("released on " + m.port(), () -> !m.admin().exists("tls:job"));
      }
    }
  }

  @Test
  void anUntrustedCertificateIsAFailedVoteNotAHang() {
    // The JVM's default trust store does not know the private CA.
    try (RedLock redlock =
        RedLock.builder().nodes(uris("127.0.0.1")).nodeTimeout(NODE_TIMEOUT).build()) {
      long start = System.nanoTime();
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("tls:job", TTL));
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertTrue(tookMillis < NODE_TIMEOUT.toMillis() + 1000, "bounded: " + tookMillis);
      assertHandshakesFailed(e, "PKIX path building failed");
    }
  }

  @Test
  void aCertificateThatDoesNotNameTheHostIsRefused() {
    // The certificate names 127.0.0.1 only; "localhost" reaches the same server.
    try (RedLock redlock =
        RedLock.builder()
            .nodes(uris("localhost"))
            .nodeTimeout(NODE_TIMEOUT)
            .sslContext(privateCa)
            .build()) {
      QuorumUnavailableException e =
          assertThrows(QuorumUnavailableException.class, () -> redlock.tryAcquire("tls:job", TTL));
      assertEquals(3, e.outcomes().size());
      assertHandshakesFailed(e, "No name matching localhost");
    }
  }

  /** The round was decided by two failed handshakes; the third master may not have answered. */
  private static void assertHandshakesFailed(QuorumUnavailableException e, String why) {
    long failed =
        e.outcomes().stream()
            .filter(o -> o.status() == Status.FAILED && o.detail().contains(why))
            .count();
    assertTrue(failed >= 2, e::getMessage);
    assertTrue(
        e.outcomes().stream()
            .allMatch(o -> o.status() == Status.FAILED || o.status() == Status.PENDING),
        e::getMessage);
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}
