package dev.redlock.testkit;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What a {@link RedisProcess} runs: its start options, copied from the builder so that a builder
 * can be reused while servers start, and the command line they make (the server not daemonized, no
 * snapshots, append-only with {@code fsync always} if asked, under {@code faketime} for a clock
 * rate).
 */
record ServerOptions(
    int port,
    String clockRate,
    boolean appendOnly,
    Path binary,
    Duration startTimeout,
    List<String> extraArguments) {

  /** The command line of {@code server} on {@code host:port}, with its files in {@code dir}. */
  List<String> command(Path server, Path dir, String host, int port) {
    List<String> command = new ArrayList<>();
    if (clockRate != null) {
      Path faketime =
          RedisBinary.faketime().orElseThrow(() -> new IllegalStateException(noFaketime()));
      command.addAll(List.of(faketime.toString(), "-f", clockRate));
    }
    command.add(server.toString());
    command.addAll(
        List.of(
            "--port",
            Integer.toString(port),
            "--bind",
            host,
            "--save",
            "",
            "--daemonize",
            "no",
            "--protected-mode",
            "no",
            "--dir",
            dir.toString()));
    if (appendOnly) {
      command.addAll(List.of("--appendonly", "yes", "--appendfsync", "always"));
    } else {
      command.addAll(List.of("--appendonly", "no"));
    }
    command.addAll(extraArguments);
    return command;
  }

  /** Why a clock rate cannot be had here, and how to get it. */
  static String noFaketime() {
    return "clockRate needs libfaketime's 'faketime' on PATH or at /usr/bin/faketime "
        + "(Debian/Ubuntu: apt-get install faketime)";
  }
}
