package dev.redlock.faultproxy;

import java.util.List;

/** The arguments of {@link FaultProxyServer#main}: {@code [--port PORT] [--help]}. */
final class CommandLine {
  /** Toxiproxy's API port, which its clients and {@code toxiproxy-cli} assume by default. */
  static final int DEFAULT_PORT = 8474;

  static final String USAGE =
      String.join(
          System.lineSeparator(),
          "Usage: java -cp <class path> dev.redlock.faultproxy.FaultProxyServer [--port PORT]",
          "",
          "Serves the Toxiproxy HTTP API on 127.0.0.1 until the process is stopped (Ctrl-C, SIGTERM).",
          "Every proxy created through it also listens on 127.0.0.1.",
          "",
          "  --port PORT  the API port, 0 for an ephemeral one (default " + DEFAULT_PORT + ")",
          "  --help       print this and exit");

  private CommandLine() {}

  /** What the command line asks for. */
  record Options(int port, boolean help) {}

  /**
   * Parses the arguments.
   *
   * @throws IllegalArgumentException naming the argument that is unknown, missing or out of range
   */
  static Options parse(List<String> args) {
    int port = DEFAULT_PORT;
    for (int i = 0; i < args.size(); i++) {
      String arg = args.get(i);
      switch (arg) {
        case "--help", "-h" -> {
          return new Options(port, true);
        }
        case "--port" -> {
          if (i + 1 == args.size()) {
            throw new IllegalArgumentException("--port needs a value");
          }
          port = port(args.get(++i));
        }
        default -> throw new IllegalArgumentException("unknown argument: " + arg);
      }
    }
    return new Options(port, false);
  }

  private static int port(String value) {
    int port;
    try {
      port = Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--port must be a number, got " + value, e);
    }
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("--port must be in 0..65535, got " + value);
    }
    return port;
  }
}
