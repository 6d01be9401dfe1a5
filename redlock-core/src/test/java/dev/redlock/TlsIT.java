package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code rediss://} masters: redis-server with a TLS port and a certificate from a private CA (made
 * with openssl for the test), for the IP address 127.0.0.1 only.
 */
class TlsIT {

  private static final Duration TTL = Duration.ofSeconds(5);
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(500);

  private static Path dir;
  private static final List<RedisProcess> masters = new ArrayList<>();
  private static final List<Integer> tlsPorts = new ArrayList<>();
  private static SSLContext privateCa;

  @BeforeAll
  static void startTlsMasters() throws Exception {
    dir = Files.createTempDirectory("redlock-tls");
    Assumptions.assumeTrue(
        openssl("version"), "skipped: needs openssl on PATH to make test certificates");
    assertTrue(
        openssl(
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=redlock-test-ca"));
    assertTrue(
        openssl(
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1"));
    Files.writeString(dir.resolve("san.ext"), "subjectAltName=IP:127.0.0.1\n");
    assertTrue(
        openssl(
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "san.ext"));
    for (int i = 0; i < 3; i++) {
      int tlsPort = freePort();
      tlsPorts.add(tlsPort);
      masters.add(
          RedisProcess.builder()
              .arguments(
                  "--tls-port", Integer.toString(tlsPort),
                  "--tls-cert-file", dir.resolve("server.pem").toString(),
                  "--tls-key-file", dir.resolve("server.key").toString(),
                  "--tls-ca-cert-file", dir.resolve("ca.pem").toString(),
                  "--tls-auth-clients", "no")
              .start());
    }
    privateCa = trusting(dir.resolve("ca.pem"));
  }

  @AfterAll
  static void stop() throws IOException {
    masters.forEach(RedisProcess::close);
    if (dir != null) {
      try (var files = Files.walk(dir)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static List<String> uris(String host) {
    return tlsPorts.stream().map(port -> "rediss://" + host + ":" + port).toList();
  }

  @Test
  void leasesWorkOverTlsWithAPrivateCa() {
    try (RedLock redlock =
        RedLockIT.admitted(
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
        RedLockIT.eventually("the key on " + m.port(), () -> m.admin().exists("tls:job"));
      }
      lease.close();
      for (RedisProcess master : masters) {
        RedisProcess m = master;
        RedLockIT.eventually("released on " + m.port(), () -> !m.admin().exists("tls:job"));
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

  private static SSLContext trusting(Path caPem) throws Exception {
    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
    trust.load(null, null);
    try (InputStream in = Files.newInputStream(caPem)) {
      trust.setCertificateEntry(
          "ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    TrustManagerFactory trustManagers =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trustManagers.init(trust);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, trustManagers.getTrustManagers(), null);
    return context;
  }

  private static boolean openssl(String... args) throws InterruptedException {
    List<String> command = new ArrayList<>(List.of("openssl"));
    command.addAll(List.of(args));
    try {
      Process process =
          new ProcessBuilder(command)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("openssl.log").toFile())
              .start();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        return false;
      }
      return process.exitValue() == 0;
    } catch (IOException e) {
      return false; // no openssl
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}
