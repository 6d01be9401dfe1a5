package dev.redlock.benchmark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.benchmark.NodeRedlock.Tools;
import dev.redlock.benchmark.NodeRedlock.Unavailable;
import dev.redlock.benchmark.ThroughputRun.Throughput;
import dev.redlock.drill.Samples;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node-redlock row's Java side, without node: stand-in {@code node} and {@code npm} scripts
 * that answer as the real ones would (or fail as they do offline).
 */
@DisabledOnOs(OS.WINDOWS) // the stand-ins are shell scripts
class NodeRedlockTest {

  private static final List<String> URIS = List.of("redis://127.0.0.1:1", "redis://127.0.0.1:2");

  /** A node that says it is ready, then answers each command with fixed figures. */
  private static final String NODE =
      """
      #!/bin/sh
      if [ "$1" = "--version" ]; then echo v20.0.0; exit 0; fi
      echo "node $*" >&2
      echo "ready node=20.0.0 redlock=v5.0.0-beta.2 ioredis=5.9.3"
      while read command count rest; do
        case "$command" in
          cycles) echo "cycles 1 1000 2000 3000" ;;
          loops) echo "loops 3 2 1500000000 10 20 30" ;;
          quit) exit 0 ;;
        esac
      done
      """;

  /** An npm that installs nothing and succeeds, counting its installs. */
  private static final String NPM =
      """
      #!/bin/sh
      if [ "$1" = "--version" ]; then echo 11.0.0; exit 0; fi
      echo "$*" >> installs.txt
      mkdir -p node_modules
      """;

  /** An npm as it fails without a registry. */
  private static final String OFFLINE_NPM =
      """
      #!/bin/sh
      if [ "$1" = "--version" ]; then echo 11.0.0; exit 0; fi
      echo "npm error code ENOTFOUND"
      echo "npm error network request to the registry failed"
      exit 1
      """;

  @Test
  void withoutNodeTheRowIsSkippedWithTheReason(@TempDir Path dir) {
    Tools missing = new Tools(dir.resolve("no-such-node").toString(), "npm");

    Unavailable e =
        assertThrows(
            Unavailable.class,
            () ->
                NodeRedlock.start(
                    dir.resolve("work"), URIS, Duration.ofSeconds(10), missing, l -> {}));

    assertTrue(e.getMessage().startsWith(missing.node() + " not found"), e.getMessage());
  }

  @Test
  void aFailedNpmCiIsTheReasonWithNpmsLastLine(@TempDir Path dir) throws Exception {
    Tools offline = new Tools(script(dir, "node", NODE), script(dir, "npm", OFFLINE_NPM));

    Unavailable e =
        assertThrows(
            Unavailable.class,
            () ->
                NodeRedlock.start(
                    dir.resolve("work"), URIS, Duration.ofSeconds(10), offline, l -> {}));

    assertTrue(
        e.getMessage()
            .startsWith("npm ci failed (exit 1): npm error network request to the registry failed"),
        e.getMessage());
  }

  @Test
  void theScriptsAnswersBecomeSamplesFailuresAndThroughput(@TempDir Path dir) throws Exception {
    Tools tools = new Tools(script(dir, "node", NODE), script(dir, "npm", NPM));
    Path work = dir.resolve("work");
    List<String> progress = new ArrayList<>();

    try (NodeRedlock node =
        NodeRedlock.start(work, URIS, Duration.ofSeconds(10), tools, progress::add)) {
      assertEquals("node=20.0.0 redlock=v5.0.0-beta.2 ioredis=5.9.3", node.versions());
      AtomicLong failures = new AtomicLong();
      Samples samples = node.cycles(4, "bench:nr:0:", failures::addAndGet);
      assertArrayEquals(new long[] {1000, 2000, 3000}, samples.sorted());
      assertEquals(1, failures.get());

      Throughput t = node.loops(8, Duration.ofMillis(500), "bench:tp:node:1:");
      assertEquals(8, t.threads());
      assertEquals(3, t.ops());
      assertEquals(2, t.failed());
      assertEquals(2.0, t.opsPerSecond(), 1e-9);
      assertArrayEquals(new long[] {10, 20, 30}, t.latency().sorted());
    }
    for (String file : NodeRedlock.FILES) {
      assertTrue(Files.size(work.resolve(file)) > 0, file);
    }
    assertTrue(progress.get(0).startsWith("node-redlock: npm ci in " + work), progress.toString());
    assertTrue(
        Files.readString(work.resolve(NodeRedlock.LOG))
            .contains("node bench.mjs 10000 " + String.join(" ", URIS)));
  }

  @Test
  void theSameLockFileIsInstalledOnce(@TempDir Path dir) throws Exception {
    Tools tools = new Tools(script(dir, "node", NODE), script(dir, "npm", NPM));
    Path work = dir.resolve("work");
    List<String> progress = new ArrayList<>();

    NodeRedlock.start(work, URIS, Duration.ofSeconds(10), tools, progress::add).close();
    NodeRedlock.start(work, URIS, Duration.ofSeconds(10), tools, progress::add).close();

    assertEquals(1, Files.readAllLines(work.resolve("installs.txt")).size());
    assertTrue(progress.get(1).contains("installed in " + work + " already"), progress.toString());
  }

  @Test
  void theCommittedPackageLocksTheVersionsTheReportNames() throws IOException {
    String lock;
    try (var in =
        NodeRedlock.class
            .getClassLoader()
            .getResourceAsStream(NodeRedlock.RESOURCES + "package-lock.json")) {
      lock = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
    assertTrue(lock.contains("\"node_modules/redlock\": {\n      \"version\": \"5."), lock);
    assertTrue(lock.contains("\"node_modules/ioredis\": {\n      \"version\": \"5."), lock);
  }

  private static String script(Path dir, String name, String text) throws IOException {
    Path file = dir.resolve("bin").resolve(name);
    Files.createDirectories(file.getParent());
    Files.writeString(file, text);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    return file.toString();
  }
}
