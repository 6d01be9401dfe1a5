package dev.redlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisProcess;
import dev.redlock.testkit.TestCertificates;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import redis.clients.jedis.Jedis;

/**
 * {@code rediss://} masters through the starter, with Boot's SSL bundle for the private CA, on the
 * Jedis version Boot manages (6.0 on Boot 3.5, 7.0 on Boot 4.0), which the TLS transport runs on.
 */
class TlsIT {

  @Test
  void rediss_mastersWorkWithAnSslBundleOnBootsJedis() throws Exception {
    TestCertificates certificates = TestCertificates.create().orElse(null);
    assumeTrue(certificates != null, "skipped: needs openssl on PATH to make test certificates");
    List<RedisProcess> masters = new ArrayList<>();
    try {
      List<String> uris = new ArrayList<>();
      String ca = null;
      for (int i = 0; i < 3; i++) {
        int tlsPort = freePort();
        String[] arguments = certificates.serverArguments(tlsPort);
        ca = arguments[Arrays.asList(arguments).indexOf("--tls-ca-cert-file") + 1];
        masters.add(RedisProcess.builder().arguments(arguments).start());
        uris.add("rediss://127.0.0.1:" + tlsPort);
      }
      try (RedLock operator =
          RedLock.builder().nodes(uris).sslContext(certificates.trustingCa()).build()) {
        assertThat(operator.admitFreshNodes())
            .extracting(NodeOutcome::status)
            .containsOnly(NodeOutcome.Status.GRANTED);
      }
      String caFile = ca;
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(SslAutoConfiguration.class, RedLockAutoConfiguration.class))
          .withPropertyValues(
              "redlock.nodes=" + String.join(",", uris),
              "redlock.node-timeout=500ms",
              "redlock.ssl.bundle=redis-ca",
              "spring.ssl.bundle.pem.redis-ca.truststore.certificate=file:" + caFile)
          .run(
              context -> {
                assertThat(context).hasNotFailed();
                RedLock redlock = context.getBean(RedLock.class);
                try (Lease lease = redlock.tryAcquire("boot:tls", Duration.ofSeconds(5)).get()) {
                  assertThat(lease.fencingToken()).isPositive();
                }
              });
      assertThat(jedisVersion())
          .as("the Jedis Boot manages")
          .startsWith(System.getProperty("redlock.boot.version").startsWith("3.") ? "6." : "7.");
    } finally {
      masters.forEach(RedisProcess::close);
      certificates.close();
    }
  }

  private static String jedisVersion() throws IOException {
    Properties pom = new Properties();
    try (InputStream in =
        Jedis.class.getResourceAsStream("/META-INF/maven/redis.clients/jedis/pom.properties")) {
      pom.load(in);
    }
    return pom.getProperty("version");
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}
