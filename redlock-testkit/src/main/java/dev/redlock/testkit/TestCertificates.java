package dev.redlock.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A private certificate authority and a server certificate it signed for the IP address 127.0.0.1
 * only (EC P-256, valid two days), made with {@code openssl} in a temporary directory: what TLS
 * masters need in tests and in the benchmark. {@link #close()} deletes the files.
 */
public final class TestCertificates implements AutoCloseable {

  private final Path dir;
  private final Path openssl;

  private TestCertificates(Path dir, Path openssl) {
    this.dir = dir;
    this.openssl = openssl;
  }

  /**
   * Makes the CA and the server certificate with the {@code openssl} on the PATH.
   *
   * @return the certificates, or empty if there is no {@code openssl} on the PATH
   * @throws IllegalStateException if {@code openssl} is there but fails: the message names the
   *     command and carries what openssl printed (a test must not pass this off as "no openssl")
   */
  public static Optional<TestCertificates> create() {
    return RedisBinary.onPath("openssl").map(TestCertificates::create);
  }

  /**
   * Makes the CA and the server certificate with the given {@code openssl}.
   *
   * @throws IllegalStateException if it cannot be run, exits with an error or takes over 30 s
   */
  static TestCertificates create(Path openssl) {
    Path dir;
    try {
      dir = Files.createTempDirectory("redlock-tls");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    TestCertificates made = new TestCertificates(dir, openssl);
    try {
      made.newKey("ca.key", "ca.pem", "/CN=redlock-test-ca", "-x509", "-days", "2");
      made.newKey("server.key", "server.csr", "/CN=127.0.0.1");
      Files.writeString(dir.resolve("san.ext"), "subjectAltName=IP:127.0.0.1\n");
      made.openssl(
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
          "san.ext");
      return made;
    } catch (IOException e) {
      made.close();
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      made.close();
      throw e;
    }
  }

  /**
   * The server options that add a TLS port with these certificates to a redis-server (clients are
   * not asked for certificates), for {@link RedisProcess.Builder#arguments}.
   *
   * @param tlsPort the TLS port the server listens on, besides its plaintext one
   * @return the options, in pairs of name and value
   */
  public String[] serverArguments(int tlsPort) {
    return new String[] {
      "--tls-port", Integer.toString(tlsPort),
      "--tls-cert-file", dir.resolve("server.pem").toString(),
      "--tls-key-file", dir.resolve("server.key").toString(),
      "--tls-ca-cert-file", dir.resolve("ca.pem").toString(),
      "--tls-auth-clients", "no"
    };
  }

  /**
   * A TLS context that trusts this CA only.
   *
   * @return a new, initialized context
   */
  public SSLContext trustingCa() {
    try (InputStream in = Files.newInputStream(dir.resolve("ca.pem"))) {
      KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
      trust.load(null, null);
      trust.setCertificateEntry(
          "ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
      TrustManagerFactory trustManagers =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      trustManagers.init(trust);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(null, trustManagers.getTrustManagers(), null);
      return context;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot trust the test CA", e);
    }
  }

  /** Deletes the certificate files. Idempotent. */
  @Override
  public void close() {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path file : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(file);
      }
    } catch (IOException e) {
      // a temporary directory: left for the system to clean
    }
  }

  /**
   * {@code openssl req} with a new EC P-256 key, unencrypted, in {@code keyFile}: writes a request
   * for {@code subject} to {@code outFile}, or with {@code -x509} among {@code more} a certificate.
   */
  private void newKey(String keyFile, String outFile, String subject, String... more) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                keyFile,
                "-out",
                outFile,
                "-subj",
                subject));
    args.addAll(List.of(more));
    openssl(args.toArray(String[]::new));
  }

  /** Runs openssl in the directory, its output to {@code openssl.log}; throws unless it exits 0. */
  private void openssl(String... args) {
    List<String> command = new ArrayList<>(List.of(openssl.toString()));
    command.addAll(List.of(args));
    Path log = dir.resolve("openssl.log");
    String failure;
    try {
      Process process =
          new ProcessBuilder(command)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        failure = "did not finish within 30 s";
      } else if (process.exitValue() != 0) {
        failure = "exited with " + process.exitValue();
      } else {
        return;
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + String.join(" ", command), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running " + String.join(" ", command), e);
    }
    String output;
    try {
      output = Files.readString(log).strip();
    } catch (IOException e) {
      output = "(its output is unreadable: " + e + ")";
    }
    throw new IllegalStateException(
        "cannot make the test certificates: "
            + String.join(" ", command)
            + " "
            + failure
            + (output.isEmpty() ? ", printing nothing" : ":\n" + output));
  }
}
