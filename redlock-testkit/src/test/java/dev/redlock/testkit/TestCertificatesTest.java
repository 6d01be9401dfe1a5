package dev.redlock.testkit;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/**
 * An openssl that is there but fails must fail the test that wanted certificates, with openssl's
 * own words: TlsIT skips only when there is no openssl at all, and CI fails on that skip.
 */
@DisabledOnOs(OS.WINDOWS) // the stand-in is a shell script
class TestCertificatesTest {

  /** An openssl as it fails on a broken configuration file, on stderr. */
  private static final String BROKEN_OPENSSL =
      """
      #!/bin/sh
      echo "Error loading config file /etc/ssl/openssl.cnf: no such section" >&2
      exit 1
      """;

  @Test
  void anOpensslThatFailsFailsWithWhatItPrinted(@TempDir Path dir) throws IOException {
    Path openssl = dir.resolve("openssl");
    Files.writeString(openssl, BROKEN_OPENSSL);
    Files.setPosixFilePermissions(openssl, PosixFilePermissions.fromString("rwx------"));

    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> TestCertificates.create(openssl));

    assertTrue(e.getMessage().contains(openssl + " req -newkey ec"), e.getMessage());
    assertTrue(e.getMessage().contains("exited with 1"), e.getMessage());
    assertTrue(
        e.getMessage().contains("Error loading config file /etc/ssl/openssl.cnf"), e.getMessage());
  }

  @Test
  void anOpensslThatCannotRunFailsNamingIt(@TempDir Path dir) {
    Path openssl = dir.resolve("openssl"); // never written

    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> TestCertificates.create(openssl));

    assertTrue(e.getMessage().startsWith("cannot run " + openssl + " req"), e.getMessage());
  }
}
