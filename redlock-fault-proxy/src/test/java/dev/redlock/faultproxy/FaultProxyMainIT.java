package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.ToxiproxyClient;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** {@link FaultProxyServer#main}, run as a separate JVM on this test's class path. */
class FaultProxyMainIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(20);
  private static final Pattern LISTENING =
      Pattern.compile("API listening on 127\\.0\\.0\\.1:(\\d+)$");

  @Test
  void servesTheToxiproxyApiUntilTheProcessIsTerminated() throws Exception {
    try (EchoServer echo = EchoServer.start()) {
      ServerProcess server = ServerProcess.start("--port", "0");
      try {
        int apiPort = server.awaitApiPort();
        ToxiproxyClient client = new ToxiproxyClient("127.0.0.1", apiPort);
        Proxy proxy = client.createProxy("echo", "127.0.0.1:0", echo.address());
        try (TcpClient connection = ProxyFixture.connect(proxy)) {
          connection.roundTrip("through a standalone server", TIMEOUT);
        }

        server.process.destroy(); // SIGTERM: the shutdown hook closes the server

        assertTrue(server.process.waitFor(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS), "exited");
        assertThrows(ConnectException.class, () -> ProxyFixture.connect(proxy).close());
        assertThrows(IOException.class, client::version);
      } finally {
        server.process.destroyForcibly();
      }
    }
  }

  @Test
  void helpPrintsTheUsageAndExitsWithZero() throws Exception {
    ServerProcess help = ServerProcess.start("--help");

    assertEquals(0, help.awaitExit());
    assertTrue(help.output().contains("Usage: "), help.output());
    assertTrue(help.output().contains("--port PORT"), help.output());
  }

  @Test
  void aBadArgumentPrintsTheUsageAndExitsWithTwo() throws Exception {
    ServerProcess bad = ServerProcess.start("--port", "http");

    assertEquals(2, bad.awaitExit());
    assertTrue(bad.output().contains("--port must be a number, got http"), bad.output());
    assertTrue(bad.output().contains("Usage: "), bad.output());
  }

  @Test
  void aTakenPortExitsWithOne() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
      ServerProcess server = ServerProcess.start("--port", String.valueOf(taken.getLocalPort()));

      assertEquals(1, server.awaitExit());
      assertTrue(
          server.output().contains("cannot listen on 127.0.0.1:" + taken.getLocalPort()),
          server.output());
    }
  }

  /** A server JVM with standard output and error merged, its lines collected as they arrive. */
  private static final class ServerProcess {
    private final Process process;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> seen = new ArrayList<>();
    private final Thread reader;

    private ServerProcess(Process process) {
      this.process = process;
      this.reader = new Thread(this::readLines, "fault-proxy-main-it-output");
      reader.setDaemon(true);
      reader.start();
    }

    static ServerProcess start(String... args) throws IOException {
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      command.add("-cp");
      command.add(System.getProperty("java.class.path"));
      command.add(FaultProxyServer.class.getName());
      command.addAll(List.of(args));
      return new ServerProcess(new ProcessBuilder(command).redirectErrorStream(true).start());
    }

    /** Waits for the line that announces the API address and returns its port. */
    int awaitApiPort() throws InterruptedException {
      long deadline = System.nanoTime() + TIMEOUT.toNanos();
      while (true) {
        long left = deadline - System.nanoTime();
        String line = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
        if (line == null) {
          throw new AssertionError("no API address within " + TIMEOUT + "; output: " + seen);
        }
        seen.add(line);
        Matcher matcher = LISTENING.matcher(line);
        if (matcher.find()) {
          return Integer.parseInt(matcher.group(1));
        }
      }
    }

    /** Waits for the process to exit and for its output to be read; returns the exit status. */
    int awaitExit() throws InterruptedException {
      if (!process.waitFor(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
        throw new AssertionError("still running after " + TIMEOUT);
      }
      reader.join(TIMEOUT.toMillis());
      return process.exitValue();
    }

    /** Everything the process printed, once {@link #awaitExit()} returned. */
    String output() {
      lines.drainTo(seen);
      return String.join("\n", seen);
    }

    private void readLines() {
      try (BufferedReader in =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = in.readLine()) != null) {
          lines.add(line);
        }
      } catch (IOException e) {
        lines.add("(output unreadable: " + e + ")");
      }
    }
  }
}
